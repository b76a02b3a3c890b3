"""A compiled C++ test bench for a Verilog top with val/rdy stream ports, run from Python through
ctypes many cycles per call (the Verilated model never waits for Python inside a run).

:class:`StreamSim` generates the bench from a description of the top's ports (no hand-written
per-design C++), builds it with the Verilated model into a shared library (optimized, cached by
the *content* of the Verilog, the generated C++, the flags and the Verilator version) and loads
it.  Per cycle, in one C++ loop:

1. every input stream (DUT receives) has ``val`` high and ``msg`` = the head of its queue when its
   queue is not empty; every output stream (DUT sends) has ``rdy`` high;
2. the model evaluates; a transfer happens on a stream whose ``val`` and ``rdy`` are both high:
   an input stream drops its head, an output stream records the message and the cycle number;
   every event whose strobe is high records the cycle and its value signals;
3. the clock rises (``clk`` 0 -> 1 -> 0); the cycle number (0 = the first cycle after reset) grows.

This is the behaviour of the PyMTL3 host components (:class:`pymtl_fp.cluster.hw.host.HostCL`,
:class:`pymtl_fp.cluster.hw.host_side.HostSideCL`): a transfer in cycle ``c`` is seen by them at the
edge ending ``c``, and what they send in answer is offered from ``c + 1`` -- here Python pushes
it between two runs.  :meth:`StreamSim.run` stops before a cycle in which every ``done`` signal
is high (as :func:`pymtl_fp.sim.run_until` checks ``done()`` before each tick), after the edge of
the cycle in which an output stream reached a message count, after ``max_cycles``, or when no
stream moved and no ``progress`` signal changed for ``idle_limit`` cycles.

Signals are named as in the Verilog (``img__val``, ``host_in__msg`` with an index for unpacked
array ports); the bench mangles them as Verilator does (``__`` -> ``___05F``).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pymtl_fp import verilator_runtime
from pymtl_fp.build_dirs import build_lock, build_once, digest, shared_build_dir
from pymtl_fp.toolchain import make_env, setup_verilator

OPT = "-O2"  # -O3 builds ~2x longer on the cluster for a few percent (measured); -O2 is the default
#: make variables of a build: the model's per-cycle code at -O2 (``OPT_FAST``), its
#: construction/initial/settle code (``__Slow``) at -O0, Verilator's runtime at -O2, each file
#: compiled on its own (``make -j``).  An ``-O`` in ``-CFLAGS`` would override them all
#: (verilated.mk puts the user's flags last), so optimization levels go through these only.
MAKE_VARS = {"OPT_FAST": "-O2", "OPT_SLOW": "-O0", "OPT_GLOBAL": "-O2"}
#: the test suite's builds (``tests/conftest.py`` sets them): everything in one file at -O1, about
#: a third of the CPU time of :data:`MAKE_VARS`; the tests' runs of a few thousand cycles take no
#: longer.  Speed figures (``pymtl-fp bench``) are at :data:`MAKE_VARS`.
QUICK_MAKE_VARS = {"OPT_FAST": "-O1", "OPT_SLOW": "-O0", "OPT_GLOBAL": "-O2", "VM_PARALLEL_BUILDS": "0"}


def make_vars() -> str:
    """:data:`MAKE_VARS` as make's command-line assignments."""
    return " ".join(f"{k}={v}" for k, v in MAKE_VARS.items())


WHY = {0: "max_cycles", 1: "count", 2: "done", 3: "idle"}


class CxxSimError(RuntimeError):
    pass


@dataclass(frozen=True)
class Sig:
    """One port of the top: Verilog name, width, index into an unpacked array port (or None)."""

    name: str
    width: int
    index: int | None = None

    @property
    def words(self) -> int:
        return (self.width + 31) // 32

    def cxx(self) -> str:
        ref = "m->" + self.name.replace("__", "___05F")
        return ref if self.index is None else f"{ref}[{self.index}]"

    def ctype(self) -> str:
        w = self.width
        return "CData" if w <= 8 else "SData" if w <= 16 else "IData" if w <= 32 else "QData" if w <= 64 else "W"


