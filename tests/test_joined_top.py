"""The joined top (:mod:`pymtl_fp.joined_top`): Verilated models joined by wires behave as the one
flat model of the same netlist -- whatever the order of the stages -- and a combinational loop
across models is counted, not silently settled."""

from __future__ import annotations

import pytest

from pymtl_fp import cxxsim, joined_top
from pymtl_fp.cxxsim import Ports, Sig
from pymtl_fp.joined_top import Instance, Joined, Port

pytestmark = pytest.mark.verilator

#: one stage: ``y = x + 1`` (combinational) and ``q``, a register of ``x`` (reset to 0)
STAGE = """module Stage (input logic clk, input logic reset, input logic [7:0] x,
              output logic [7:0] y, output logic [7:0] q);
  assign y = x + 8'd1;
  always_ff @(posedge clk) q <= reset ? 8'd0 : x;
endmodule
"""
#: the same netlist flat: ``a.x = x``, ``b.x = a.y``; out = b.y, qa/qb the registers
FLAT = STAGE + """module Flat (input logic clk, input logic reset, input logic [7:0] x,
             output logic [7:0] out, output logic [7:0] qa, output logic [7:0] qb);
  logic [7:0] ay;
  Stage a (.clk(clk), .reset(reset), .x(x), .y(ay), .q(qa));
  Stage b (.clk(clk), .reset(reset), .x(ay), .y(out), .q(qb));
endmodule
"""
PORTS = Ports(inputs=[Sig("reset", 1), Sig("x", 8)],
              outputs=[Sig("out", 8), Sig("qa", 8), Sig("qb", 8), Sig("joined_unsettled", 32)])


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    d = tmp_path_factory.mktemp("stage")
    (d / "Stage.v").write_text(STAGE)
    (d / "Flat.v").write_text(FLAT)
    return cxxsim.build_model(d / "Stage.v", "Stage"), d / "Flat.v"


def _joined(name, stages, loop=False):
    """Stage a then b in the order ``stages`` gives them; ``loop``: a's input is b's output."""
    j = Joined(top=name, instances=[Instance("a", "Stage", stages[0], group=0), Instance("b", "Stage", stages[1], group=1)],
               fields=[("reset", 1, None), ("x", 8, None), ("out", 8, None), ("qa", 8, None), ("qb", 8, None)])
    j.wires = [(Port("b", "x", 8), Port("a", "y", 8))]
    if loop:
        j.wires.append((Port("a", "x", 8), Port("b", "y", 8)))
    else:
        j.inputs.append((Port("a", "x", 8), "x"))
    j.inputs += [(Port("a", "reset", 1), "reset"), (Port("b", "reset", 1), "reset")]
    j.outputs = [(Port(None, "out", 8), Port("b", "y", 8)), (Port(None, "qa", 8), Port("a", "q", 8)),
                 (Port(None, "qb", 8), Port("b", "q", 8))]
    return j


def _sim(obj, j):
    lib = cxxsim.build_bench(cxxsim.generate(j.top, PORTS, False), j.top, [obj], header=joined_top.header(j))
    return cxxsim.StreamSim(lib, PORTS)


def _trace(sim, xs, flat=False):
    sim.set("reset", 1)
    sim.tick(1)
    sim.set("reset", 0)
    out = []
    for x in xs:
        sim.set("x", x)
        out.append((sim.get("out"), sim.get("qa"), sim.get("qb"), 0 if flat else sim.get("joined_unsettled")))
        sim.tick(1)
    return out


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("stages", [(0, 1), (1, 0)], ids=["in-order", "reversed"])
def test_joined_models_equal_the_flat_model_in_any_stage_order(stage, stages, threads, monkeypatch):
    monkeypatch.setenv(joined_top.THREADS_ENV, threads)  # two: a and b evaluate on two threads
    obj, flat_v = stage
    xs = [3, 250, 7, 255, 0, 9]
    flat_ports = Ports(inputs=PORTS.inputs, outputs=PORTS.outputs[:3])
    flat = cxxsim.StreamSim(cxxsim.build(flat_v, "Flat", flat_ports), flat_ports)
    want = _trace(flat, xs, flat=True)
    flat.close()
    sim = _sim(obj, _joined(f"Chain{stages[0]}{stages[1]}", stages))
    got = _trace(sim, xs)
    sim.close()
    assert [(x + 2) & 0xFF for x in xs] == [w[0] for w in want]  # the flat model is right
    assert got == want  # reversed: a second pass settles the wire, and nothing is counted


