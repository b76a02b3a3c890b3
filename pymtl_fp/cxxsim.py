"""A compiled C++ test bench for a Verilog top with val/rdy stream ports, run from Python through
ctypes many cycles per call (the Verilated model never waits for Python inside a run).

The bench is generated from a description of the top's ports (:mod:`pymtl_fp.cxxsim_source`:
no hand-written per-design C++); :func:`build` builds it with the Verilated model into a shared
library (optimized, cached by the *content* of the Verilog, the generated C++, the flags and the
Verilator version) and :class:`StreamSim` loads it.  Per cycle, in one C++ loop:

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
from pathlib import Path

from pymtl_fp import verilator_runtime
from pymtl_fp.build_dirs import build_lock, build_once, digest, shared_build_dir
from pymtl_fp.cxxsim_source import Ports, Sig, generate, message_words  # noqa: F401 (the bench's API)
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


def _content_key(verilog_text: str, cxx: str, flags: list, version: str) -> str:
    body = "\n".join(line for line in verilog_text.splitlines() if not line.lstrip().startswith("//"))
    return digest(body, cxx, " ".join(flags), version)


#: the most iterations of a loop Verilator unrolls (its default is 64).  The links' CRC-32
#: (:class:`~pymtl_fp.link.CrcRTL.CrcRTL`) loops over every bit of a message and its sequence number
#: (262 bits with 8 stream lanes of 32 bits), evaluated every cycle: rolled, it took 47 % of the
#: instructions of a cycle of the 4-node lenet5-mnist cluster of 8x8 arrays and 8 lanes, unrolled
#: (its columns constants) 20 % (callgrind; docs/cluster-node.md).  1024 covers the widest CRC input.
UNROLL_COUNT = 1024


def _verilator_flags(trace: bool) -> list:
    flags = ["--cc", "--x-assign", "fast", "--x-initial", "fast", "--noassert", "--unroll-count", str(UNROLL_COUNT),
             "-Wno-fatal", "-CFLAGS", "-fPIC"]
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
