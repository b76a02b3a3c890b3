"""The code-generation plan of one node: everything the passes over it share.

Code generation for a node runs passes (:mod:`~pymtl_fp.cluster.compiler.codegen`) over one
:class:`NodePlan`, grouped into small typed parts:

* :attr:`~NodePlan.node` (:class:`~pymtl_fp.cluster.compiler.geometry.NodeSpec`): what the node computes
  (fixed);
* :attr:`~NodePlan.opts` (:class:`Options`): the dataflow options (overlap, weight gradients, row bands);
* :attr:`~NodePlan.home` (:class:`WeightHome`): layers whose weights a neighbour keeps, and those the
  node keeps for one;
* :attr:`~NodePlan.keep` (:class:`Keep`): which images' tensors stay on chip, and O's result slots;
* :attr:`~NodePlan.flow` (:class:`Flow`): what passes hand each other across images and nodes;
* :attr:`~NodePlan.alloc` and :attr:`~NodePlan.prog`: the buffer plan and the program being built;
* :attr:`~NodePlan.emit` (:class:`~pymtl_fp.cluster.compiler.emit.Emitter`): the instruction list, its
  tables and counters, and the primitive sequences;
* :attr:`~NodePlan.regions` (:class:`~pymtl_fp.cluster.compiler.regions.Regions`): where image ``b``'s
  tensors live.

A pass is a :class:`Pass` (a small class over the plan's parts) or a function of the plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pymtl_fp.cluster.compiler.buffers import Alloc
from pymtl_fp.cluster.compiler.emit import Emitter
from pymtl_fp.cluster.compiler.geometry import NodeSpec
from pymtl_fp.cluster.compiler.program import NodeProgram
from pymtl_fp.cluster.compiler.regions import Regions


@dataclass
class Options:
    """The dataflow options of a node's code generation.  ``ovl``: every engine command may
    overlap earlier ones (results alternate between two O slots per direction); ``wgrad``: weight
    gradients over the batch, per image or ``auto`` (:data:`~pymtl_fp.cluster.compiler.schedule.WGRAD`);
    ``band_rows``: rows per band of the forward pass (0: whole layers), ``bands_backward``: the
    backward passes in bands too; ``band_images``: per node, the images whose forward passes run
    in bands (None: every image)."""

    ovl: int = 0
    wgrad: str = "batch"
    band_rows: int = 0
    bands_backward: bool = False
    band_images: list | None = None

    def banded(self, j, b) -> bool:
        """Does node ``j``'s forward pass of image ``b`` run in bands?"""
        return bool(self.band_rows) and (self.band_images is None or b in self.band_images[j])

    def forward_flow(self, j, b) -> str:
        """The dataflow of node ``j``'s forward pass of image ``b``
        (:data:`~pymtl_fp.cluster.compiler.codegen.FORWARD`)."""
        return "bands" if self.banded(j, b) else "layers"

    def backward_flow(self) -> str:
        """The dataflow of the backward passes (:data:`~pymtl_fp.cluster.compiler.codegen.BACKWARD`)."""
        return "bands" if self.bands_backward else "layers"


@dataclass
class WeightHome:
    """Layers whose weights a neighbour keeps (``remote``: ``{layer: home}``), the layers this node
    keeps for a neighbour (``hosted``: ``[(user, layer)]``) and the order it sends them in
    (``home_plan``, :class:`~pymtl_fp.cluster.compiler.weights_home.HomePlan`); ``stage_slots``: the
    staging slots of streamed chunks; ``link_log``: a user's or home's link events, once its step
    is emitted (:mod:`~pymtl_fp.cluster.compiler.weights_home`)."""

    remote: dict = field(default_factory=dict)
    hosted: list = field(default_factory=list)
    home_plan: object = None
    stage_slots: int = 2
    link_log: list | None = None

    def is_remote(self, it) -> bool:
        return not it.pool and it.layer in self.remote


