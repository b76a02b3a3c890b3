"""Quiet instances of a joined top (:mod:`pymtl_fp.joined_top`) skipped, cycle-exact: the C++ that
finds a Verilated model at a fixed point and evaluates it no more while its inputs stay the same.

A Verilated model is a deterministic function from its state and inputs to its next state, and all
of its state is in its symbol table (``V<top>__Syms``): the root object (``V<top>___024root``:
registers, memories, the settled combinational values, the scheduler's flags) and the instances of
the modules Verilator did not inline (a node's large weight banks) -- for a model without dynamic
members (queues, strings, classes), as synthesizable RTL is.  If that state after the settle of
cycle ``t + 1`` equals the state after the settle of cycle ``t`` -- the same inputs, and the clock
edge between them changed nothing -- then every further edge with the same inputs changes nothing
either: the instance is *quiet*, and the joined top neither evaluates it at a settle nor gives it
an edge until one of its inputs differs from what it was.  Its outputs (read in place) stay what they were, which
is what evaluating it would give.  Quiet nodes are most of a layer pipeline's nodes most of the
time (a node waits for its neighbours' data), and idle links most links.

Two kinds of member are not state and are left out of the comparison: Verilator's temporaries for
non-blocking assignments (``__Vdly*``) and for bounded writes (``__Vlvbound*``), written before
they are read in every evaluation.  One kind of state changes in every cycle while the rest stays:
**statistics counters** (:class:`Counter`; the router's cycle count and its per-state counts)
that count cycles and feed nothing but outputs.  A model's counters are named by the caller; the
comparison expects each to have advanced by its one-cycle step (1 when its condition holds), and
while the instance is quiet the joined top advances them in every skipped cycle, so the outputs
read what the model would show.

When to look (an instance's symbol table is copied, then compared a cycle later): after an
instance wakes, :func:`base_wait` cycles; after a look that failed, twice the last wait, up to
:data:`MAX_BACKOFF` times the base -- copying a node's state costs tens of its cycles.

The joined top reads :data:`ENV` when it is built: ``0`` turns the skipping off; ``check``
evaluates quiet instances anyway and counts every cycle in which a quiet instance's state differs
from the one skipping predicts (``joined_quiet_wrong``; the tests hold it at 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

#: the environment variable read by the joined top: ``0`` off, ``check`` verify, anything else on (the
#: command line accepts ``1``, ``0``, ``check`` or unset: ``scripts/validate.py``)
ENV = "PYMTL_FP_SIM_QUIET"
#: most times the base wait between looks at an instance that stays busy
MAX_BACKOFF = 64
#: members that are not state: temporaries written before they are read in every evaluation
SCRATCH = re.compile(r"__Vdly|__Vlvbound")
#: one member declaration of a Verilated root header: ``<type> name;`` or a port macro
_MEMBER = re.compile(r"^\s*(?:(VL_(?:IN|OUT|INOUT)(?:8|16|64|W)?)\((\w+),[^;]*\);"
                     r"|(?:CData|SData|IData|QData|VlWide<\d+>|VlUnpacked<.*>)\S*\s+(\w+);)")


@dataclass(frozen=True)
class Counter:
    """A statistics counter of a model: a member of its root (``index`` into an unpacked array) that
    advances by one in every cycle where ``when`` (a C++ condition on the root ``r``, or None:
    always) holds, and that no logic reads but outputs.  Its type's full width must be the
    counter's (it wraps as the register does)."""

    member: str
    index: int | None = None
    when: str | None = None

    def cxx(self, root: str) -> str:
        ref = f"{root}->{self.member}" + ("" if self.index is None else f"[{self.index}]")
        return f"{ref} += 1;" if self.when is None else f"if ({self.when}) {ref} += 1;"


def _members(header: str) -> list:
    """``[(name, port macro or None)]`` of the data members a Verilated class header declares."""
    out = []
    for line in header.splitlines():
        m = _MEMBER.match(line)
        if m:
            out.append((m.group(2), m.group(1)) if m.group(1) else (m.group(3), None))
    return out


@dataclass
class Quiet:
    """What skipping needs of one Verilated model ``top``: the headers of its object directory
    (``{file name: text}``: the root's, the symbol table's, those of the modules not inlined) and its
    counters (the root's members)."""

    top: str
    headers: dict
    counters: list = field(default_factory=list)

    @cached_property
    def members(self) -> list:
        """``[(name, port macro or None)]`` of the root's data members (read once)."""
        return _members(self.headers[f"V{self.top}___024root.h"])

    def inputs(self) -> list:
        """The model's input ports but its clock (the root's member names)."""
        return [n for n, macro in self.members if macro and macro.startswith("VL_IN") and n != "clk"]

    def instances(self) -> list:
        """``[(class, member)]`` of the symbol table: the root (``TOP``) and every module instance."""
        syms = self.headers.get(f"V{self.top}__Syms.h", "")
        return re.findall(rf"^\s*(V{self.top}_\w+)\s+(TOP\w*);", syms, re.M)

    def scratch(self) -> list:
        """``[(member of the symbol table, member of its class)]`` left out of the comparison
        (:data:`SCRATCH`)."""
        return [(inst, n) for cls, inst in self.instances()
                for n, _ in _members(self.headers.get(f"{cls}.h", "")) if SCRATCH.search(n)]