def test_the_two_threads_share_the_instances_in_runs_of_groups():
    """:func:`joined_top.parts`: a group's instances share a thread; the groups go to the threads in
    up to eight runs of neighbours, alternating, so each thread gets half of them."""
    nodes = [Instance(f"node{n}", "Node", 0, group=n) for n in range(64)]
    links = [Instance(f"link{n}", "Link", 1, group=min(n, 63)) for n in range(65)]
    part = joined_top.parts(nodes + links)
    assert [part[f"node{n}"] for n in range(0, 64, 8)] == [0, 1] * 4
    assert all(part[f"node{n}"] == part[f"node{n - n % 8}"] for n in range(64))  # runs of 8 neighbours
    assert all(part[f"link{n}"] == part[f"node{min(n, 63)}"] for n in range(65))  # a link with its node
    assert sum(part[f"node{n}"] for n in range(64)) == 32  # half the nodes on each thread
    loose = joined_top.parts([Instance(x, "M", 0) for x in "abcd"])  # no groups: each its own
    assert [loose[x] for x in "abcd"] == [0, 1, 0, 1]


def test_a_combinational_loop_across_models_is_counted(stage):
    obj, _ = stage
    sim = _sim(obj, _joined("Loop", (0, 1), loop=True))
    sim.set("reset", 0)
    assert sim.get("joined_unsettled") > 0  # a.x = b.y = a.y + 2: never settles
    sim.close()



#: an accumulator, ``acc += x`` at every edge out of reset: it counts the edges it sees
ACC = """module Acc (input logic clk, input logic reset, input logic [7:0] x, output logic [7:0] acc);
  always_ff @(posedge clk) acc <= reset ? 8'd0 : acc + x;
endmodule
"""


def test_raw_cycles_ticked_in_a_row_are_each_an_edge(tmp_path):
    """``tick(n)`` (the bench's raw cycles: reset, program loading) runs n edges with no settle
    between a falling edge and the next rising one; each of them is an edge in every instance, as in
    the flat model (a router's boot edges at the end of reset depend on it)."""
    (tmp_path / "Acc.v").write_text(ACC)
    ports = Ports(inputs=[Sig("reset", 1), Sig("x", 8)], outputs=[Sig("acc", 8)])
    flat = cxxsim.StreamSim(cxxsim.build(tmp_path / "Acc.v", "Acc", ports), ports)
    j = Joined(top="AccJoined", instances=[Instance("a", "Acc", 0)], fields=[("reset", 1, None), ("x", 8, None),
                                                                            ("acc", 8, None)],
               inputs=[(Port("a", "x", 8), "x"), (Port("a", "reset", 1), "reset")],
               outputs=[(Port(None, "acc", 8), Port("a", "acc", 8))])
    jports = Ports(inputs=ports.inputs, outputs=ports.outputs + [Sig("joined_unsettled", 32)])
    lib = cxxsim.build_bench(cxxsim.generate(j.top, jports, False), j.top,
                             [cxxsim.build_model(tmp_path / "Acc.v", "Acc")], header=joined_top.header(j))
    joined = cxxsim.StreamSim(lib, jports)
    got = {}
    for name, s in (("flat", flat), ("joined", joined)):
        s.set("reset", 1)
        s.tick(2)
        s.set("reset", 0)
        out = []
        for x, n in ((1, 3), (10, 2), (100, 1)):
            s.set("x", x)
            s.tick(n)
            out.append(s.get("acc"))
        got[name] = out
        s.close()
    assert got["flat"] == [3, 23, 123]
    assert got["joined"] == got["flat"]