@dataclass
class Keep:
    """Which images' tensors the node keeps: ``per_image``, the items whose weight gradients are
    computed per image and summed in B (the rest: over the batch at the step's end); ``slots``, the
    images whose layer inputs (and pool argmaxes) it keeps, ``dy_slots`` those whose output
    gradients (image ``b`` in slot ``b % slots``; the whole batch unless the schedule frees an
    image's tensors with its backward pass, :func:`~pymtl_fp.cluster.compiler.regions.keep_in_flight`);
    ``o_fwd`` / ``o_bwd``: words of the largest one-image result each direction writes to O."""

    per_image: frozenset = frozenset()
    slots: int = 0
    dy_slots: int = 0
    o_fwd: int = 0
    o_bwd: int = 0


@dataclass
class Flow:
    """What the passes hand each other: ``received``, image -> input pieces already LOADed (row
    bands); ``sent``, image -> the pieces its banded forward pass sent to the next node, in order;
    ``upstream_sent``, the previous node's ``sent``; ``upstream_passes``, the previous node's
    modelled forward and backward compute per image (0: the host sends the input); ``dy_loaded``:
    the output gradients of the last item are already LOADed (a replica's last stage takes all of
    its share's loss gradients before passing the others' on)."""

    received: dict = field(default_factory=dict)
    sent: dict = field(default_factory=dict)
    upstream_sent: dict = field(default_factory=dict)
    upstream_passes: int = 0
    dy_loaded: bool = False


@dataclass(eq=False)
class NodePlan:
    """One node's code-generation plan (module docstring)."""

    node: NodeSpec
    opts: Options
    home: WeightHome
    keep: Keep
    flow: Flow
    alloc: Alloc
    prog: NodeProgram
    emit: Emitter = field(init=False)
    regions: Regions = field(init=False)

    def __post_init__(self):
        self.emit = Emitter(self.node, self.prog, self.alloc, self.opts.ovl)
        self.regions = Regions(self.node, self.keep, self.alloc, self.home, self.emit)


def make_plan(j, ecfg, net, part, cfg, shifts, fmt, Ps=None, overlap=False, wgrad="batch", bands=0,
              bands_backward=False, placement=None, home_plan=None, b0=0) -> NodePlan:
    """Node ``j``'s plan before any code: O's result slots allocated first (so regions allocated
    in O later never share their words), every image kept
    (:func:`~pymtl_fp.cluster.compiler.regions.keep_in_flight` narrows it)."""
    Ps = tuple(Ps) if Ps is not None else (ecfg.P,) * part.n
    node = NodeSpec(j, ecfg, net, part, cfg, shifts, fmt, Ps, b0)
    opts = Options(int(bool(overlap)), wgrad, bands, bool(bands and bands_backward))
    home = WeightHome(placement.remote(j), placement.hosted(j), home_plan, placement.slots.get(j, 2)) \
        if placement else WeightHome(home_plan=home_plan)
    alloc = Alloc(ecfg)
    plan = NodePlan(node, opts, home, Keep(slots=part.batch, dy_slots=part.batch), Flow(), alloc,
                    NodeProgram(j, alloc=alloc))
    keep = plan.keep
    keep.o_fwd, keep.o_bwd = plan.regions.o_results()
    if opts.ovl:  # two slots per direction
        alloc.get("O", "slots", 2 * (keep.o_fwd + keep.o_bwd))
    else:
        alloc.get("O", "slots", max(keep.o_fwd, keep.o_bwd))
    return plan


class Pass:
    """A code-generation pass over one node's plan: its parts as attributes (``node``, ``opts``,
    ``home``, ``keep``, ``flow``, ``alloc``, ``prog``, ``regions``, and ``em``: the emitter)."""

    def __init__(self, plan: NodePlan):
        self.plan = plan
        self.node, self.opts, self.home, self.keep, self.flow = plan.node, plan.opts, plan.home, plan.keep, plan.flow
        self.alloc, self.prog, self.em, self.regions = plan.alloc, plan.prog, plan.emit, plan.regions
