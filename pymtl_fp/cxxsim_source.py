"""The C++ source of the compiled stream bench of :mod:`pymtl_fp.cxxsim`: the description of a
Verilated top's ports that the bench drives and watches (:class:`Sig`, :class:`Ports`) and the
generator of the bench from it (:func:`generate`; the cycle it runs is described in
:mod:`pymtl_fp.cxxsim`).  Source text only: building and loading are :mod:`pymtl_fp.cxxsim`'s."""

from __future__ import annotations

from dataclasses import dataclass, field


def verilator_name(name: str) -> str:
    """A port's name as Verilator's C++ spells it (``__`` -> ``___05F``)."""
    return name.replace("__", "___05F")


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
        ref = "m->" + verilator_name(self.name)
        return ref if self.index is None else f"{ref}[{self.index}]"


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
