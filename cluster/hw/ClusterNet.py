"""The cluster's hardware without its host: N nodes joined by links, at any mix of levels; all at
RTL (:class:`ClusterRTL`) it is one synthesizable Verilog top.

::

    img -L-> node0 -L-> node1 -L-> ... -L-> node(N-1) -L-> logit          (forward)
    up  <--  node0 <-L- node1 <-L- ... <-L- node(N-1) <-L- grad           (backward)

A ring (:mod:`pymtl_fp.cluster.config`) attaches the host to node 0 only: node N-1's logits take
``-L(ring)-> -L->`` through node 0's board to ``logit``, and the loss gradients ``grad -L->
-L(ring)->`` to node N-1.  Every link of :func:`~pymtl_fp.cluster.config.link_plan` is a whole link
(LinkRTL: transmitter, channel, receiver; or LinkCL/LinkFL) of the cluster's link config.

Host-facing ports: ``img``, ``grad`` (in) and ``logit``, ``up`` (out, node 0's backward output:
nothing travels on it), each node's side channel ``host_in[j]``/``host_out[j]``, one program bus
(``prog_node`` selects the node; written while reset is high) and each node's status outputs
``n<j>_<name>``.  With ``faults=True`` (RTL links only) every link's channel has a fault injector
(:class:`~pymtl_fp.link.FaultyChannelRTL.FaultyChannelRTL`), configured by ``f_seed``, ``f_drop``,
``f_burst``, ``f_flip`` (per-flit rates in units of ``2**-16``; all 0 = off) and reporting per link
``lk_status[i]`` (retransmissions, CRC errors, ...) and ``lk_dropped[i]``/``lk_flipped[i]``.
"""

from __future__ import annotations

from pymtl3 import Bits8, Component, InPort, OutPort, connect, update
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.config import ClusterError, link_plan
from pymtl_fp.cluster.hw.node import BUS, NODE_LEVELS, node_params, router_config_for
from pymtl_fp.cluster.hw.router_config import RouterConfig, status_ports
from pymtl_fp.engine.msgs import data_type
from pymtl_fp.link.status import LinkStatus


def link_class(level: str):
    from pymtl_fp.link import LINK_LEVELS

    if level not in LINK_LEVELS:
        raise ClusterError(f"unknown link level {level!r}; choose one of {', '.join(LINK_LEVELS)}")
    return LINK_LEVELS[level]


def cluster_params(ccfg, rcfgs, faults: bool) -> dict:
    p = {}
    for j, (e, r) in enumerate(zip(ccfg.engines, rcfgs)):
        p.update({f"n{j}{k}": v for k, v in node_params(e, r).items()})
    for name in [n for n, _, _ in link_plan(ccfg.n, ccfg.topology)]:
        p.update({f"{name}:{k}": v for k, v in ccfg.link_cfg(name).elab_params().items()})
    p["topology"] = ccfg.topology
    p["faults"] = int(bool(faults))
    return p


def cluster_module_name(ccfg, rcfgs, faults: bool = False) -> str:
    from pymtl_fp.verilate import module_name

    return module_name(f"ClusterRTL{ccfg.n}", cluster_params(ccfg, rcfgs, faults))


