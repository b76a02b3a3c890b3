"""Quiet instances of a joined top skipped (:mod:`pymtl_fp.joined_quiet`): every output in every
cycle equals the flat model's, the skipping does engage, and the check mode catches a counter that
logic reads (declared a statistics counter by mistake)."""

from __future__ import annotations

import pytest

from pymtl_fp import cxxsim, joined_quiet, joined_top
from pymtl_fp.cxxsim import Ports, Sig
from pymtl_fp.joined_quiet import Counter, Quiet
from pymtl_fp.joined_top import Instance, Joined, Port

pytestmark = pytest.mark.verilator

#: a two-stage pipeline of ``x``, a memory written from it (a module Verilator keeps apart: its state
#: outside the root), a free-running cycle counter; ``Peek`` also reads its counter (``hit`` at
#: cycle 40): not a statistics counter
DESIGN = """module {name}_mem (input logic clk, input logic we, input logic [3:0] addr, input logic [7:0] wdata,
              output logic [7:0] rd);
  /*verilator no_inline_module*/
  logic [7:0] mem [0:15];
  always_ff @(posedge clk) if (we) mem[addr] <= wdata;
  assign rd = mem[addr];
endmodule
module {name} (input logic clk, input logic reset, input logic [7:0] x, input logic we,
              input logic [3:0] addr, output logic [7:0] y, output logic [31:0] cyc,
              output logic [7:0] rd, output logic hit);
  logic [7:0] s1, s2;
  always_ff @(posedge clk) begin
    if (reset) begin s1 <= 8'd0; s2 <= 8'd0; cyc <= 32'd0; hit <= 1'b0; end
    else begin
      s1 <= x; s2 <= s1; cyc <= cyc + 32'd1;
      hit <= {hit};
    end
  end
  {name}_mem m (.clk(clk), .we(we), .addr(addr), .wdata(s2 + 8'd3), .rd(rd));
  assign y = s2 + 8'd1;
endmodule
"""
OUTS = [Sig("y", 8), Sig("cyc", 32), Sig("rd", 8), Sig("hit", 1)]
INS = [Sig("reset", 1), Sig("x", 8), Sig("we", 1), Sig("addr", 4)]
#: (cycles, x, we, addr): long quiet stretches, writes, a read address that changes alone
SCRIPT = [(30, 5, 0, 0), (3, 9, 1, 2), (25, 9, 0, 2), (1, 9, 0, 7), (20, 9, 0, 7), (4, 200, 1, 7),
          (30, 200, 0, 2), (2, 17, 0, 2), (40, 17, 0, 2)]


def _build(tmp_path, name, hit):
    (tmp_path / f"{name}.v").write_text(DESIGN.format(name=name, hit=hit))
    return tmp_path / f"{name}.v"


def _run(sim, joined, close=True):
    sim.set("reset", 1)
    sim.tick(2)
    sim.set("reset", 0)
    before = sim.get("joined_quiet_skipped") if joined else 0  # (reset holds every register: quiet)
    out = []
    for n, x, we, addr in SCRIPT:
        for _ in range(n):
            sim.set("x", x)
            sim.set("we", we)
            sim.set("addr", addr)
            out.append(tuple(sim.get(s.name) for s in OUTS))
            sim.tick(1)
    extra = (sim.get("joined_quiet_skipped") - before, sim.get("joined_quiet_wrong")) if joined else None
    if close:
        sim.close()
    return out, extra


def _joined(v, name, counters):
    obj = cxxsim.build_model(v, name)
    j = Joined(top=f"{name}Joined", instances=[Instance("a", name, 0)],
               fields=[(s.name, s.width, None) for s in INS + OUTS],
               inputs=[(Port("a", s.name, s.width), s.name) for s in INS],
               outputs=[(Port(None, s.name, s.width), Port("a", s.name, s.width)) for s in OUTS])
    j.quiet = {name: Quiet(name, {f.name: f.read_text() for f in obj.glob(f"V{name}*.h")}, counters)}
    assert [m for _, m in j.quiet[name].instances()] == ["TOP", "TOP__" + name + "__DOT__m"]  # the memory's module
    ports = Ports(inputs=INS, outputs=OUTS + [Sig("joined_quiet_skipped", 64), Sig("joined_quiet_wrong", 32)])
    lib = cxxsim.build_bench(cxxsim.generate(j.top, ports, False), j.top, [obj], header=joined_top.header(j))
    return cxxsim.StreamSim(lib, ports)


