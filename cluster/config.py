"""Cluster descriptions: nodes (each with its own :class:`EngineConfig`), links, topology, levels.

A :class:`ClusterConfig` is elaboration data only (what hardware exists); the network, the
partition and the per-node programs are derived from it by :mod:`pymtl_fp.cluster.compiler.partition` and
:mod:`pymtl_fp.cluster.compiler.compile`.

* ``engines``: one :class:`~pymtl_fp.engine.config.EngineConfig` per node.  Nodes may differ in
  array side ``P`` (``rows``) and buffer depths; a tensor that crosses from a node with ``P_a`` to
  one with ``P_b`` is re-laid out by the receiver's DMA (:mod:`pymtl_fp.cluster.compiler.compile`).  They must share
  the word widths, ``stream_bits`` and ``stream_lanes`` (``E`` elements per beat on every stream:
  din/dout, the routers, the links and the host; checked).
* ``link``: the :class:`~pymtl_fp.link.config.LinkConfig` of every node-to-node link and of the
  host links (``msg_bits`` must equal ``E * stream_bits``: one beat of ``E`` tensor elements per
  message).
* ``link_overrides``: ``{link name: LinkConfig}`` for links that differ from ``link``; names are
  ``host->node0``, ``nodeI->nodeJ`` (neighbours, either direction), ``nodeN-1->host`` and
  ``host->nodeN-1`` in a chain; a ring's are in :func:`link_names`.
* ``topology``: ``"chain"`` (host -> node 0 -> ... -> node N-1 -> host, and back) or ``"ring"``:
  the host is attached to node 0 only (as one board of a ring has the host's PCIe link) and a
  ring link closes the chain in each direction: node N-1's logits travel
  ``ring:nodeN-1->node0`` and then ``node0->host``; the host's loss gradients travel
  ``host->node0:grad`` and then ``ring:node0->nodeN-1`` (node 0's board passes both through
  without its engine).  The node programs are the same; a ring needs at least 2 nodes.
* ``clock_mhz``: the clock that turns cycles into images/s, energy and trace time in reports; ``None``
  (the default): the clock the slowest node's RTL reaches (:attr:`ClusterConfig.clock`,
  :mod:`pymtl_fp.clock`: a recorded pre-route path times a routing allowance).
* ``fpga_family``: the device family whose energy constants price the run's activity in reports
  (:mod:`pymtl_fp.energy`; one node is one FPGA).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pymtl_fp.engine.config import CLUSTER_DEPTHS, DEFAULT_PIPELINES, EngineConfig
from pymtl_fp.levels import LEVELS
from pymtl_fp.link.config import MAX_WINDOW, LinkConfig

TOPOLOGIES = ("chain", "ring")
#: most nodes in one cluster: the host and node ids travel in 8-bit fields nowhere, but a
#: simulated cluster elaborates every node, so a typo (500 nodes) is refused before that
MAX_NODES = 64
#: longest latency of a cluster link (:func:`default_link`): full rate needs a retransmission window of
#: the round trip, ``2 * latency + 2`` one-flit messages, and the window holds at most ``MAX_WINDOW``
MAX_LINK_LATENCY = (MAX_WINDOW - 2) // 2
#: most elements per beat (the router's limit)
MAX_LANES = 16
#: what each cluster level runs: (node level, link level)
CLUSTER_LEVELS = {
    "fl": ("fl", "cl"),          # EngineFL + RouterCL (timed compute), LinkCL
    "cl": ("cl", "cl"),          # EngineCL + RouterCL, LinkCL
    "rtl": ("rtl", "rtl"),       # NodeRTL (EngineRTL + RouterRTL) and LinkRTL, simulated by PyMTL3
    "verilator": ("verilator", "rtl"),  # the whole RTL cluster in Verilator (or a NodeRTL imported alone)
}
ENGINE_LEVELS = LEVELS


class ClusterError(ValueError):
    """A cluster description, partition or mapping that cannot run (raised before simulation)."""


def default_link(stream_bits: int = 32, latency: int = 8, lanes: int = 1) -> LinkConfig:
    """One beat of ``lanes`` elements (``lanes * stream_bits``) per cycle, ``latency`` cycles, enough
    credits for full rate, CRC on."""
    bits = lanes * stream_bits
    probe = LinkConfig(msg_bits=bits, phit_bits=bits, latency=latency, credit_latency=latency, credits=1,
                       crc=True)
    return LinkConfig(msg_bits=bits, phit_bits=bits, latency=latency, credit_latency=latency,
                      credits=max(2, probe.min_credits), crc=True,
                      name=f"cluster_l{latency}" + (f"_e{lanes}" if lanes > 1 else ""))


def link_flits(ccfg, flits: int):
    """``ccfg`` with every link ``flits`` times slower: a message in ``flits`` flits of ``1/flits`` of its
    bits (``phit_bits``), the credits raised so that the link runs at that rate."""
    if flits == 1:
        return ccfg
    bits = ccfg.link.msg_bits
    if bits % flits:
        raise ClusterError(f"a link message of {bits} bits does not split into {flits} flits")
    link = ccfg.link.replace(phit_bits=bits // flits, credits=1, name=f"{ccfg.link.name}_f{flits}")
    return ccfg.replace(link=link.replace(credits=max(2, link.min_credits)))


def engine_for_net(net, precision: str, *, P: int = 4, act_depth: int = CLUSTER_DEPTHS["act_depth"],
                   weight_depth: int = CLUSTER_DEPTHS["weight_depth"], bias_depth: int = CLUSTER_DEPTHS["bias_depth"],
                   stochastic: bool = True) -> EngineConfig:
    """An engine whose word widths are the net's formats at ``precision``, with the presets' pipelines
    (:data:`~pymtl_fp.engine.config.DEFAULT_PIPELINES`)."""
    fmt = net.precision(precision)
    if fmt.wgrad.bits != fmt.grad.bits:
        raise ClusterError(
            f"{net.name}/{precision}: the engine writes weight gradients in the gradient width "
            f"({fmt.grad.bits} bits) but the format asks for wgrad {fmt.wgrad.bits} bits")
    data = max(fmt.act.bits, fmt.weight.bits, fmt.grad.bits)
    acc = max(32, 2 * data + 2, fmt.bias_bits)
    stream = 32 if acc <= 32 else 64
    return EngineConfig(rows=P, cols=P, act_bits=fmt.act.bits, weight_bits=fmt.weight.bits,
                        grad_bits=fmt.grad.bits, acc_bits=acc, act_depth=act_depth,
                        weight_depth=weight_depth, bias_depth=bias_depth, stream_bits=stream,
                        stochastic=stochastic, name=f"cluster{P}", **DEFAULT_PIPELINES)


@dataclass(frozen=True)
class ClusterConfig:
    engines: tuple
    link: LinkConfig
    topology: str = "chain"
    clock_mhz: float | None = None
    fpga_family: str = "ultrascale+"
    link_overrides: dict = dataclasses.field(default_factory=dict, hash=False)

    def __post_init__(self):
        engines = tuple(self.engines)
        object.__setattr__(self, "engines", engines)
        if not engines:
            raise ClusterError("a cluster needs at least one node")
        if len(engines) > MAX_NODES:
            raise ClusterError(f"{len(engines)} nodes; a cluster has at most {MAX_NODES}")
        for i, e in enumerate(engines):
            if not isinstance(e, EngineConfig):
                raise ClusterError(f"node {i}: engine must be an EngineConfig, got {e!r}")
            E = e.stream_lanes
            if E & (E - 1) or E > MAX_LANES:
                raise ClusterError(f"node {i}: engine stream_lanes={E}; a cluster's routers move beats of a power "
                                   f"of two up to {MAX_LANES} elements")
        first = engines[0]
        for i, e in enumerate(engines[1:], 1):
            for f in ("act_bits", "weight_bits", "grad_bits", "stream_bits", "stream_lanes"):
                if getattr(e, f) != getattr(first, f):
                    raise ClusterError(
                        f"node {i}: {f}={getattr(e, f)} differs from node 0's {getattr(first, f)}; "
                        f"nodes may differ in array side, buffer depths and accumulator width only "
                        f"(tensor elements travel between nodes one per {first.stream_bits}-bit message "
                        f"in the same number formats)")
        if not isinstance(self.link, LinkConfig):
            raise ClusterError(f"link must be a LinkConfig, got {self.link!r}")
        if self.link.msg_bits != first.beat_bits:
            raise ClusterError(f"link msg_bits={self.link.msg_bits} must equal the engines' beat of "
                               f"{first.stream_lanes} x {first.stream_bits} bits ({first.beat_bits}: one beat per message)")
        if self.topology not in TOPOLOGIES:
            raise ClusterError(f"unknown topology {self.topology!r}; choose one of {', '.join(TOPOLOGIES)}")
        if self.topology == "ring" and len(engines) < 2:
            raise ClusterError("a ring needs at least 2 nodes (one node is a chain)")
        names = link_names(len(engines), self.topology)
        for name, lc in self.link_overrides.items():
            if name not in names:
                raise ClusterError(f"link_overrides: no link named {name!r}; links: {', '.join(names)}")
            if not isinstance(lc, LinkConfig) or lc.msg_bits != first.beat_bits:
                raise ClusterError(f"link_overrides[{name!r}] must be a LinkConfig with msg_bits="
                                   f"{first.beat_bits}, got {lc!r}")
        if self.clock_mhz is not None and not 0 < self.clock_mhz < float("inf"):
            raise ClusterError(f"clock_mhz must be a finite number > 0, got {self.clock_mhz}")
        from pymtl_fp.energy.constants import fpga_families

        if self.fpga_family not in fpga_families():
            raise ClusterError(f"unknown FPGA family {self.fpga_family!r}; choose one of {', '.join(fpga_families())}")

    @property
    def n(self) -> int:
        return len(self.engines)

    @property
    def clock(self):
        """The clock that turns cycles into time (:class:`pymtl_fp.clock.ClockEstimate`): ``clock_mhz`` as
        given, or (``None``) the clock the slowest node's RTL reaches (:func:`pymtl_fp.clock.rtl_clock`)."""
        from pymtl_fp.clock import cluster_clock

        return cluster_clock(self.engines, self.clock_mhz)

    def link_cfg(self, name: str) -> LinkConfig:
        """The config of the link called ``name`` (see :func:`link_names`)."""
        return self.link_overrides.get(name, self.link)

    @property
    def lanes(self) -> int:
        """``E``: elements per beat on every stream of the cluster."""
        return self.engines[0].stream_lanes

    @property
    def P(self) -> int:
        """The nodes' common array side; a :class:`ClusterError` when they differ (mixed ``P``):
        a caller then says which side it needs -- :attr:`P_in` (node 0's, the images' layout),
        :attr:`P_out` (node N-1's, the logits' layout) or the partition's grid unit
        (:func:`~pymtl_fp.cluster.compiler.partition.grid_unit`)."""
        if self.mixed_p:
            raise ClusterError(f"the nodes' array sides differ (P = {list(self.Ps)}): no one P of the cluster; "
                               "use P_in (node 0's), P_out (node N-1's) or Ps")
        return self.engines[0].P

    @property
    def P_in(self) -> int:
        """Node 0's array side: the layout of the images the host sends."""
        return self.engines[0].P

    @property
    def P_out(self) -> int:
        """Node N-1's array side: the layout of the logits and loss gradients at the host."""
        return self.engines[-1].P

    @property
    def Ps(self) -> tuple:
        """Every node's array side ``P``, in chain order."""
        return tuple(e.P for e in self.engines)

    @property
    def mixed_p(self) -> bool:
        return len(set(self.Ps)) > 1

    @classmethod
    def homogeneous(cls, n: int, engine: EngineConfig, link: LinkConfig | None = None, **kw):
        if not isinstance(n, int) or n < 1:
            raise ClusterError(f"number of nodes must be >= 1, got {n!r}")
        return cls((engine,) * n, link or default_link(engine.stream_bits, lanes=engine.stream_lanes), **kw)

    def replace(self, **changes) -> ClusterConfig:
        return dataclasses.replace(self, **changes)


