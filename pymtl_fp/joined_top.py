"""Several Verilated models joined by wires into one C++ class that looks like one Verilated top,
so that the compiled bench of :mod:`pymtl_fp.cxxsim` drives it unchanged (cycle level, exact).

A design of many instances of a few modules (a cluster: N nodes of one configuration, 2N + 1 links)
is Verilated once per *module* (:func:`pymtl_fp.cxxsim.build_model`) instead of once per design:
Verilator optimizes per scope, so one flat model carries every node's C++ again.  The joined top
(:func:`header`) holds one model object per instance and fields named like the flat top's ports;
its ``eval()`` does what one Verilated ``eval()`` of the flat design does:

* clock low (the settle, before the bench samples the handshakes): stage by stage, the top's input
  fields (:attr:`Joined.inputs`) and every wire into an instance of that stage are copied to it, its
  clock goes low and it evaluates; the wires are then checked *settled* (every input equal to the
  output it is wired to).  With the stages ordered so that each instance's wired inputs come from
  instances evaluated before it or from outputs that depend on state only (the links: their
  ``send`` and ``recv.rdy`` are registers) one pass settles; any other netlist gets further
  passes, and a netlist still unsettled after :data:`MAX_PASSES` counts in the output field
  ``joined_unsettled`` (a combinational loop across models: the caller raises on it);
* clock rising: every instance takes its edge with the inputs of the settle (the bench settles
  before every rising edge: :func:`pymtl_fp.cxxsim_source.generate`);
* clock falling: nothing runs (no logic of a PyMTL3 design runs on a falling edge); the instances'
  clocks go low at the next settle.  A rising edge that follows a falling edge with no settle
  between them (a bench that ticks several raw cycles in a row, as the program loading does)
  settles first, so that every instance sees its clock low before the edge and the inputs set since.

The top's output fields are references to the instance outputs they are wired to
(:attr:`Joined.outputs`; ``JRef``, ``JArr`` in the header): the bench reads an instance's own field,
as it stands after the instance's last evaluation, and nothing is copied.  Outputs the bench reads
right after an edge, before the next settle (``done``, ``progress``), must be registered in their
instance, as the cluster's status ports are: after an edge the wires between instances are settled
at the next settle, not before.

**Quiet instances** (:attr:`Joined.quiet`, :mod:`pymtl_fp.joined_quiet`): an instance whose clock
edge changed nothing in its model (statistics counters aside) is skipped at the settles and edges
that follow, for as long as its inputs stay the same; the cycles and every output are those of
evaluating it.  Each instance counts the edges it was skipped in (the output array
``joined_quiet_each``, in the order of :attr:`Joined.instances`): what is left is what it cost.

**Two threads** (:data:`THREADS_ENV`): every step above -- a settle stage, the check, the rising
edge -- is a job of two halves, one on the calling thread and one on a helper thread, joined by a
spinning barrier at its end (a cluster's cycle: four jobs, its two stages, the check and the
edge).  An instance is always in the same half (:func:`parts`), and each half does all the work of
its instances: their input copies (a wire whose source is in the
same stage is copied before the stage, as the other half may be evaluating that source), their
evaluation and the check of their wires.  Nothing is left for one thread alone but the bench, so
the two halves' work is what a cycle costs.  Instances wired to each other are kept in one half
where the netlist allows (:attr:`Instance.group`): a wire across the halves moves a cache line
between the cores every cycle.

Each instance is evaluated through its Verilated root's evaluation function
(``V<top>___024root___eval``, what the model's ``eval()`` calls between its bookkeeping) once the
top has been evaluated once through every instance's ``eval()`` (which runs the models' initial
blocks).  The bookkeeping it skips -- deleting dynamic objects, flushing messages that Verilator's
own worker threads queued -- has nothing to do in these models (no classes, no ``--threads``,
no ``$display``); measured in the docs (cluster-node, "Where a node-cycle goes").  A model from a
Verilator without that function (a weak symbol, null when absent) is evaluated through ``eval()``.
At the rising edge an instance runs only its clocked phases (``___eval_phase__act`` and
``___eval_phase__nba``, looped as ``___eval`` loops them): ``___eval`` would first evaluate its
input-combinational logic again (Verilator's ``ico`` region runs on every call), with the inputs
and the state the settle just evaluated it with -- the same values.  Models
from a Verilator without these phase functions (weak symbols, null when absent) take the full
``___eval`` there too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pymtl_fp import joined_quiet
from pymtl_fp.cxxsim_source import verilator_name

#: settle passes before a netlist counts as unsettled (a combinational loop across models)
MAX_PASSES = 4
#: most iterations of a model's clocked phases at a rising edge (Verilator's own convergence limit)
MAX_CLOCKED = 10000
#: the environment variable that gives the joined top a second thread (``2``): each evaluation
#: stage and the clock edge run half the instances on each (every instance has its own
#: ``VerilatedContext``; see "Two threads" above); unset or ``1``: one thread
THREADS_ENV = "PYMTL_FP_SIM_THREADS"
#: most runs of neighbouring groups the instances are cut into for the two threads (:func:`parts`)
RUNS = 8


@dataclass(frozen=True)
class Port:
    """A port of an instance (``owner`` its name) or a field of the joined top (``owner`` None):
    Verilog name, width, index into an unpacked array port."""

    owner: str | None
    name: str
    width: int
    index: int | None = None

    def cxx(self) -> str:
        ref = verilator_name(self.name)
        ref = f"{self.owner}->{ref}" if self.owner else ref
        return ref if self.index is None else f"{ref}[{self.index}]"

    @property
    def words(self) -> int:
        return (self.width + 31) // 32


@dataclass(frozen=True)
class Instance:
    name: str    #: C++ member name
    top: str     #: the Verilated model (class ``V<top>``)
    stage: int   #: evaluation order within a settle (lower first)
    group: int | None = None  #: instances of one group share a thread (e.g. a node and its input links)


@dataclass
class Joined:
    """The netlist of a joined top (see the module docstring)."""

    top: str                                     #: the class is ``V<top>``
    instances: list = field(default_factory=list)
    fields: list = field(default_factory=list)   #: (name, width, count or None): the top's ports but clk
    wires: list = field(default_factory=list)    #: (dst Port, src Port): instance input <- instance output
    inputs: list = field(default_factory=list)   #: (dst Port, C++ expression of the top's fields)
    outputs: list = field(default_factory=list)  #: (top field Port, instance output Port)
    #: model -> :class:`~pymtl_fp.joined_quiet.Quiet`: its instances are skipped while quiet
    quiet: dict = field(default_factory=dict)


def _copy(dst: Port, src: str) -> str:
    if dst.width <= 64:
        return f"{dst.cxx()} = {src};"
    return f"for (int i = 0; i < {dst.words}; ++i) {dst.cxx()}[i] = ({src})[i];"


def _differs(a: Port, b: Port) -> str:
    if a.width <= 64:
        return f"{a.cxx()} != {b.cxx()}"
    return " || ".join(f"{a.cxx()}[{i}] != {b.cxx()}[{i}]" for i in range(a.words))


def _ctype(width: int) -> str:
    if width <= 8:
        return "CData"
    if width <= 16:
        return "SData"
    if width <= 32:
        return "IData"
    if width <= 64:
        return "QData"
    return f"VlWide<{(width + 31) // 32}>"


def _eval(i: Instance) -> str:
    """C++ evaluating instance ``i``: its model's ``eval()`` on the top's first evaluation, its root's
    evaluation function after, when the model has one (see the module docstring)."""
    return (f"if (VL_LIKELY(joined_started && joined_root_{i.top})) V{i.top}___024root___eval({i.name}->rootp); "
            f"else {i.name}->eval();")


def _rise(i: Instance) -> str:
    """C++ evaluating instance ``i`` at the rising edge (its inputs as the settle left them): its
    clocked phases only once the top is started and the model has them, else :func:`_eval`."""
    return (f"if (VL_LIKELY(joined_started && joined_phases_{i.top})) "
            f"{{ if (!joined_clocked_{i.top}({i.name}->rootp)) ++joined_unsettled; }} else {{ {_eval(i)} }}")


def _settle(i: Instance, quiet: bool) -> str:
    """C++ evaluating instance ``i`` at a settle (clock low), skipped while it is quiet when its model
    has :attr:`Joined.quiet` (:func:`pymtl_fp.joined_quiet.settle`)."""
    plain = f"{i.name}->clk = 0; {_eval(i)}"
    return joined_quiet.settle(i.name, i.top, plain) if quiet else plain


def _edge(i: Instance, quiet: bool) -> str:
    """C++ of instance ``i``'s rising edge (its clocked phases, :func:`_rise`), skipped while it is
    quiet when its model has :attr:`Joined.quiet` (:func:`pymtl_fp.joined_quiet.edge`)."""
    plain = f"{i.name}->clk = 1; {_rise(i)}"
    return joined_quiet.edge(i.name, i.top, plain) if quiet else plain


def _roots(top: str) -> str:
    """C++ declarations of model ``top``'s root evaluation functions and its clocked evaluation."""
    r = f"V{top}___024root"
    return f"""class {r};
void {r}___eval({r}* vlSelf) __attribute__((weak));
static const bool joined_root_{top} = {r}___eval;
bool {r}___eval_phase__act({r}* vlSelf) __attribute__((weak));
bool {r}___eval_phase__nba({r}* vlSelf) __attribute__((weak));
static const bool joined_phases_{top} = {r}___eval_phase__act && {r}___eval_phase__nba;
static inline bool joined_clocked_{top}({r}* r) {{  // ___eval without its input-combinational region
  for (int n = 0; n < {MAX_CLOCKED}; ++n) {{
    for (int a = 0; {r}___eval_phase__act(r); ++a) if (a >= {MAX_CLOCKED}) return false;
    if (!{r}___eval_phase__nba(r)) return true;
  }}
  return false;  // did not converge (counted as an unsettled evaluation)
}}"""


