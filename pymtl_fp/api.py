"""pymtl-fp's public Python API: train a network on a simulated cluster of FPGAs, read the result
as tables and figures, and run the design-space and scaling studies, without the command line.

Everything here is what ``pymtl-fp train --engine cluster`` and ``pymtl-fp explore`` run, with the
same defaults; the command line adds only its option parsing and output files::

    from pymtl_fp import api

    result = api.train("lenet-digits", nodes=2, steps=2, batch=8)   # CL nodes, checked bit for bit
    result.weights_equal, result.accuracy_after
    result.to_dataframe()            # one row per node: layers, MACs, cycles by router state, words
    result.to_dataframe("steps")     # cycles and the cluster's and golden model's loss per step
    result.plot_nodes()

    api.scaling("vgg16", fpgas=[1, 2, 4, 8, 16]).to_dataframe()      # FPDeep's scaling study

A network is a preset name (:func:`presets`), a net file (``.toml``/``.json``) or a
:class:`~pymtl_fp.net.Net`; a bad one is a :class:`~pymtl_fp.net.NetError` (one line), a cluster
or mapping that cannot run a :class:`~pymtl_fp.cluster.config.ClusterError`, before any simulation.
The studies take the explore zoo's networks (``vgg16``, ``alexnet``, ``resnet152``, ...) as well.
"""

from __future__ import annotations

from pymtl_fp.cluster.compiler.mapping import TRAIN_DEFAULT as DEFAULT_MAPPING
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, cluster_for_net
from pymtl_fp.cluster.run.session import TrainingOutputs, TrainingResult, run_training
from pymtl_fp.net import Net, NetError, load_net, presets

__all__ = ["DEFAULT_MAPPING", "ClusterConfig", "ClusterError", "Mapping", "Net", "NetError",
           "TrainingResult", "cluster", "design", "load_net", "modes", "parallelism", "partition", "presets",
           "scaling", "train"]


def _net(net) -> Net:
    return load_net(net) if isinstance(net, str) else net


def cluster(net="lenet-digits", nodes: int = 4, *, array: int = 4, arrays=None, precision: str = "8",
            link_latency: int = 8, stream_lanes: int = 1, pipelines: str | None = None, clock_mhz: float | None = None,
            topology: str = "chain", fpga_family: str = "ultrascale+", **depths) -> ClusterConfig:
    """A cluster for ``net`` at ``precision``: ``nodes`` nodes of ``array x array`` MAC arrays (or one
    side per node in ``arrays``), links of ``link_latency`` cycles at full rate, ``stream_lanes``
    elements per beat, engine ``pipelines`` (``"requant,mac"``, ``"all"``, ...), buffer ``depths``
    (``act_depth``, ``weight_depth``, ``bias_depth``).  The defaults are ``train --engine cluster``'s."""
    from pymtl_fp.engine.config import pipeline_fields

    arrays = list(arrays) if arrays is not None else [array] * nodes
    try:
        pipes = pipeline_fields(pipelines) if pipelines else {}
        return cluster_for_net(_net(net), precision, arrays, link_latency=link_latency, stream_lanes=stream_lanes,
                               pipelines=pipes, clock_mhz=clock_mhz, topology=topology, fpga_family=fpga_family,
                               **depths)
    except ClusterError:
        raise
    except (ValueError, TypeError) as exc:
        raise ClusterError(str(exc)) from None


def train(net="lenet-digits", cluster_config: ClusterConfig | None = None, mapping: Mapping = DEFAULT_MAPPING, *,
          nodes: int = 4, array: int = 4, precision: str = "8", level: str = "cl", levels=None, steps=2,
          batch: int = 8, dataset: str | None = None, seed: int | None = None, lr_log2: int | None = None,
          momentum: int | None = None, translate: int | None = None, trace: bool = False, report=None,
          trace_file=None, timeline=None, weights=None, say=None) -> TrainingResult:
    """Train ``steps`` mini-batches of ``batch`` images of ``dataset`` (default: the one the net's
    input fits) on a simulated cluster and check the final weights against the golden model.

    ``cluster_config``: the hardware (default :func:`cluster` of ``nodes`` x ``array`` at
    ``precision``); ``mapping``: how the nodes share the work (default: the command's, overlapped
    commands and row bands); ``level``: every node's level (``fl``, ``cl``, ``rtl``,
    ``verilator``; ``mixed``: node 0 ``rtl``, the others ``fl``), or ``levels``, one per node;
    ``steps``: a number or ``"epoch"``.  ``seed``, ``lr_log2``, ``momentum`` (0: none, plain SGD), ``translate`` (the
    augmentation's largest translation, :func:`pymtl_fp.data.augment_batch`): default the net's.
    ``report``, ``trace_file``, ``timeline``, ``weights``: files to write (JSON report, Perfetto
    trace, PNG timeline, ``.npz`` weights); ``trace=True`` keeps the trace in the result instead.
    ``say(line)`` receives the session's lines.  Returns the
    :class:`~pymtl_fp.cluster.run.session.TrainingResult`: ``weights_equal``,
    ``accuracy_before/after``, ``report``, ``to_dataframe()``, ``plot_*()``."""
    from pymtl_fp.cluster.config import engine_for_net, node_levels

    net = _net(net)
    ccfg = cluster_config or cluster(net, nodes, array=array, precision=precision)
    want = engine_for_net(net, precision)
    if any(getattr(e, w) != getattr(want, w) for e in ccfg.engines for w in ("act_bits", "weight_bits", "grad_bits")):
        raise ClusterError(f"the cluster's engines do not have {net.name}'s {precision}-bit word widths: build it "
                           f"with cluster(net, precision={precision!r}) or train at its precision")
    outputs = TrainingOutputs(report=report, trace=trace_file, timeline=timeline, weights=weights)
    return run_training(net, ccfg, mapping, dataset=dataset, steps=steps, batch=batch,
                        levels=node_levels(level, ccfg.n, levels), precision=precision, seed=seed, lr_log2=lr_log2,
                        momentum=momentum, translate=translate, trace=trace, outputs=outputs, say=say)