class ClusterNet(Component):
    def construct(s, ccfg, rcfgs, levels, link_level="rtl", faults=False, stalls=None):
        N = ccfg.n
        if len(levels) != N or len(rcfgs) != N:
            raise ClusterError(f"{len(levels)} levels and {len(rcfgs)} router configs for {N} nodes")
        if faults and link_level != "rtl":
            raise ClusterError("link faults need RTL links")
        T = data_type(ccfg.engines[0])
        s.ccfg = ccfg
        s.n = N
        nodes = []
        for j in range(N):
            cls = NODE_LEVELS[levels[j]]
            if levels[j] == "rtl":
                nodes.append(cls(ccfg.engines[j], rcfgs[j]))
            else:
                nodes.append(cls(ccfg.engines[j], rcfgs[j], name=f"node{j}", stall=stalls[j] if stalls else None))
        s.nodes = nodes  # (assigned at once: PyMTL3 registers children on assignment)
        s.rcfgs = [router_config_for(e, r) for e, r in zip(ccfg.engines, rcfgs)]
        plan = link_plan(N, ccfg.topology)
        s.link_names = [nm for nm, _, _ in plan]
        Link = link_class(link_level)

        def make(i, name):
            if faults:
                return Link(T, ccfg.link_cfg(name), faults=True, fault_index=i)
            return Link(T, ccfg.link_cfg(name))

        fwd = [(i, nm) for i, (nm, d, _) in enumerate(plan) if d == "fwd"]
        bwd = [(i, nm) for i, (nm, d, _) in enumerate(plan) if d == "bwd"]
        links = [make(i, nm) for i, nm in enumerate(s.link_names)]
        s.links = links
        fwd_links = [links[i] for i, _ in fwd]   # host->0, 0->1, ..., to the host
        bwd_links = [links[i] for i, _ in bwd]   # 1->0, ..., from the host
        s._fwd_index = [i for i, _ in fwd]        # (the links are children under s.links only)
        s._bwd_index = [i for i, _ in bwd]

        # host-facing ports
        s.img = RecvIfcRTL(T)
        s.grad = RecvIfcRTL(T)
        s.logit = SendIfcRTL(T)
        s.up = SendIfcRTL(T)
        s.host_in = [RecvIfcRTL(T) for _ in range(N)]
        s.host_out = [SendIfcRTL(T) for _ in range(N)]

        s.img //= fwd_links[0].recv
        fwd_links[0].send //= s.nodes[0].fwd_in
        for j in range(N):
            s.nodes[j].fwd_out //= fwd_links[j + 1].recv
            if j + 1 < N:
                fwd_links[j + 1].send //= s.nodes[j + 1].fwd_in
        for j in range(1, N):
            s.nodes[j].bwd_out //= bwd_links[j - 1].recv
            bwd_links[j - 1].send //= s.nodes[j - 1].bwd_in
        nf, nb = len(fwd_links), len(bwd_links)
        for i in range(N, nf - 1):  # a ring: the ring link and node 0's host link back to back
            fwd_links[i].send //= fwd_links[i + 1].recv
        fwd_links[nf - 1].send //= s.logit
        s.grad //= bwd_links[N - 1].recv
        for i in range(N - 1, nb - 1):
            bwd_links[i].send //= bwd_links[i + 1].recv
        bwd_links[nb - 1].send //= s.nodes[N - 1].bwd_in
        s.nodes[0].bwd_out //= s.up
        for j in range(N):
            s.host_in[j] //= s.nodes[j].host_in
            s.nodes[j].host_out //= s.host_out[j]

        # the program bus, one node at a time
        s.prog_node = InPort(8)
        s.prog_we = InPort()
        s.prog_sel = InPort()
        s.prog_addr = InPort(16)
        s.prog_data = InPort(isa.instr_type())
        s.tab_data = InPort(32)
        for j in range(N):
            for name in BUS[1:]:
                connect(getattr(s.nodes[j], name), getattr(s, name))

        @update
        def up_prog_select():
            for j in range(N):
                s.nodes[j].prog_we @= s.prog_we & (s.prog_node == Bits8(j))

        # status
        for j in range(N):
            for name, bits, count in status_ports(s.rcfgs[j]):
                pname = f"n{j}_{name[3:]}"
                if count is None:
                    setattr(s, pname, OutPort(bits))
                    connect(getattr(s, pname), getattr(s.nodes[j], name))
                else:
                    setattr(s, pname, [OutPort(bits) for _ in range(count)])
                    for i in range(count):
                        connect(getattr(s, pname)[i], getattr(s.nodes[j], name)[i])
        s.lk_status = [OutPort(LinkStatus) for _ in s.links]
        for i, lk in enumerate(s.links):
            s.lk_status[i] //= lk.status
        if faults:
            s.f_seed = InPort(32)
            s.f_drop = InPort(16)
            s.f_burst = InPort(16)
            s.f_flip = InPort(16)
            s.lk_dropped = [OutPort(32) for _ in s.links]
            s.lk_flipped = [OutPort(32) for _ in s.links]
            for i, lk in enumerate(s.links):
                lk.f_seed //= s.f_seed
                lk.f_drop //= s.f_drop
                lk.f_burst //= s.f_burst
                lk.f_flip //= s.f_flip
                s.lk_dropped[i] //= lk.n_dropped
                s.lk_flipped[i] //= lk.n_flipped

    def line_trace(s):
        return " ".join(nd.line_trace() for nd in s.nodes)


class ClusterRTL(ClusterNet):
    """Every node and link at RTL: one Verilog top (its name encodes every parameter)."""

    def construct(s, ccfg, rcfgs=None, faults=False):
        from pymtl3.passes.backends.verilog import VerilogTranslationPass

        rcfgs = list(rcfgs) if rcfgs is not None else [RouterConfig()] * ccfg.n
        rcfgs = [router_config_for(e, r) for e, r in zip(ccfg.engines, rcfgs)]
        super().construct(ccfg, rcfgs, ["rtl"] * ccfg.n, "rtl", faults=faults)
        s.params = cluster_params(ccfg, s.rcfgs, faults)
        s.set_metadata(VerilogTranslationPass.explicit_module_name, cluster_module_name(ccfg, s.rcfgs, faults))
