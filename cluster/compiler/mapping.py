"""How a training run is mapped onto a cluster: one frozen, validated :class:`Mapping`.

A :class:`~pymtl_fp.cluster.config.ClusterConfig` says what hardware exists; a :class:`Mapping`
says how a run uses it -- every choice the compiler and the runner make that is not the hardware,
the network or the training hyper-parameters:

* ``parallel``, ``groups``: one pipeline over the nodes, a replica per node (``data``) or
  ``groups`` replicas of a pipeline (``hybrid``; :mod:`~pymtl_fp.cluster.compiler.replicas`);
* ``schedule``: the order of the image passes and when the weights are updated
  (:data:`~pymtl_fp.cluster.compiler.schedule.SCHEDULES`);
* ``wgrad``: weight gradients over the batch or per image
  (:data:`~pymtl_fp.cluster.compiler.schedule.WGRAD`);
* ``bands``, ``bands_backward``, ``bands_all``: FPDeep's fine-grained pipeline in row bands of
  ``bands`` output rows (0: whole layers; ``auto``: the finest height the timing model finds no
  dearer; :mod:`~pymtl_fp.cluster.compiler.bands`);
* ``pack``: the first conv layer tap-packed (:data:`~pymtl_fp.cluster.compiler.partition.TAP_PACK`);
* ``weight_home``: weights kept by a neighbour (``auto``, ``off`` or a
  :class:`~pymtl_fp.cluster.compiler.weights_home.Placement`);
* ``overlap``: engine commands overlap (LOAD/STORE beside compute);
* ``cuts``, ``split``: a forced partition (N + 1 tile positions) and whether a layer may be split
  over two nodes.

The choices that conflict whatever the net and the cluster are refused when the mapping is built,
each with a one-line :class:`~pymtl_fp.cluster.config.ClusterError`; those that depend on them
(a misfit, a split layer under backward bands, groups that do not divide the nodes) are refused by
the compiler.  So is ``wgrad`` ``image`` / ``auto`` under a per-image schedule
(:func:`~pymtl_fp.cluster.compiler.compile.check_wgrad`): the compiler reports a partition that
cannot exist (more nodes than layers) before it, and the recorded refusals of
``tests/data/compiled_digests.json`` keep that order.  :data:`TRAIN_DEFAULT` is what
``pymtl-fp train --engine cluster`` runs without options.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pymtl_fp.cluster.compiler.partition import TAP_PACK
from pymtl_fp.cluster.compiler.schedule import PER_IMAGE, SCHEDULES, WGRAD
from pymtl_fp.cluster.compiler.weights_home import WEIGHT_HOME, Placement
from pymtl_fp.cluster.config import ClusterError

#: how the nodes share the work
PARALLEL = ("pipeline", "data", "hybrid")
#: the schedules replicas run (each replica in GPipe order)
REPLICA_SCHEDULES = ("1f1b", "gpipe")


def check_schedule(schedule: str) -> None:
    if schedule not in SCHEDULES:
        raise ClusterError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")


def check_band_rows(bands) -> None:
    """Refuse a band height that is not a row count (``auto`` is resolved before compiling)."""
    if isinstance(bands, bool) or not isinstance(bands, int):
        raise ClusterError(f"--bands {bands!r}: rows per band (an integer; 0: whole layers)")
    if bands < 0:
        raise ClusterError(f"--bands {bands}: rows per band must be >= 1 (0: whole layers)")


@dataclass(frozen=True)
class Mapping:
    """Every mapping choice of a run (module docstring); validated, immutable."""

    parallel: str = "pipeline"
    groups: int | None = None
    schedule: str = "1f1b"
    wgrad: str = "batch"
    bands: int | str = 0
    bands_backward: bool = False
    bands_all: bool = False
    pack: str = "off"
    weight_home: str | Placement = "auto"
    overlap: bool = False
    cuts: tuple | None = None
    split: bool = True

    def __post_init__(self):
        if self.cuts is not None:
            object.__setattr__(self, "cuts", tuple(self.cuts))
        check_schedule(self.schedule)
        if self.wgrad not in WGRAD:
            raise ClusterError(f"unknown --wgrad {self.wgrad!r}; choose one of {', '.join(WGRAD)}")
        if self.bands != "auto":
            check_band_rows(self.bands)
        if self.bands_backward and self.bands == 0:
            raise ClusterError("--bands-backward runs the backward passes in the row bands of --bands: "
                               "not with --bands 0")
        if self.bands_all and self.bands == 0:
            raise ClusterError("--bands-all runs every forward pass in the row bands of --bands: not with --bands 0")
        if self.pack not in TAP_PACK:
            raise ClusterError(f"unknown --tap-pack {self.pack!r}; choose one of {', '.join(TAP_PACK)}")
        if not isinstance(self.weight_home, Placement) and self.weight_home not in WEIGHT_HOME:
            raise ClusterError(f"unknown --weight-home {self.weight_home!r}; choose one of {', '.join(WEIGHT_HOME)}")
        self._check_parallel()

    def _check_parallel(self) -> None:
        """The replicas' refusals that do not depend on the cluster (the rest:
        :func:`~pymtl_fp.cluster.compiler.replicas.replicas_for`)."""
        p = self.parallel
        if p not in PARALLEL:
            raise ClusterError(f"unknown --parallel {p!r}; choose one of {', '.join(PARALLEL)}")
        if p == "pipeline":
            if self.groups not in (None, 1):
                raise ClusterError("--groups is for --parallel hybrid")
            return
        if p == "hybrid" and self.groups is None:
            raise ClusterError("--parallel hybrid needs --groups G (replicas; G divides the nodes)")
        if self.bands not in (0, "auto") or self.bands_backward or self.bands_all:
            raise ClusterError(f"--parallel {p}: the replicas run whole layers (no --bands)")
        if self.wgrad != "batch":
            raise ClusterError(f"--parallel {p}: each replica computes its share's weight gradients in "
                               "one raw bwd_weight for the all-reduce (no --wgrad image)")
        if self.schedule not in REPLICA_SCHEDULES or self.cuts is not None:
            raise ClusterError(f"--parallel {p} runs each replica in GPipe order with its own partition "
                               "(no --schedule cp/sgd, no --cuts)")

    @property
    def replicated(self) -> bool:
        """Do replicas share the work (``data`` or ``hybrid``)?"""
        return self.parallel != "pipeline"

    @property
    def per_image(self) -> bool:
        """Does the schedule update the weights after each image (``cp``, ``sgd``)?"""
        return self.schedule in PER_IMAGE

    def cut_list(self) -> list | None:
        """The forced cut positions as a list (as the partition takes them), or None."""
        return None if self.cuts is None else list(self.cuts)

    def with_bands(self, rows: int) -> Mapping:
        """This mapping with a band height of ``rows`` (``bands="auto"`` resolved; 0: whole layers,
        so no backward or all-pass bands either)."""
        if rows == 0:
            return self.replace(bands=0, bands_backward=False, bands_all=False)
        return self.replace(bands=rows)

    def replace(self, **changes) -> Mapping:
        """A copy with ``changes`` (validated again)."""
        return dataclasses.replace(self, **changes)


#: the library's defaults: one pipeline, 1f1b, whole layers, serial engine commands
DEFAULT = Mapping()
#: what ``pymtl-fp train --engine cluster`` runs without mapping options
TRAIN_DEFAULT = Mapping(overlap=True, bands="auto")