# -- the explore studies: analytical models of paper-scale clusters (docs/explore.md) ---------------

def _study_inputs(net, device, array=None, bits=None):
    from pymtl_fp.explore.devices import Precision, get_device
    from pymtl_fp.explore.fpga_model import EngineArray
    from pymtl_fp.explore.zoo import get_network

    network = get_network(net) if isinstance(net, str) else net
    dev = get_device(device) if device is not None else None
    if dev is not None and array:
        dev = dev.with_array(EngineArray.parse(array))
    return network, dev, (Precision.bits(int(bits)) if bits is not None else None)


def _links(links):
    from pymtl_fp.explore.links import parse_link

    return [parse_link(lk) if isinstance(lk, str) else lk for lk in ([links] if isinstance(links, str) else links)]


def scaling(net="vgg16", device: str = "xc7vx690t", fpgas=(1, 2, 4, 8, 16, 32, 64, 128), links=("6x10G",),
            bits: int = 16, batch: int = 32, array: str | None = None, pieces: int = 64, split: str = "auto",
            optimal: bool = False):
    """FPDeep's scaling study (``explore scaling``): ``net`` balanced on each cluster size of ``fpgas``
    and evaluated on each link model; a :class:`~pymtl_fp.explore.scaling.ScalingResult` (``rows``,
    ``knees``, ``to_dataframe()``)."""
    from pymtl_fp.explore.scaling import sweep

    network, dev, prec = _study_inputs(net, device, array, bits)
    return sweep(network, dev, fpgas, _links(links), prec, batch, pieces, split, optimal=optimal)


def parallelism(net="vgg16", device: str = "xc7vx690t", fpgas=(1, 2, 4, 8, 16, 32), batches=(1, 4, 16, 64, 256),
                link: str = "6x10G", bits: int = 16, grad_bits: int | None = None, pieces: int = 64):
    """Layer pipeline vs data-parallel vs hybrid (``explore parallelism``): every (N, B, groups); a
    :class:`~pymtl_fp.explore.parallelism.CrossoverResult` (``rows``, ``best``, ``to_dataframe()``)."""
    from pymtl_fp.explore.parallelism import crossover

    network, dev, prec = _study_inputs(net, device, None, bits)
    return crossover(network, dev, fpgas, batches, _links(link)[0], prec, grad_bits, pieces)


def design(net="vgg-cifar", device: str = "xcvu9p", batch: int = 128, bits: int = 8, dram_gbs: float | None = None):
    """The single-FPGA design search (``explore design``): every array and tiling, its feasible
    points and Pareto front; a :class:`~pymtl_fp.explore.design.DesignResult` (``best()``,
    ``front()``, ``to_dataframe()``)."""
    from pymtl_fp.explore.design import search

    network, dev, prec = _study_inputs(net, device, None, bits)
    return search(network, dev, batch, prec, dram_gbs)


def modes(net="vgg-cifar", arrays=(16, 32), batches=(4, 32), layers=None):
    """Which dataflow per layer (``explore modes``): utilization of each mode per (layer, P, batch);
    a :class:`~pymtl_fp.explore.modes.ModeStudy` (``rows``, ``totals``, ``to_dataframe()``)."""
    from pymtl_fp.explore.modes import study

    network, _, _ = _study_inputs(net, None)
    return study(network, tuple(arrays), tuple(batches), layers)


def partition(net="resnet152", devices=None, bits: int = 16, batch: int = 32, pieces: int = 8, split: str = "auto",
              memory_limit: bool = False):
    """A network cut over a chain of (possibly different) FPGAs (``explore partition``): even, FPDeep's
    greedy, the exact DP (and with ``memory_limit`` the DP with FPDeep's weight balancing) on the
    devices file ``devices`` (default: the 16 asymmetric FPGAs shipped with the package); a
    :class:`~pymtl_fp.explore.partition_study.PartitionStudy` (``evals``, ``to_dataframe()`` per
    method, ``to_dataframe("fpgas")``)."""
    from pymtl_fp.explore.partition_study import study

    network, _, prec = _study_inputs(net, None, None, bits)
    return study(network, prec, batch, pieces, split, devices, memory_limit)