@dataclass
class Ports:
    """What the bench drives and watches.  Streams: ``(prefix, width, index)`` with ports
    ``<prefix>__val``/``__rdy``/``__msg`` (any width: a message is kept as 32-bit words)."""

    in_streams: list = field(default_factory=list)
    out_streams: list = field(default_factory=list)
    inputs: list = field(default_factory=list)     #: Sig: inputs set from Python
    outputs: list = field(default_factory=list)    #: Sig: outputs read from Python
    events: list = field(default_factory=list)     #: (strobe Sig, [value Sig])
    done: list = field(default_factory=list)       #: Sig (1 bit): stop when all are high
    progress: list = field(default_factory=list)   #: Sig (<= 64 bits): idle when none changes


def _rd(sig: Sig, dst: str) -> str:
    """C++ copying a signal into uint32 words at ``dst``."""
    if sig.width <= 32:
        return f"{dst}[0] = (uint32_t)({sig.cxx()});"
    if sig.width <= 64:
        return f"{{ uint64_t v = {sig.cxx()}; {dst}[0] = (uint32_t)v; {dst}[1] = (uint32_t)(v >> 32); }}"
    return f"for (int i = 0; i < {sig.words}; ++i) {dst}[i] = {sig.cxx()}[i];"


def _wr(sig: Sig, src: str) -> str:
    if sig.width <= 32:
        return f"{sig.cxx()} = {src}[0];"
    if sig.width <= 64:
        return f"{sig.cxx()} = (uint64_t){src}[0] | ((uint64_t){src}[1] << 32);"
    return f"for (int i = 0; i < {sig.words}; ++i) {sig.cxx()}[i] = {src}[i];"


def _scalar(sig: Sig) -> str:
    return f"(uint64_t)({sig.cxx()})"