def link_plan(n: int, topology: str = "chain") -> list:
    """Every link as ``(name, direction, carries)``: direction ``fwd`` or ``bwd``; ``carries`` is
    ``"images"``, ``("fwd", j)`` (node j's forward output to node j+1), ``("bwd", j)`` (node
    j+1's backward output to node j), ``"logits"`` or ``"grads"`` (loss gradients).  In report
    order: the images' link, each pair of neighbours (forward, backward), then the host's links;
    within a direction, in the order its data travels (see the module docstring)."""
    plan = [("host->node0", "fwd", "images")]
    for j in range(n - 1):
        plan += [(f"node{j}->node{j + 1}", "fwd", ("fwd", j)), (f"node{j + 1}->node{j}", "bwd", ("bwd", j))]
    if topology == "ring":
        plan += [(f"ring:node{n - 1}->node0", "fwd", "logits"), ("node0->host", "fwd", "logits"),
                 ("host->node0:grad", "bwd", "grads"), (f"ring:node0->node{n - 1}", "bwd", "grads")]
    else:  # (one node: the host's two links into node 0 need two names)
        plan += [(f"node{n - 1}->host", "fwd", "logits"),
                 ("host->node0:grad" if n == 1 else f"host->node{n - 1}", "bwd", "grads")]
    return plan


