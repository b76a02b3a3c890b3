"""The PyMTL3 cluster top: nodes (engine + router/DMA), links, and the host at the chain's ends.

::

    host.img_out -L-> node0 -L-> node1 -L-> ... -L-> node(N-1) -L-> host.logit_in      (forward)
    host.up_in  <-   node0 <-L- node1 <-L- ... <-L- node(N-1) <-L- host.grad_out        (backward)

A ring (:mod:`pymtl_fp.cluster.config`) attaches the host to node 0 only: node N-1's logits take
``-L(ring)-> -L->`` through node 0's board to ``host.logit_in``, and the loss gradients take
``host.grad_out -L-> -L(ring)->`` to node N-1.

Each node is an engine at its own level (``fl``, ``cl``, ``rtl`` or ``verilator``) plus a
:class:`~pymtl_fp.cluster.router.RouterCL`.  Every link (``2N + 1`` of them: the host's three and two per
pair of neighbours) is a ``Link<level>(Bits<stream_bits>, link_cfg)``.  Node 0's ``bwd_out``
goes straight to the host (nothing travels on it: the first layer has no data gradient).  The host
sends images in node 0's layout and takes logits / sends loss gradients in node N-1's (their ``P``
may differ).
"""

from __future__ import annotations

from pymtl3 import Component
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.cluster.config import ClusterError, engine_level_available, link_plan
from pymtl_fp.cluster.host import HostCL
from pymtl_fp.cluster.router import RouterCL
from pymtl_fp.engine.msgs import data_type


def engine_class(level: str):
    if level == "fl":
        from pymtl_fp.engine.EngineFL import EngineFL
        return EngineFL
    if level == "cl":
        if not engine_level_available("cl"):
            raise ClusterError("engine level cl is not available yet (EngineCL arrives with the "
                               "engine's cycle-level model); use fl, rtl, verilator or mixed")
        from pymtl_fp.engine.EngineCL import EngineCL
        return EngineCL
    if level in ("rtl", "verilator"):
        from pymtl_fp.engine.EngineRTL import EngineRTL
        return EngineRTL
    raise ClusterError(f"unknown engine level {level!r}")


def link_class(level: str):
    if level == "fl":
        from pymtl_fp.link.LinkFL import LinkFL
        return LinkFL
    if level == "cl":
        from pymtl_fp.link.LinkCL import LinkCL
        return LinkCL
    if level == "rtl":
        from pymtl_fp.link.LinkRTL import LinkRTL
        return LinkRTL
    raise ClusterError(f"unknown link level {level!r}")


class NodeTop(Component):
    """One FPGA: an engine and its router/DMA."""

    def construct(s, ecfg, ops, level, index=0, stall=None):
        s.level = level
        s.engine = engine_class(level)(ecfg)
        s.router = RouterCL(ecfg, ops, timed=(level == "fl"), name=f"node{index}", stall=stall)
        s.router.cmd //= s.engine.cmd
        s.router.din //= s.engine.din
        s.engine.dout //= s.router.dout
        s.router.busy //= s.engine.busy
        T = data_type(ecfg)
        s.fwd_in, s.bwd_in = RecvIfcRTL(T), RecvIfcRTL(T)
        s.fwd_out, s.bwd_out = SendIfcRTL(T), SendIfcRTL(T)
        s.fwd_in //= s.router.fwd_in
        s.bwd_in //= s.router.bwd_in
        s.router.fwd_out //= s.fwd_out
        s.router.bwd_out //= s.bwd_out


class ClusterTop(Component):
    def construct(s, ccfg, cprog, levels, link_level, net, fmt, images, labels, stall=None):
        N = ccfg.n
        MsgT = data_type(ccfg.engines[0])
        Link = link_class(link_level)
        s.nodes = [NodeTop(ccfg.engines[j], cprog.nodes[j].ops, levels[j], j,
                           stall=(stall[0], stall[1] + 7919 * j) if stall else None) for j in range(N)]
        s.host = HostCL(ccfg.engines[0], net, fmt, images, labels, cprog.batch, p_out=ccfg.engines[-1].P)
        plan = link_plan(N, ccfg.topology)
        fwd_names = [nm for nm, d, _ in plan if d == "fwd"]
        bwd_names = [nm for nm, d, _ in plan if d == "bwd"]
        s.fwd_links = [Link(MsgT, ccfg.link_cfg(nm)) for nm in fwd_names]  # host->0, 0->1, ..., to the host
        s.bwd_links = [Link(MsgT, ccfg.link_cfg(nm)) for nm in bwd_names]  # 1->0, ..., from the host
        s.host.img_out //= s.fwd_links[0].recv
        s.fwd_links[0].send //= s.nodes[0].fwd_in
        for j in range(N):
            s.nodes[j].fwd_out //= s.fwd_links[j + 1].recv
            if j + 1 < N:
                s.fwd_links[j + 1].send //= s.nodes[j + 1].fwd_in
        for j in range(1, N):
            s.nodes[j].bwd_out //= s.bwd_links[j - 1].recv
            s.bwd_links[j - 1].send //= s.nodes[j - 1].bwd_in
        # logits to the host, loss gradients from it: one link (chain), or the ring link and the
        # host link of node 0 back to back (node 0's board passes them through)
        for i in range(N, len(fwd_names) - 1):
            s.fwd_links[i].send //= s.fwd_links[i + 1].recv
        s.fwd_links[-1].send //= s.host.logit_in
        s.host.grad_out //= s.bwd_links[N - 1].recv
        for i in range(N - 1, len(bwd_names) - 1):
            s.bwd_links[i].send //= s.bwd_links[i + 1].recv
        s.bwd_links[-1].send //= s.nodes[N - 1].bwd_in
        s.nodes[0].bwd_out //= s.host.up_in

    def line_trace(s):
        return " ".join(n.router.line_trace() for n in s.nodes) + " " + s.host.line_trace()