def message_words(ports: Ports) -> int:
    """32-bit words of one stream message in the bench (the widest stream's, at least 2)."""
    return max([2] + [-(-w // 32) for _, w, _ in ports.in_streams + ports.out_streams])


def _cycle_statements(ports: Ports) -> tuple:
    """The C++ statements of one cycle of ``sim_run``: ``drive`` (each input stream's ``val``/``msg``
    from its queue, each output stream ready), ``sample`` (input handshakes pop their queue, output
    messages and event records are kept with their cycle), and the 32-bit words of each event record."""
    ins, outs = ports.in_streams, ports.out_streams

    def s(prefix, idx, part):
        return Sig(f"{prefix}__{part}", 1, idx).cxx()

    drive = []
    for i, (p, w, idx) in enumerate(ins):
        msg = Sig(f"{p}__msg", w, idx)
        drive.append(f"{s(p, idx, 'val')} = !q_in[{i}].empty(); "
                     f"if (!q_in[{i}].empty()) {{ const uint32_t* w = q_in[{i}].front().w; {_wr(msg, 'w')} }}")
    for p, _, idx in outs:
        drive.append(f"{s(p, idx, 'rdy')} = 1;")
    sample = []
    for i, (p, _, idx) in enumerate(ins):
        sample.append(f"if ({s(p, idx, 'val')} && {s(p, idx, 'rdy')}) {{ q_in[{i}].pop_front(); moved = true; }}")
    for i, (p, w, idx) in enumerate(outs):
        msg = Sig(f"{p}__msg", w, idx)
        sample.append(f"if ({s(p, idx, 'val')}) {{ Msg x = {{}}; {_rd(msg, 'x.w')} out_msg[{i}].push_back(x); "
                      f"out_cyc[{i}].push_back(cycle); moved = true; }}")
    ev_words = [2 + sum(v.words for v in vals) for _, vals in ports.events]
    for e, (strobe, vals) in enumerate(ports.events):
        body = [f"uint32_t* r = grow(ev[{e}], {ev_words[e]}); r[0] = (uint32_t)cycle; r[1] = (uint32_t)(cycle >> 32);"]
        off = 2
        for v in vals:
            body.append(_rd(v, f"(r + {off})"))
            off += v.words
        sample.append(f"if ({strobe.cxx()}) {{ {' '.join(body)} }}")
    return drive, sample, ev_words


def generate(top: str, ports: Ports, trace: bool) -> str:
    """The C++ source of the bench."""
    ins, outs = ports.in_streams, ports.out_streams
    mw = message_words(ports)
    drive, sample, ev_words = _cycle_statements(ports)
    done = " && ".join(f"{d.cxx()}" for d in ports.done) or "false"
    prog = [f"h = h * 1000003u ^ {_scalar(p)};" for p in ports.progress]
    set_cases = "\n".join(f"    case {i}: {_wr(sg, 'w')} break;" for i, sg in enumerate(ports.inputs))
    get_cases = "\n".join(f"    case {i}: {_rd(sg, 'w')} break;" for i, sg in enumerate(ports.outputs))
    nin, nout, nev = max(1, len(ins)), max(1, len(outs)), max(1, len(ports.events))
    tr_inc = '#include "verilated_vcd_c.h"' if trace else ""
    tr_new = ('Verilated::traceEverOn(true); tfp = new VerilatedVcdC; m->trace(tfp, 99); tfp->open(vcd);'
              if trace else "")
    tr_dump = "if (tfp) tfp->dump(t++);" if trace else ""
    tr_close = "if (tfp) { tfp->close(); delete tfp; }" if trace else ""
    return f"""// generated by pymtl_fp.cxxsim for {top}: a stream test bench run from Python (ctypes)
#include "V{top}.h"
#include "verilated.h"
{tr_inc}
#include <cstdint>
#include <deque>
#include <vector>

struct Msg {{ uint32_t w[{mw}]; }};  // one stream message, least significant word first

struct Sim {{
  VerilatedContext* ctx;
  V{top}* m;
  {"VerilatedVcdC* tfp = nullptr;" if trace else ""}
  uint64_t t = 0;
  int64_t cycle = 0;
  std::deque<Msg> q_in[{nin}];
  std::vector<Msg> out_msg[{nout}];
  std::vector<int64_t> out_cyc[{nout}];
  std::vector<uint32_t> ev[{nev}];
}};

static inline uint32_t* grow(std::vector<uint32_t>& v, size_t n) {{
  size_t k = v.size(); v.resize(k + n); return v.data() + k;
}}

static inline void half(Sim* S, int clk) {{
  V{top}* m = S->m;
  m->clk = clk;
  m->eval();
  {tr_dump.replace("tfp", "S->tfp").replace("t++", "S->t++")}
}}

extern "C" {{
void* sim_new(const char* vcd) {{
  Sim* S = new Sim;
  S->ctx = new VerilatedContext;
  S->m = new V{top}{{S->ctx}};
  V{top}* m = S->m;
  {tr_new.replace("tfp", "S->tfp")}
  m->clk = 0;
  m->eval();
  return S;
}}
void sim_free(void* p) {{
  Sim* S = (Sim*)p;
  {tr_close.replace("tfp", "S->tfp")}
  S->m->final();
  delete S->m;
  delete S->ctx;
  delete S;
}}
void sim_set(void* p, int i, const uint32_t* w) {{
  V{top}* m = ((Sim*)p)->m;
  switch (i) {{
{set_cases}
  }}
}}
void sim_get(void* p, int i, uint32_t* w) {{
  V{top}* m = ((Sim*)p)->m;
  m->eval();
  switch (i) {{
{get_cases}
  }}
}}
void sim_tick(void* p, int n) {{  // raw cycles (reset, program loading): no stream handling
  Sim* S = (Sim*)p;
  for (int k = 0; k < n; ++k) {{ half(S, 0); half(S, 1); }}
  half(S, 0);
}}
void sim_push(void* p, int i, const uint32_t* v, int64_t n) {{  // n messages of {mw} words
  Sim* S = (Sim*)p;
  for (int64_t k = 0; k < n; ++k) {{
    Msg x;
    for (int j = 0; j < {mw}; ++j) x.w[j] = v[k * {mw} + j];
    S->q_in[i].push_back(x);
  }}
}}
int64_t sim_in_left(void* p, int i) {{ return (int64_t)((Sim*)p)->q_in[i].size(); }}
int64_t sim_out_count(void* p, int i) {{ return (int64_t)((Sim*)p)->out_msg[i].size(); }}
void sim_out_read(void* p, int i, int64_t a, int64_t n, uint32_t* msg, int64_t* cyc) {{
  Sim* S = (Sim*)p;
  for (int64_t k = 0; k < n; ++k) {{
    for (int j = 0; j < {mw}; ++j) msg[k * {mw} + j] = S->out_msg[i][a + k].w[j];
    cyc[k] = S->out_cyc[i][a + k];
  }}
}}
int64_t sim_events(void* p, int e) {{ return (int64_t)(((Sim*)p)->ev[e].size() / {max(ev_words) if ev_words else 1}); }}
int64_t sim_event_words(void* p, int e) {{ return (int64_t)((Sim*)p)->ev[e].size(); }}
void sim_event_read(void* p, int e, uint32_t* out) {{
  Sim* S = (Sim*)p;
  for (size_t k = 0; k < S->ev[e].size(); ++k) out[k] = S->ev[e][k];
}}
int64_t sim_cycle(void* p) {{ return ((Sim*)p)->cycle; }}
int64_t sim_run(void* p, int64_t max_cycles, int stop_stream, int64_t stop_count, int64_t idle_limit, int* why) {{
  Sim* S = (Sim*)p;
  V{top}* m = S->m;
  auto& q_in = S->q_in; auto& out_msg = S->out_msg; auto& out_cyc = S->out_cyc; auto& ev = S->ev;
  int64_t& cycle = S->cycle;
  int64_t ran = 0, idle = 0;
  uint64_t last = 0;
  m->eval();
  for (;;) {{
    if ({done}) {{ *why = 2; break; }}
    if (ran >= max_cycles) {{ *why = 0; break; }}
    {' '.join(drive)}
    m->eval();
    bool moved = false;
    {' '.join(sample)}
    half(S, 1);
    half(S, 0);
    ++cycle; ++ran;
    if (stop_stream >= 0 && (int64_t)out_msg[stop_stream].size() >= stop_count) {{ *why = 1; break; }}
    if (idle_limit > 0) {{
      uint64_t h = 0;
      {' '.join(prog)}
      if (moved || h != last) {{ idle = 0; last = h; }}
      else if (++idle >= idle_limit) {{ *why = 3; break; }}
    }}
  }}
  return ran;
}}
}}
"""


def _content_key(verilog_text: str, cxx: str, flags: list, version: str) -> str:
    body = "\n".join(line for line in verilog_text.splitlines() if not line.lstrip().startswith("//"))
    return digest(body, cxx, " ".join(flags), version)


def _verilator_flags(trace: bool) -> list:
    flags = ["--cc", "--x-assign", "fast", "--x-initial", "fast", "--noassert", "-Wno-fatal", "-CFLAGS", "-fPIC"]
    return flags + ["--trace"] if trace else flags


def build_model(verilog: Path, top: str, *, trace: bool = False, vlt: Path | None = None, jobs: int = 2) -> Path:
    """Verilate ``top`` of ``verilog`` and compile it into ``libV<top>.a`` (with Verilator's runtime,
    ``libverilated.a``), once per content (Verilog, waivers, flags, :data:`MAKE_VARS`, Verilator
    version) in a directory every process shares; returns that object directory."""
    info = setup_verilator()
    verilog = Path(verilog)
    flags = _verilator_flags(trace)
    key = _content_key(verilog.read_text() + (Path(vlt).read_text() if vlt else ""), "", flags + [make_vars()],
                       info.version)
    env = make_env(dict(os.environ, MAKEFLAGS=make_vars()))

    def make(tmp: Path):
        obj = tmp / "obj"
        cmd = [info.executable, *flags, "--Mdir", str(obj), "--top-module", top, "--prefix", f"V{top}"]
        if vlt:
            cmd.append(str(vlt))
        cmd.append(str(verilog))
        _run(cmd, tmp, env, "verilator")
        verilator_runtime.make_with_cached_runtime(obj, f"V{top}", env, jobs, _run)
        (obj / "prefix").write_text(f"V{top}")

    return build_once(shared_build_dir("cxxsim-models") / f"{top[:40]}_{key}", make) / "obj"


def build_bench(cxx: str, top: str, models: list, *, header: str | None = None) -> Path:
    """The shared library of a bench (``cxx``, from :func:`generate`) linked with the models' object
    directories (:func:`build_model`; the first one's runtime), cached by content; ``header``, when
    given, is written as ``V<top>.h`` next to the bench (a top of several models,
    :mod:`pymtl_fp.joined_top`).  Returns the library's path."""
    info = setup_verilator()
    models = [Path(m) for m in models]
    key = digest(cxx, header or "", *(m.parent.name for m in models), OPT, info.version)
    out = shared_build_dir("cxxsim") / f"{top[:40]}_{key}"
    lib = out / f"libbench_{key}.so"
    if lib.is_file():
        return lib
    with build_lock(out):  # another worker may be building the same bench: wait for it
        if lib.is_file():
            return lib
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench.cpp").write_text(cxx)
        if header is not None:
            (out / f"V{top}.h").write_text(header)
        inc = Path(info.include_dir)
        archives = [str(m / f"lib{_prefix(m)}.a") for m in models] + [str(models[0] / "libverilated.a")]
        tmp = lib.with_suffix(".so.tmp")
        gxx = ["g++", "-shared", "-fPIC", OPT, "-std=c++17", f"-I{out}", *(f"-I{m}" for m in models), f"-I{inc}",
               f"-I{inc / 'vltstd'}", str(out / "bench.cpp"), *archives, "-pthread", "-o", str(tmp)]
        _run(gxx, out, make_env(dict(os.environ)), "g++")
        tmp.replace(lib)
        BUILDS.append(str(lib))
        return lib


def _prefix(obj: Path) -> str:
    """The model prefix (``V<top>``) of an object directory of :func:`build_model`."""
    return (obj / "prefix").read_text()


def build(verilog: Path, top: str, ports: Ports, *, trace: bool = False, vlt: Path | None = None,
          jobs: int = 2) -> Path:
    """Build (or find in the cache) the bench of one Verilated top; returns its library's path."""
    obj = build_model(verilog, top, trace=trace, vlt=vlt, jobs=jobs)
    return build_bench(generate(top, ports, trace), top, [obj])


#: libraries this process built (not found in the cache): tests check the cache with it
BUILDS: list = []


def _run(cmd, cwd, env, what):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise CxxSimError(f"{what} failed ({proc.returncode}):\n{tail}")


class StreamSim:
    """A loaded bench (see the module docstring)."""

    def __init__(self, lib: Path, ports: Ports, vcd: str | None = None):
        self.ports = ports
        self.lib = ctypes.CDLL(str(lib))
        L = self.lib
        vp, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        u32p, i64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_int64)
        L.sim_new.restype = vp
        L.sim_new.argtypes = [ctypes.c_char_p]
        L.sim_free.argtypes = [vp]
        L.sim_set.argtypes = [vp, i32, u32p]
        L.sim_get.argtypes = [vp, i32, u32p]
        L.sim_tick.argtypes = [vp, i32]
        L.sim_push.argtypes = [vp, i32, u32p, i64]
        for f in ("sim_in_left", "sim_out_count", "sim_events", "sim_event_words"):
            getattr(L, f).restype = i64
            getattr(L, f).argtypes = [vp, i32]
        L.sim_out_read.argtypes = [vp, i32, i64, i64, u32p, i64p]
        L.sim_event_read.argtypes = [vp, i32, u32p]
        L.sim_cycle.restype = i64
        L.sim_cycle.argtypes = [vp]
        L.sim_run.restype = i64
        L.sim_run.argtypes = [vp, i64, i32, i64, i64, ctypes.POINTER(ctypes.c_int)]
        self.h = L.sim_new(vcd.encode() if vcd else None)
        self.mw = message_words(ports)
        self._in = {_key(p, idx): i for i, (p, _, idx) in enumerate(ports.in_streams)}
        self._out = {_key(p, idx): i for i, (p, _, idx) in enumerate(ports.out_streams)}
        self._set = {_key(s.name, s.index): (i, s) for i, s in enumerate(ports.inputs)}
        self._get = {_key(s.name, s.index): (i, s) for i, s in enumerate(ports.outputs)}
        self._read = {k: 0 for k in self._out}

    def close(self):
        if self.h:
            self.lib.sim_free(self.h)
            self.h = None

    def __del__(self):
        self.close()

    # ---- signals -------------------------------------------------------------------------------
    def set(self, name: str, value: int, index: int | None = None) -> None:
        i, sig = self._set[_key(name, index)]
        words = (ctypes.c_uint32 * sig.words)(*[(int(value) >> (32 * k)) & 0xFFFFFFFF for k in range(sig.words)])
        self.lib.sim_set(self.h, i, words)

    def get(self, name: str, index: int | None = None) -> int:
        i, sig = self._get[_key(name, index)]
        words = (ctypes.c_uint32 * sig.words)()
        self.lib.sim_get(self.h, i, words)
        return sum(int(w) << (32 * k) for k, w in enumerate(words))

    def tick(self, n: int = 1) -> None:
        self.lib.sim_tick(self.h, int(n))

    # ---- streams -------------------------------------------------------------------------------
    def push(self, stream: str, values, index: int | None = None) -> None:
        mw = self.mw
        words = [(int(v) >> (32 * j)) & 0xFFFFFFFF for v in values for j in range(mw)]
        if words:
            arr = (ctypes.c_uint32 * len(words))(*words)
            self.lib.sim_push(self.h, self._in[_key(stream, index)], arr, len(words) // mw)

    def in_left(self, stream: str, index: int | None = None) -> int:
        return int(self.lib.sim_in_left(self.h, self._in[_key(stream, index)]))

    def out_count(self, stream: str, index: int | None = None) -> int:
        return int(self.lib.sim_out_count(self.h, self._out[_key(stream, index)]))

    def pop(self, stream: str, index: int | None = None) -> list:
        """Messages received since the last pop: ``[(message, cycle)]``."""
        k = _key(stream, index)
        i = self._out[k]
        total = int(self.lib.sim_out_count(self.h, i))
        a, n = self._read[k], total - self._read[k]
        if n <= 0:
            return []
        mw = self.mw
        msg, cyc = (ctypes.c_uint32 * (n * mw))(), (ctypes.c_int64 * n)()
        self.lib.sim_out_read(self.h, i, a, n, msg, cyc)
        self._read[k] = total
        vals = [sum(int(msg[m * mw + j]) << (32 * j) for j in range(mw)) for m in range(n)]
        return list(zip(vals, (int(c) for c in cyc)))

    def events(self, e: int) -> list:
        """Event ``e``'s records: ``[(cycle, value, ...)]``."""
        _strobe, vals = self.ports.events[e]
        nw = int(self.lib.sim_event_words(self.h, e))
        if not nw:
            return []
        buf = (ctypes.c_uint32 * nw)()
        self.lib.sim_event_read(self.h, e, buf)
        per = 2 + sum(v.words for v in vals)
        out = []
        for r in range(nw // per):
            w = buf[r * per:(r + 1) * per]
            rec, off = [w[0] | (w[1] << 32)], 2
            for v in vals:
                rec.append(sum(int(x) << (32 * k) for k, x in enumerate(w[off:off + v.words])))
                off += v.words
            out.append(tuple(rec))
        return out

    @property
    def cycle(self) -> int:
        return int(self.lib.sim_cycle(self.h))

    def run(self, max_cycles: int, *, until: tuple | None = None, idle_limit: int = 0) -> tuple[int, str]:
        """Run up to ``max_cycles``; ``until = (stream, index, total count)`` stops after that
        output stream has received that many messages in all.  Returns ``(cycles run, why)``
        with ``why`` in ``max_cycles``, ``count``, ``done``, ``idle``."""
        why = ctypes.c_int(0)
        stream, count = -1, 0
        if until is not None:
            stream, count = self._out[_key(until[0], until[1])], int(until[2])
        n = self.lib.sim_run(self.h, int(max_cycles), stream, count, int(idle_limit), ctypes.byref(why))
        return int(n), WHY[why.value]


def _key(name, index):
    return name if index is None else f"{name}[{index}]"