def link_names(n: int, topology: str = "chain") -> list:
    """Every link's name (:func:`link_plan`): chain ``host->node0, node0->node1, node1->node0,
    ..., nodeN-1->host, host->nodeN-1``; a ring ends with ``ring:nodeN-1->node0, node0->host,
    host->node0:grad, ring:node0->nodeN-1``."""
    return [name for name, _, _ in link_plan(n, topology)]



def node_levels(level: str, n: int, node_levels: str | list | None = None) -> list:
    """Per-node engine levels for a cluster level (``mixed``: node 0 ``rtl``, the others ``fl``,
    unless ``node_levels`` gives them, e.g. ``"rtl,fl,fl,fl"``)."""
    if node_levels is not None:
        levels = node_levels.split(",") if isinstance(node_levels, str) else list(node_levels)
        levels = [lv.strip() for lv in levels]
        if len(levels) != n:
            raise ClusterError(f"{len(levels)} node levels given for {n} nodes")
    elif level == "mixed":
        levels = ["rtl"] + ["fl"] * (n - 1) if n > 1 else ["rtl"]
    elif level in CLUSTER_LEVELS:
        levels = [CLUSTER_LEVELS[level][0]] * n
    else:
        raise ClusterError(f"unknown level {level!r}; choose one of {', '.join(list(CLUSTER_LEVELS) + ['mixed'])}")
    for lv in levels:
        if lv not in ENGINE_LEVELS:
            raise ClusterError(f"unknown engine level {lv!r}; choose from {', '.join(ENGINE_LEVELS)}")
    return levels