def base_wait(top: str) -> str:
    """C++: the cycles after a wake before an instance of ``top`` is looked at (one per 4 KiB of its
    state: the copy costs about that much of a cycle's evaluation)."""
    return f"(unsigned)(1 + sizeof(V{top}__Syms) / 4096)"


def model_code(q: Quiet) -> str:
    """C++ of one model: ``joined_quiet_<top>`` with the compared spans of its symbol table, the root
    in a copy of it, the comparison of the inputs, and the advance of the counters."""
    top = q.top
    r, sy = f"V{top}___024root", f"V{top}__Syms"
    cls = dict((inst, c) for c, inst in q.instances())
    skip = ", ".join(f"{{offsetof({sy}, {inst}) + offsetof({cls[inst]}, {n}), sizeof((({cls[inst]}*)nullptr)->{n})}}"
                     for inst, n in q.scratch())
    ins = " && ".join(f"!std::memcmp(&a->{n}, &b->{n}, sizeof(a->{n}))" for n in q.inputs()) or "true"
    adv = " ".join(c.cxx("r") for c in q.counters)
    return f"""#include "{sy}.h"
struct joined_quiet_{top} {{
  typedef {sy} S;
  static const std::vector<JSpan>& spans() {{
    static const std::vector<JSpan> s = joined_spans(sizeof(S), {{{skip}}});
    return s;
  }}
  static {r}* root(void* syms) {{ return ({r}*)((char*)syms + offsetof(S, TOP)); }}
  static bool inputs_same(const {r}* a, const {r}* b) {{ return {ins}; }}
  static void advance({r}* r) {{ (void)r; {adv} }}
}};"""


def settle(name: str, top: str, plain: str) -> str:
    """C++ of instance ``name``'s settle, ``plain`` its evaluation: skipped while the instance is
    quiet and its inputs are those it went quiet with (``check``: evaluated, and its state compared
    with the prediction); a differing input wakes it."""
    qm = f"joined_quiet_{top}"
    return (f"{{ JQuiet& q = {name}_q; if (q.mode == 2 && {qm}::inputs_same({name}->rootp, {qm}::root(q.snap))) {{ "
            f"if (joined_quiet_mode == 2) {{ {plain} if (!joined_same({name}->rootp->vlSymsp, q.snap, {qm}::spans())) "
            f"++joined_qc[part].wrong; }} }} else {{ if (q.mode == 2) q.wake(); {plain} }} }}")


def edge(name: str, top: str, plain: str) -> str:
    """C++ of instance ``name``'s rising edge, ``plain`` its clocked evaluation: the look at the state
    copied at the last edge (the counters advanced; equal: quiet from now), the copy when the wait is
    over, and while quiet the counters' advance in place of the edge (``check``: both)."""
    qm = f"joined_quiet_{top}"
    return (f"{{ JQuiet& q = {name}_q; void* sy = {name}->rootp->vlSymsp; bool skip = q.mode == 2; "
            f"if (q.mode == 1) {{ {qm}::advance({qm}::root(q.snap)); "
            f"if (joined_same(sy, q.snap, {qm}::spans())) {{ q.mode = 2; skip = true; }} "
            f"else q.failed({MAX_BACKOFF} * q.base); }} "
            f"else if (!skip && joined_quiet_mode && joined_started && --q.wait == 0) "
            f"{{ std::memcpy(q.snap, sy, sizeof({qm}::S)); q.mode = 1; }} "
            f"if (!skip) {{ {plain} }} else {{ ++q.skipped; ++joined_qc[part].skipped; if (joined_quiet_mode == 2) "
            f"{{ {qm}::advance({qm}::root(q.snap)); {plain} }} else {qm}::advance({name}->rootp); }} }}")


#: C++ shared by every model: spans, the per-instance state, the comparison
COMMON = """#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>
#ifndef JOINED_QUIET
#define JOINED_QUIET
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
struct JSpan { size_t off, len; };
static std::vector<JSpan> joined_spans(size_t size, std::vector<JSpan> skip) {  // [0, size) but skip
  std::sort(skip.begin(), skip.end(), [](const JSpan& a, const JSpan& b) { return a.off < b.off; });
  std::vector<JSpan> out;
  size_t at = 0;
  for (const JSpan& s : skip) {
    if (s.off > at) out.push_back({at, s.off - at});
    at = std::max(at, s.off + s.len);
  }
  if (size > at) out.push_back({at, size - at});
  return out;
}
static inline bool joined_same(const void* a, const void* b, const std::vector<JSpan>& spans) {
  for (const JSpan& s : spans)
    if (std::memcmp((const char*)a + s.off, (const char*)b + s.off, s.len)) return false;
  return true;
}
struct JQuiet {  // one instance: 0 evaluated, 1 its root copied at the last edge, 2 quiet
  int mode = 0;
  QData skipped = 0;  // its edges skipped while quiet
  unsigned wait = 1, backoff = 1, base = 1;
  void* snap = nullptr;
  void wake() { mode = 0; wait = backoff = base; }
  void failed(unsigned most) { mode = 0; backoff = std::min(2 * backoff, most); wait = backoff; }
};
#endif"""
