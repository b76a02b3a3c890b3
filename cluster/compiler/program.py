"""What the compiler produces: one program per node and the cluster-wide figures around them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.buffers import Alloc


class Relayout(NamedTuple):
    """What a GATHER re-lays out: a tensor of ``kind`` (``act``/``weight``) and ``shape`` from
    array side ``pa``'s layout to ``pb``'s."""

    kind: str
    shape: tuple
    pa: int
    pb: int


@dataclass
class NodeProgram:
    node: int
    ops: list = field(default_factory=list)       #: :class:`~pymtl_fp.cluster.isa.Instr`, HALT last
    table: list = field(default_factory=list)     #: gather-table words
    host_in: list = field(default_factory=list)   #: what the host streams to the node (initial weights)
    host_out: list = field(default_factory=list)  #: (key, elements) the node streams back, in order
    alloc: Alloc | None = None
    scratch_peak: int = 0                         #: elements the scratch FIFO must hold
    relayouts: list = field(default_factory=list)  #: a :class:`Relayout` per GATHER, in program order
    #: modelled serial cycles per step: compute and LOAD/STORE occupancy (the engine's timing model)
    compute_cycles: int = 0
    io_cycles: int = 0
    macs: int = 0
    link_elems: dict = field(default_factory=dict)  # per step: port -> elements
    skip_elems: dict = field(default_factory=dict)  # per step: port -> elements of residual skips (and their gradients)
    #: modelled compute cycles per step in each phase: fwd (B images), bwd (B images), upd (the
    #: per-image updates of a per-image schedule), wg (the step's weight phase)
    phase_compute: dict = field(default_factory=dict)
    loop: tuple = (0, 0)  #: the step loop's first and last instruction
    longest_command: int = 0  #: cycles of the longest engine command (the watchdog's yardstick)
    notes: dict = field(default_factory=dict)  #: instruction index -> the layer of a compute command, or a skip's move
    #: per step, elements of all-reduces (its own and those it passes on) per link port
    collective_elems: dict = field(default_factory=dict)
    #: the largest all-reduce chunk a STORE or MOVE of this node sends towards a link: what each of
    #: its router's output buffers must hold (:mod:`~pymtl_fp.cluster.compiler.collectives`; 0: none)
    collective_chunk: int = 0
    #: instruction index -> useful MACs of a tap-packed compute command (its fields count the
    #: packed input's padding zeros too; the energy model takes these instead)
    useful_macs: dict = field(default_factory=dict)
    #: LOAD blocks moved earlier per step (:mod:`~pymtl_fp.cluster.compiler.hoist`): ``dy`` (a backward
    #: pass's output gradient, beside the weight gradients before it) and ``input`` (the next
    #: forward pass's input, in front of the backward pass)
    hoisted: dict = field(default_factory=dict)

    @property
    def residual(self) -> bool:
        """Whether the program runs the router's residual unit (ADD, MASK, GAP, GAPB)."""
        return any(ins.kind in isa.RES_KINDS for ins in self.ops)

    def image_compute(self, *phases) -> int:
        """Modelled compute cycles per step of the image passes (``phases``; default: forward,
        backward, per-image weight gradients and updates: what the steady state is bounded by)."""
        return sum(self.phase_compute.get(k, 0) for k in (phases or ("fwd", "bwd", "wgi", "upd")))

    def words(self) -> list:
        """The program as binary instruction words."""
        return [isa.encode(i) for i in self.ops]

    def op_counts(self, steps: int) -> dict:
        """Engine commands executed per kind (``fwd``, ``load``, ...) over the run."""
        lo, hi = self.loop
        out = {}
        for i, ins in enumerate(self.ops):
            if ins.kind not in (isa.ENG, isa.LOAD, isa.STORE):
                continue
            name = {isa.LOAD: "load", isa.STORE: "store"}.get(ins.kind) or isa_op_name(ins)
            out[name] = out.get(name, 0) + (steps if lo <= i <= hi else 1)
        return out


def isa_op_name(ins) -> str:
    from pymtl_fp.engine.msgs import OP_NAMES

    return OP_NAMES[ins.field("op")]


@dataclass
class ClusterProgram:
    nodes: list
    host_in_elems: int       #: elements of one image as node 0 receives it
    logit_elems: int         #: elements of one image's logits / dlogits
    out_shape: tuple         #: (K, Ho, Wo) of the network output
    steps: int
    batch: int
    overlap: bool = False    #: engine commands carry ovl = 1
    schedule: str = "1f1b"   #: order of the image passes in a step (:func:`~pymtl_fp.cluster.compiler.schedule.step_order`)
    #: data-parallel / hybrid layout (:class:`~pymtl_fp.cluster.compiler.replicas.Replicas`), or None
    replicas: object = None
    #: the first layer tap-packed: the host sends ``packing.pack_input(image, *image_pack)``
    #: (``(R, S, stride, pad)``), or None: the images themselves
    image_pack: tuple | None = None
    #: when the weight gradients are computed (:data:`~pymtl_fp.cluster.compiler.schedule.WGRAD`)
    wgrad: str = "batch"
    #: rows per band of the forward passes (:mod:`pymtl_fp.cluster.compiler.bands`; 0: whole layers)
    bands: int = 0
    #: the backward passes in row bands too
    bands_backward: bool = False
    #: every forward pass in bands, not only the pipeline's fill (:func:`~pymtl_fp.cluster.compiler.schedule.fill_passes`)
    bands_all: bool = False
    #: layers whose weights a neighbour keeps (:class:`~pymtl_fp.cluster.compiler.weights_home.Placement`), or None
    placement: object = None