def cluster_for_net(net, precision: str = "8", arrays=(4, 4, 4, 4), *, link_latency: int = 8, stream_lanes: int = 1,
                    pipelines: dict | None = None, clock_mhz: float | None = None, topology: str = "chain",
                    fpga_family: str = "ultrascale+", **depths) -> ClusterConfig:
    """The cluster ``pymtl-fp train --engine cluster`` builds from its options: one engine per entry
    of ``arrays`` (its MAC array side) with the word widths of ``net`` at ``precision``
    (:func:`engine_for_net`; ``depths``: ``act_depth``, ``weight_depth``, ``bias_depth``), ``stream_lanes``
    elements per beat, the engine ``pipelines`` (``EngineConfig`` fields, as
    :func:`pymtl_fp.engine.config.pipeline_fields` returns them), and full-rate links of
    ``link_latency`` cycles (:func:`default_link`).  The defaults are the command's."""
    if not len(arrays):
        raise ClusterError("a cluster has at least one node")
    engines = [engine_for_net(net, precision, P=p, **depths).replace(stream_lanes=stream_lanes, **(pipelines or {}))
               for p in arrays]
    link = default_link(engines[0].stream_bits, link_latency, stream_lanes)
    return ClusterConfig(tuple(engines), link, clock_mhz=clock_mhz, topology=topology, fpga_family=fpga_family)