def parts(instances) -> dict:
    """Which of the two threads evaluates each instance (``{name: 0 or 1}``).  The groups
    (:attr:`Instance.group`; an instance without one is a group of its own, numbered after the others
    in its stage) go in order in up to :data:`RUNS` runs of neighbours, the runs alternating between the
    threads: an instance's wires then mostly join it to instances of its own thread (a wire across
    the threads moves a cache line every cycle), and the busy runs of a pipeline's nodes are shared
    between the threads."""
    named = [i.group for i in instances if i.group is not None]
    first = max(named, default=-1) + 1
    key = {}
    for st in sorted({i.stage for i in instances}):
        loose = [i for i in instances if i.stage == st and i.group is None]
        key.update({i.name: first + k for k, i in enumerate(loose)})
    key.update({i.name: i.group for i in instances if i.group is not None})
    order = sorted(set(key.values()))
    run = -(-len(order) // RUNS)
    rank = {g: (k // run) % 2 for k, g in enumerate(order)}
    return {name: rank[g] for name, g in key.items()}


def _fields(j: Joined) -> tuple:
    """``(declarations, constructor statements)`` of the top's fields: an input a plain field, an
    output a reference to the instance output it is wired to (``JRef``; an array, ``JArr``), so that
    the bench reads the instance's own field and nothing is copied."""
    sources = {(t.name, t.index): s for t, s in j.outputs}
    outputs = {name for name, _ in sources}
    decls, binds = [], []
    for name, width, count in j.fields:
        ref, t = verilator_name(name), _ctype(width)
        if name not in outputs:
            decls.append(f"  {t} {ref}{f'[{count}]' if count else ''} = {{}};")
            continue
        decls.append(f"  JRef<{t}> {ref};" if count is None else f"  JArr<{t}, {count}> {ref};")
        for idx in [None] if count is None else range(count):
            src = sources.get((name, idx))
            if src is not None:
                binds.append(f"    {ref}.p{'' if idx is None else f'[{idx}]'} = &{src.cxx()};")
    return decls, binds


def header(j: Joined) -> str:
    """The C++ header ``V<top>.h`` of the joined top."""
    tops = sorted({i.top for i in j.instances})
    includes = "\n".join(f'#include "V{t}.h"' for t in tops)
    field_decls, out_binds = _fields(j)
    decls = "\n".join(field_decls)
    members = "\n".join(f"  VerilatedContext* {i.name}_ctx;\n  V{i.top}* {i.name};" for i in j.instances)
    quiet = [i for i in j.instances if i.top in j.quiet]
    members += "".join(f"\n  JQuiet {i.name}_q;" for i in quiet)
    quiet_new = "\n".join(f"    {i.name}_q.base = {i.name}_q.wait = {i.name}_q.backoff = {joined_quiet.base_wait(i.top)}; "
                           f"{i.name}_q.snap = std::aligned_alloc(64, (sizeof(V{i.top}__Syms) + 63) / 64 * 64);"
                           for i in quiet)
    quiet_free = " ".join(f"std::free({i.name}_q.snap);" for i in quiet)
    quiet_new += "".join(f"\n    joined_quiet_each.p[{k}] = &{i.name}_q.skipped;"
                         for k, i in enumerate(j.instances) if i.top in j.quiet)
    quiet_models = "\n".join(joined_quiet.model_code(j.quiet[t]) for t in sorted({i.top for i in quiet}))
    new = "\n".join(f'    {i.name}_ctx = new VerilatedContext; {i.name} = new V{i.top}{{{i.name}_ctx, "{i.name}"}};'
                     for i in j.instances)
    delete = " ".join(f"delete {i.name}; delete {i.name}_ctx;" for i in j.instances)
    final = " ".join(f"{i.name}->final();" for i in j.instances)
    owner_stage = {i.name: i.stage for i in j.instances}
    part = parts(j.instances)
    inputs, wires = {i.name: [] for i in j.instances}, {i.name: [] for i in j.instances}  # by destination
    for d, e in j.inputs:
        inputs[d.owner].append((d, e))
    for d, s in j.wires:
        wires[d.owner].append((d, s))

    def halves(code_of, of=j.instances) -> tuple:  # (part 0's C++, part 1's C++): code_of(i) for each i of ``of``
        return tuple(" ".join(code_of(i) for i in of if part[i.name] == k) for k in (0, 1))

    def into(i: Instance, cross: bool) -> list:  # copies into i: the top's inputs, wires from other stages
        return ([_copy(d, e) for d, e in inputs[i.name]] if cross else []) + [
            _copy(d, s.cxx()) for d, s in wires[i.name] if (owner_stage[s.owner] != i.stage) == cross]

    # a settle stage: wires from instances of the same stage copied before the stage's job (the other
    # thread evaluates those instances during it); each half then copies the top's inputs and the
    # wires from other stages into its instances, sets their clock low and evaluates them
    stages, jobs = [], []
    for k, st in enumerate(sorted(set(owner_stage.values()))):
        in_stage = [i for i in j.instances if i.stage == st]
        same = [c for i in in_stage for c in into(i, False)]
        stages.append("\n      ".join(same + [f"joined_run({k + 1});"]))
        jobs.append(halves(lambda i: " ".join(into(i, True) + [_settle(i, i.top in j.quiet)]), in_stage))
    finish_job = len(jobs) + 1  # after the stages: each half checks the wires into its instances
    jobs.append(halves(lambda i: " ".join(
        f"if ({_differs(d, s)}) joined_pend[{part[i.name]}] = true;" for d, s in wires[i.name])))
    rise_job = len(jobs) + 1  # the rising edge: each half's instances take it
    jobs.append(halves(lambda i: _edge(i, i.top in j.quiet)))
    roots = "\n".join(_roots(t) for t in tops)
    cases = "\n".join(f"      case {n + 1}: if (part) {{ {h1} }} else {{ {h0} }} break;" for n, (h0, h1) in enumerate(jobs))
    return f"""// generated by pymtl_fp.joined_top: {len(j.instances)} Verilated models joined as one top
#pragma once
#include "verilated.h"
{includes}
{roots}
{joined_quiet.COMMON}
{quiet_models}
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#ifndef JOINED_REFS
#define JOINED_REFS
template <class T> struct JRef {{  // an output of the top: the instance's field it is wired to
  T* p = nullptr;
  operator const T&() const {{ return *p; }}
  template <class I> auto operator[](I i) const -> decltype((*p)[i]) {{ return (*p)[i]; }}  // (a wide value's words)
}};
template <class T, int N> struct JArr {{  // an unpacked array of outputs (an unwired element reads 0)
  T* p[N];
  JArr() {{ static T zero{{}}; for (int i = 0; i < N; ++i) p[i] = &zero; }}
  T& operator[](int i) const {{ return *p[i]; }}
}};
#endif

class V{j.top} {{
 public:
  CData clk = 0;
{decls}
  IData joined_unsettled = 0;  // settles (or clocked evaluations) that did not converge
  QData joined_edges = 0;  // rising edges of the clock
  QData joined_quiet_skipped = 0;  // instance-cycles skipped while quiet (pymtl_fp.joined_quiet)
  JArr<QData, {max(1, len(j.instances))}> joined_quiet_each;  // each instance's, in the order of Joined.instances
  IData joined_quiet_wrong = 0;  // ({joined_quiet.ENV}=check) quiet instance-cycles not as predicted
{members}

  explicit V{j.top}(VerilatedContext*) {{
{new}
{chr(10).join(out_binds)}
{quiet_new}
    const char* qe = std::getenv("{joined_quiet.ENV}");
    joined_quiet_mode = !qe ? 1 : !std::strcmp(qe, "0") ? 0 : !std::strcmp(qe, "check") ? 2 : 1;
    const char* t = std::getenv("{THREADS_ENV}");
    if (t && std::atoi(t) >= 2) joined_helper = std::thread([this] {{ joined_loop(); }});
  }}
  ~V{j.top}() {{
    if (joined_helper.joinable()) {{
      joined_job = -1;
      joined_req.fetch_add(1, std::memory_order_release);
      joined_helper.join();
    }}
    {delete}
    {quiet_free}
  }}
  void final() {{ {final} }}
  void eval() {{
    if (clk && !joined_last_clk) {{
      if (!joined_settled) joined_settle();  // (a falling edge and no settle since)
      joined_run({rise_job});  // (inputs as the settle before it left them)
      ++joined_edges;
      joined_settled = false;
    }} else if (!clk && joined_last_clk) joined_settled = false;  // (no output changes; clocks low at the settle)
    else {{ joined_settle(); joined_settled = true; }}
    joined_last_clk = clk;
    joined_started = true;
    joined_quiet_skipped = joined_qc[0].skipped + joined_qc[1].skipped;
    joined_quiet_wrong = (IData)(joined_qc[0].wrong + joined_qc[1].wrong);
  }}

 private:
  CData joined_last_clk = 0;
  bool joined_settled = false;         // the instances have been evaluated with the clock low since the last edge
  bool joined_started = false;         // every instance has been evaluated through its eval()
  int joined_quiet_mode = 1;           // {joined_quiet.ENV}: 0 off, 1 on, 2 check
  struct alignas(64) JCount {{ unsigned long skipped = 0, wrong = 0; }} joined_qc[2];  // each half's own line
  std::thread joined_helper;           // the second thread (``{THREADS_ENV}`` >= 2), or none
  int joined_job = 0;                  // what the helper runs next (written before joined_req)
  std::atomic<unsigned> joined_req{{0}}, joined_done{{0}};
  bool joined_pend[2] = {{false, false}};  // a wire into a half's instances not settled (each half writes its own)
  void joined_part(int job, int part) {{
    switch (job) {{
{cases}
    }}
  }}
  static void joined_wait(const std::atomic<unsigned>& a, unsigned until_not, bool equal) {{
    for (long spins = 0;; ++spins) {{
      if ((a.load(std::memory_order_acquire) == until_not) == equal) return;
      if (spins > 200000) std::this_thread::sleep_for(std::chrono::microseconds(50));
      else if (spins > 2000) std::this_thread::yield();
    }}
  }}
  void joined_run(int job) {{  // one half here, the other on the helper thread (if any)
    if (!joined_helper.joinable()) {{ joined_part(job, 0); joined_part(job, 1); return; }}
    joined_job = job;
    unsigned seq = joined_req.fetch_add(1, std::memory_order_release) + 1;
    joined_part(job, 0);
    joined_wait(joined_done, seq, true);
  }}
  void joined_loop() {{
    unsigned last = 0;
    for (;;) {{
      joined_wait(joined_req, last, false);
      last = joined_req.load(std::memory_order_acquire);
      if (joined_job < 0) return;
      joined_part(joined_job, 1);
      joined_done.store(last, std::memory_order_release);
    }}
  }}
  void joined_settle() {{
    for (int pass = 0; pass < {MAX_PASSES}; ++pass) {{
      {(chr(10) + '      ').join(stages)}
      joined_pend[0] = joined_pend[1] = false;
      joined_run({finish_job});
      if (!joined_pend[0] && !joined_pend[1]) return;
    }}
    ++joined_unsettled;
  }}
}};
"""
