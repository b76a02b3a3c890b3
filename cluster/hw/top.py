"""The simulated cluster in PyMTL3: the cluster's hardware (:class:`~pymtl_fp.cluster.hw.ClusterNet.ClusterNet`:
nodes at any mix of levels, links) with the host around it (:class:`~pymtl_fp.cluster.hw.host.HostCL`
at the chain's ends, :class:`~pymtl_fp.cluster.hw.host_side.HostSideCL` on every node's side channel).

Node programs reach the routers the way the hardware loads them: RTL routers through the program
bus while reset is high (:func:`load_programs`); CL routers take the same program directly (their
bus decodes the same words, which a test checks, but writing thousands of instructions through a
Python-simulated bus only costs time).
"""

from __future__ import annotations

from pymtl3 import Component, InPort, connect, mk_bits

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.ClusterNet import ClusterNet
from pymtl_fp.cluster.hw.host import HostCL
from pymtl_fp.cluster.hw.host_side import HostSideCL
from pymtl_fp.cluster.hw.router_config import BOOT_EDGES


class ClusterTop(Component):
    def construct(s, ccfg, rcfgs, cprog, levels, link_level, net, fmt, images, labels, stall=None):
        N = ccfg.n
        stalls = [(stall[0], stall[1] + 7919 * j) for j in range(N)] if stall else None
        node_levels = ["rtl" if lv == "verilator" else lv for lv in levels]
        s.cnet = ClusterNet(ccfg, rcfgs, node_levels, link_level, False, stalls)
        s.host = HostCL(ccfg.engines[0], net, fmt, images, labels, cprog.batch, ccfg.engines[-1].P, cprog.image_pack)
        s.side = HostSideCL(ccfg.engines[0].stream_bits, [p.host_in for p in cprog.nodes], ccfg.lanes)
        s.host.img_out //= s.cnet.img
        s.cnet.logit //= s.host.logit_in
        s.host.grad_out //= s.cnet.grad
        s.cnet.up //= s.host.up_in
        for j in range(N):
            s.side.to_node[j] //= s.cnet.host_in[j]
            s.cnet.host_out[j] //= s.side.from_node[j]
        # the program bus, driven by load_programs
        s.prog_node = InPort(8)
        s.prog_we = InPort()
        s.prog_sel = InPort()
        s.prog_addr = InPort(16)
        s.prog_data = InPort(isa.instr_type())
        s.tab_data = InPort(32)
        for name in ("prog_node", "prog_we", "prog_sel", "prog_addr", "prog_data", "tab_data"):
            connect(getattr(s, name), getattr(s.cnet, name))

    def line_trace(s):
        return s.cnet.line_trace() + " " + s.host.line_trace()


def load_programs(top, cprog, levels) -> None:
    """Write every node's program: RTL nodes through the program bus, one word per cycle with
    reset high, CL/FL routers directly, then :data:`~pymtl_fp.cluster.hw.router_config.BOOT_EDGES`
    edges with the bus idle (a pipelined sequencer's first reads).  Leaves reset high; the caller
    releases it."""
    cnet = top.cnet
    InstrT = isa.instr_type()
    Word = mk_bits(isa.INSTR_BITS)
    top.reset @= 1
    for j, (lv, prog) in enumerate(zip(levels, cprog.nodes)):
        if lv in ("fl", "cl"):
            cnet.nodes[j].router.load_program(prog.ops, prog.table)
            continue
        top.prog_node @= j
        for sel, words in ((0, prog.ops), (1, prog.table)):
            for addr, w in enumerate(words):
                top.prog_we @= 1
                top.prog_sel @= sel
                top.prog_addr @= addr
                if sel:
                    top.tab_data @= w
                else:
                    top.prog_data @= InstrT.from_bits(Word(isa.encode(w)))
                top.sim_tick()
    top.prog_we @= 0
    for _ in range(BOOT_EDGES):
        top.sim_tick()