def _flat(v, name):
    ports = Ports(inputs=INS, outputs=OUTS)
    return cxxsim.StreamSim(cxxsim.build(v, name, ports), ports)


@pytest.mark.parametrize("mode", ["1", "check"])
def test_a_quiet_instance_is_skipped_and_every_output_equals_the_flat_models(tmp_path, monkeypatch, mode):
    monkeypatch.setenv(joined_quiet.ENV, mode)
    v = _build(tmp_path, "Quiet", "1'b0")
    want, _ = _run(_flat(v, "Quiet"), False)
    got, (skipped, wrong) = _run(_joined(v, "Quiet", [Counter("cyc")]), True)
    assert [w[1] for w in want[:3]] == [0, 1, 2]  # the flat model counts its cycles
    assert got == want  # y, the counter, the memory's read port: in every cycle
    assert skipped > 60  # the long stretches of the same inputs were skipped
    assert wrong == 0


def test_a_counter_left_undeclared_keeps_the_instance_evaluated(tmp_path, monkeypatch):
    """The comparison sees the counter change: nothing is skipped out of reset (it is not vacuous)."""
    monkeypatch.setenv(joined_quiet.ENV, "1")
    v = _build(tmp_path, "Quiet", "1'b0")
    want, _ = _run(_flat(v, "Quiet"), False)
    got, (skipped, _) = _run(_joined(v, "Quiet", []), True)
    assert got == want and skipped == 0


def test_the_check_mode_catches_a_counter_that_logic_reads(tmp_path, monkeypatch):
    """``cyc`` feeds ``hit`` (cycle 40, in a quiet stretch): declared a statistics counter, skipping
    would miss ``hit``; the check mode evaluates anyway and counts the cycles not as predicted."""
    v = _build(tmp_path, "Peek", "hit | (cyc == 32'd40)")
    want, _ = _run(_flat(v, "Peek"), False)
    assert any(w[3] for w in want)
    monkeypatch.setenv(joined_quiet.ENV, "check")
    got, (_, wrong) = _run(_joined(v, "Peek", [Counter("cyc")]), True)
    assert got == want and wrong > 0  # evaluated, so right; and the wrong prediction is counted
    monkeypatch.setenv(joined_quiet.ENV, "1")
    got, (skipped, _) = _run(_joined(v, "Peek", [Counter("cyc")]), True)
    assert skipped > 0 and got != want  # skipping on a wrong declaration does go wrong



def test_each_instance_counts_its_own_skipped_cycles(tmp_path, monkeypatch):
    """Two instances of one model: ``a`` takes the script (long quiet stretches, and changes), ``b``
    inputs that never change after reset (quiet from its first look on).  Each counts the edges it
    was skipped in (``joined_quiet_each``, what ``bench epoch`` prints per node): the two add up to
    the total, and ``b`` is skipped in every edge but its first few."""
    monkeypatch.setenv(joined_quiet.ENV, "1")
    name = "Pair"
    obj = cxxsim.build_model(_build(tmp_path, name, "1'b0"), name)
    j = Joined(top=f"{name}Joined", instances=[Instance("a", name, 0), Instance("b", name, 0)],
               fields=[(s.name, s.width, None) for s in INS + OUTS],
               inputs=[(Port("a", s.name, s.width), s.name) for s in INS]
               + [(Port("b", "reset", 1), "reset")] + [(Port("b", s.name, s.width), "0") for s in INS[1:]],
               outputs=[(Port(None, s.name, s.width), Port("a", s.name, s.width)) for s in OUTS])
    j.quiet = {name: Quiet(name, {f.name: f.read_text() for f in obj.glob(f"V{name}*.h")}, [Counter("cyc")])}
    ports = Ports(inputs=INS, outputs=OUTS + [Sig("joined_quiet_skipped", 64), Sig("joined_quiet_wrong", 32),
                                              Sig("joined_edges", 64)]
                  + [Sig("joined_quiet_each", 64, k) for k in range(2)])
    sim = cxxsim.StreamSim(cxxsim.build_bench(cxxsim.generate(j.top, ports, False), j.top, [obj],
                                              header=joined_top.header(j)), ports)
    _run(sim, True, close=False)
    a, b = sim.get("joined_quiet_each", 0), sim.get("joined_quiet_each", 1)
    total, edges = sim.get("joined_quiet_skipped"), sim.get("joined_edges")
    sim.close()
    assert edges == 2 + sum(n for n, *_ in SCRIPT)  # reset's two edges and the script's
    assert a + b == total
    assert 60 < a < b and edges - 5 <= b < edges  # b: every edge after its first look out of reset
