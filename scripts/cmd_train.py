"""``pymtl-fp train``: train a CNN on real data (``--dataset digits|mnist``) and report accuracy, per engine.

``--engine golden`` (the default) runs the NumPy golden model: float64, and every fixed-point
precision of the net (16-bit and 8-bit for ``lenet-digits``, stochastic rounding for gradients
and updates), from the same initial weights on the same batches; it prints the test accuracies,
and optionally writes learning curves (``--plot``) and a JSON report (``--report``).

``--engine cluster`` trains on a simulated cluster of FPGAs (:mod:`cluster`): the net is
partitioned over ``--nodes`` nodes (FPDeep balancing), one program is compiled per node, and
``--steps`` mini-batches of the training set (``--steps epoch``: the whole training set
once) run through the pipelined cluster at ``--level`` (fl, cl, rtl, verilator or mixed): ``rtl``
simulates the RTL nodes (engine + router/DMA) and links in PyMTL3, ``verilator`` runs the whole RTL
cluster Verilated in a compiled bench (``--faults RATE`` injects link faults there); ``--arrays 4,4,2,2``
gives every node its own MAC array side (default: ``--array`` for all).  It prints where the cycles go and whether the
final weights equal the golden model's (:func:`pymtl_fp.golden.train.train_step` applied
``--steps`` times); exit status 1 if they do not.

The cluster session is :func:`pymtl_fp.cluster.run.session.run_training` (the options: a cluster config and a mapping).
Options shared by every engine (net, precision, epochs, batch, seed, learning rate, outputs) are
defined here; an engine adds its own options in its own argument group and registers its runner
in ``ENGINES``.
"""

from __future__ import annotations

import argparse
import itertools
import json

from pymtl_fp.cli import train_data, validate
from pymtl_fp.cli.errors import UserError
from pymtl_fp.levels import LEVELS

HELP = ("train a CNN on real digits, 8x8 or MNIST 28x28: on a simulated cluster of FPGAs (--engine cluster) "
        "or the golden model (the default: float64 vs 16-/8-bit fixed point)")

DEFAULT_NET = "lenet-digits"
FLOAT64 = "float64"
ENGINES = ("golden", "cluster")
SCHEDULE_CHOICES = ("minibatch", "1f1b", "gpipe", "cp", "sgd")
CLUSTER_LEVELS = LEVELS + ("mixed",)
#: the cluster engine's options: dest -> (flag, default); the golden engine refuses them when given
CLUSTER_OPTIONS: dict = {}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pymtl_fp.engine.config import CLUSTER_DEPTHS as DEPTHS  # (engine_for_net's defaults)

    parser.add_argument("--engine", default="golden", metavar="ENGINE",
                        help="what computes the training step: golden (NumPy golden model; default) "
                             "or cluster (a simulated cluster of FPGAs)")
    parser.add_argument("--net", default=DEFAULT_NET, metavar="NAME|FILE",
                        help=f"preset name or .toml/.json net description (default {DEFAULT_NET})")
    parser.add_argument("--dataset", metavar="NAME",
                        help="digits (scikit-learn's 8x8 digits, for nets taking 1xSxS, S a multiple of 8) or mnist "
                             "(5,000 MNIST 28x28 digits, for nets taking 1x28x28); default: the one the net's input fits")
    parser.add_argument("--precision", default="all", metavar="P",
                        help="float64, a precision of the net (16, 8 for lenet-digits) or all (default)")
    parser.add_argument("--epochs", type=int, metavar="E", help="epochs (default: the net's)")
    parser.add_argument("--batch", type=int, metavar="B", help="mini-batch size (default: the net's)")
    parser.add_argument("--seed", type=int, metavar="S",
                        help="seed of the initial weights, the batch order and stochastic rounding")
    parser.add_argument("--lr-log2", type=int, metavar="L",
                        help="learning rate 2**-L (default: the net's)")
    parser.add_argument("--momentum", type=int, metavar="M",
                        help="momentum 1 - 2**-M; 0: none, plain SGD (what the cluster trains) whatever the net's file says "
                             "(default: the net's; none for lenet-digits)")
    parser.add_argument("--lr-halve-every", type=int, metavar="E",
                        help="halve the learning rate every E epochs (default: the net's)")
    parser.add_argument("--translate", type=int, metavar="P",
                        help="augmentation: translate every training image by up to P pixels, drawn from the "
                             "seed, the epoch and the image (0: none; default: the net's)")
    parser.add_argument("--schedule", choices=SCHEDULE_CHOICES, metavar="S",
                        help="how the weights are updated and the images flow: minibatch (golden default: one "
                             "update per batch), 1f1b (cluster default: mini-batch updates; once the pipeline is "
                             "full each node alternates one image's forward pass with an earlier one's backward "
                             "pass), gpipe (mini-batch; all forward passes, then all backward passes), cp "
                             "(continuous propagation: each node updates its layers after each image's backward "
                             "pass while the pipeline stays full; the golden model takes the staleness of "
                             "--nodes whole-layer nodes) or sgd (an update after each image, one image in the "
                             "cluster at a time); sgd and cp cut the net at layer boundaries")
    parser.add_argument("--max-memory", metavar="BYTES",
                        help="memory the run may take (e.g. 8G, 512M, or bytes; default: what this machine has "
                             "available): a net and options whose estimated data, buffers and simulation need "
                             "more are refused before any work (pymtl_fp/footprint.py)")
    parser.add_argument("--plot", metavar="FILE.png", help="write learning curves to this PNG file")
    parser.add_argument("--report", metavar="FILE.json", help="write the results as JSON")
    grp = parser.add_argument_group("cluster engine (--engine cluster)")
    grp.add_argument("--nodes", type=int, default=4, metavar="N", help="number of FPGA nodes (default 4)")
    grp.add_argument("--level", default="cl", metavar="LEVEL",
                     help=f"simulation level: {', '.join(CLUSTER_LEVELS)} (mixed: node 0 rtl, the "
                          "others fl, or as --node-levels says; default cl)")
    grp.add_argument("--node-levels", metavar="L0,L1,...", help="engine level of every node (e.g. rtl,fl,fl,fl)")
    grp.add_argument("--steps", default="2", metavar="S|epoch",
                     help="training steps to simulate (default 2; epoch: every training image once, "
                          "the last partial batch dropped)")
    grp.add_argument("--faults", type=float, default=0.0, metavar="RATE",
                     help="--level verilator: link faults per flit on every link (a third each lost "
                          "flits, bursts, single-bit flips; e.g. 1e-3); the links' CRC and "
                          "retransmission must keep the weights exact (default 0: off)")
    grp.add_argument("--fault-seed", type=int, default=1, metavar="S", help="seed of the injected faults")
    grp.add_argument("--array", type=int, default=4, metavar="P", help="MAC array side of every node (default 4)")
    grp.add_argument("--arrays", metavar="P0,P1,...",
                     help="MAC array side of each node, one per node (e.g. 4,4,2,2; overrides --array)")
    grp.add_argument("--act-depth", type=int, default=None, metavar="WORDS",
                     help=f"activation buffer depth of every node (default {DEPTHS['act_depth']})")
    grp.add_argument("--weight-depth", type=int, default=None, metavar="WORDS",
                     help="weight and weight-gradient buffer depth (W, G) of every node, in words of P*P elements "
                          f"(default {DEPTHS['weight_depth']})")
    grp.add_argument("--bias-depth", type=int, default=None, metavar="WORDS",
                     help="bias buffer depth (B) of every node, in words of P accumulator-wide elements "
                          f"(default {DEPTHS['bias_depth']})")
    grp.add_argument("--fit-buffers", action="store_true",
                     help="size every node's A, W and B buffers to the power of two the run needs (the same on "
                          "every node), instead of --act-depth, --weight-depth, --bias-depth: e.g. the 28x28 nets")
    grp.add_argument("--weight-home", choices=("auto", "off"), default="auto",
                     help="FPDeep's weight balancing: auto (default) lets a neighbour keep the weights of a node's "
                          "whole layers that do not fit its W (the node streams them in, a chunk per output or "
                          "input channel tile, for every pass that reads them; the neighbour updates them; "
                          "whole layers, no --bands), off: never")
    grp.add_argument("--link-latency", type=int, default=8, metavar="CYCLES", help="link latency (default 8)")
    grp.add_argument("--stream-lanes", type=int, default=1, metavar="E",
                     help="elements per beat on every stream of the cluster: the engines' din/dout, the routers, "
                          "the links (E x 32-bit messages) and the host (a power of two dividing every array "
                          "side; default 1)")
    grp.add_argument("--pipeline", metavar="PARTS",
                     help="engine pipelines of every node: requant, mac, addr, cmd (comma-separated), all, or none, "
                          "and dsp (the mac pipeline accumulating in the DSPs) (as translate --pipeline: the node's "
                          "pre-route path 31.5 ns with none, 4.99 ns with all; default all)")
    grp.add_argument("--clock-mhz", type=float, default=None, metavar="MHZ",
                     help="clock for images/s, the energy's static part and the trace's time (default: the clock "
                          "the nodes' RTL reaches: the recorded pre-route path of the node times a routing "
                          "allowance from place-and-route; the report says which)")
    grp.add_argument("--fpga-family", default="ultrascale+", metavar="FAMILY",
                     help="device family whose energy constants price the run (pymtl_fp/energy/data: "
                          "ultrascale+ (default) or 7series)")
    grp.add_argument("--cuts", metavar="T0,T1,...",
                     help="force the partition: N+1 cut positions in tiles of P output channels "
                          "(mixed --arrays: tiles of their lcm)")
    grp.add_argument("--no-split", action="store_true", help="cut at layer boundaries only")
    grp.add_argument("--tap-pack", choices=("auto", "on", "off"), default="off",
                     help="run the first conv layer tap-packed (a 1x1 conv over C*R*S channels the host packs): "
                          "auto (when it shortens the layer's compute and the packed input fits node 0's X), "
                          "on, off (default)")
    grp.add_argument("--parallel", choices=("pipeline", "data", "hybrid"), default="pipeline",
                     help="pipeline (default: the net partitioned over the nodes), data (every node a replica "
                          "of the whole net on its share of the batch) or hybrid (--groups replicas of a "
                          "pipeline); replicas all-reduce their un-rounded weight gradients over the links "
                          "(bit-exact with one node; fl/cl nodes)")
    grp.add_argument("--groups", type=int, metavar="G", help="--parallel hybrid: replicas (G divides --nodes)")
    grp.add_argument("--partition", choices=("rule", "search"), default="rule",
                     help="rule (default: FPDeep's balanced cuts, or the min-max cut vector when better) or "
                          "search (the best-modelled cut vectors and the rule's, each simulated at cl for one "
                          "step of the run's first images: the fastest is trained; a few seconds more)")
    grp.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=True,
                     help="engine commands overlap (LOAD/STORE beside compute; the engine checks the "
                          "hazards): faster at cl, rtl and verilator; fl keeps the serial timing "
                          "(default; --no-overlap: one command at a time)")
    grp.add_argument("--wgrad", choices=("batch", "image", "auto"), default="batch",
                     help="when a mini-batch schedule (1f1b, gpipe) computes the weight gradients: batch (default: "
                          "one bwd_weight over the batch at the step's end; every node keeps every image's layer "
                          "inputs and output gradients), image (after each image's backward pass, the exact "
                          "sums added in the engine's B and rounded once at the step's end: the same bits; a node "
                          "keeps only the images in flight, and B is deepened to hold the sums) or auto (per image "
                          "for the layers where it costs the engine at most 5%% more cycles, the conv layers; over "
                          "the batch for the rest, such as fc layers)")
    grp.add_argument("--bands", default="auto", metavar="ROWS",
                     help="FPDeep's fine-grained pipeline: the forward passes of the pipeline's fill (each node's "
                          "passes before its first backward pass of a step) in row bands of ROWS output rows, "
                          "each band computed as soon as the rows it needs are there and sent on at once (the "
                          "same bits; nodes of one array side; split layers too); auto (default): the finest of 1, "
                          "2, 4 rows that the timing model finds at most 2%% dearer than whole layers, or whole "
                          "layers where bands cannot run (--parallel data|hybrid, --arrays of different sides); 0: "
                          "the layer pipeline, a layer starts when its whole input has arrived")
    grp.add_argument("--bands-all", action="store_true",
                     help="with --bands: every forward pass in row bands, not only the fill's (measured slower: "
                          "with the pipeline full a pass started early waits for its upstream node's rows "
                          "instead of running a backward pass; docs/cluster-fine-grained.md)")
    grp.add_argument("--bands-backward", action="store_true",
                     help="with --bands: the backward passes in row bands too (each layer's data gradient band by "
                          "band as the output-gradient rows arrive; cuts at layer boundaries); measured slower than "
                          "whole-layer backward passes here (docs/cluster-fine-grained.md)")
    grp.add_argument("--topology", choices=("chain", "ring"), default="chain",
                     help="chain (default: the host at both ends) or ring (the host on node 0 only; "
                          "ring links carry the logits and loss gradients between node N-1 and node 0)")
    grp.add_argument("--save-weights", metavar="FILE.npz", help="write the final weights (raw integers)")
    grp.add_argument("--trace", metavar="FILE.json",
                     help="write the run's timeline as a Chrome/Perfetto trace-event file (open it in "
                          "ui.perfetto.dev): per node engine commands, LOAD/STORE and router states, per link "
                          "transfers and messages in flight, host events (fl/cl nodes)")
    grp.add_argument("--timeline", metavar="FILE.png",
                     help="draw the run's timeline (the trace's events: engine commands, LOAD/STORE, router "
                          "states per node; messages in flight per link) as a PNG (fl/cl nodes)")
    grp.add_argument("--kernel", choices=("direct", "pymtl"),
                     help="what ticks a fl/cl cluster: direct (default: the same models without PyMTL3's "
                          "signals) or pymtl (PyMTL3's simulator; always used with rtl/verilator nodes in the mix)")
    grp.add_argument("--skip", action=argparse.BooleanOptionalAction, default=True,
                     help="direct kernel: skip quiet cycles (default; cycle-identical, --no-skip to compare)")
    grp.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="a progress bar on standard error (default: when it is a terminal)")
    CLUSTER_OPTIONS.update({a.dest: (a.option_strings[0], a.default) for a in grp._group_actions})


def _settings(args, net) -> dict:
    """The training settings: each option given, in the range a net file's ``[train]`` table has
    (:data:`pymtl_fp.net.TRAIN_RANGES`), else the net's."""
    from pymtl_fp.net import TRAIN_RANGES

    defaults = net.train
    given = {"epochs": args.epochs, "batch": args.batch, "lr_log2": args.lr_log2, "momentum": args.momentum,
             "seed": args.seed, "translate": args.translate, "lr_halve_every": args.lr_halve_every}
    for key, value in given.items():
        lo, hi = TRAIN_RANGES[key]
        lo = 0 if key == "momentum" else lo  # (--momentum 0: plain SGD)
        validate.integer(value, "--" + key.replace("_", "-"), lo, None if key == "batch" else hi)
    settings = {key: getattr(defaults, key) if value is None else value for key, value in given.items()}
    return {key: settings[key] for key in ("epochs", "batch", "lr_log2", "momentum", "lr_halve_every", "seed",
                                           "translate")}


def _precisions(choice: str, net) -> list:
    available = [FLOAT64] + sorted(net.formats, key=lambda p: -int(p) if p.isdigit() else 0)
    if choice == "all":
        return available
    if choice not in available:
        raise UserError(f"--precision {choice}: net {net.name} offers {', '.join(available)} or all")
    return [choice]


def _golden_staleness(args, net, batch: int, precision: str, lr_log2: int) -> dict:
    """``fwd_versions`` of ``--schedule cp`` on ``--nodes`` whole-layer nodes (FPDeep's partition of
    the default cluster, as ``--engine cluster`` would run it)."""
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.config import MAX_NODES, ClusterConfig, ClusterError, engine_for_net
    from pymtl_fp.cluster.run.train import cp_versions
    from pymtl_fp.golden.train import TrainConfig

    validate.integer(args.nodes, "--nodes", 1, MAX_NODES)
    try:
        return cp_versions(net, ClusterConfig.homogeneous(args.nodes, engine_for_net(net, precision)), batch,
                           Mapping(schedule="cp", pack=args.tap_pack, overlap=getattr(args, "overlap", False)),
                           TrainConfig(precision, lr_log2=lr_log2))
    except (ClusterError, ValueError) as exc:
        raise UserError(str(exc)) from None


def _run_golden(args, net, dataset: str, settings: dict, precisions: list, schedule: str = "minibatch") -> list:
    from pymtl_fp.golden.study import fit

    split = train_data.load(net, dataset, settings["batch"])
    print(f"{dataset}: {len(split.y_train)} training / {len(split.y_test)} test images; "
          f"net {net.name}; epochs {settings['epochs']}, batch {settings['batch']}, "
          f"lr 2**-{settings['lr_log2']}, seed {settings['seed']}"
          + (f", translations up to {settings['translate']} px" if settings["translate"] else "") + f"; schedule {schedule}"
          + (f" ({args.nodes} nodes)" if schedule == "cp" else ""))
    histories = []
    for precision in precisions:
        versions = (_golden_staleness(args, net, settings["batch"], precision, settings["lr_log2"])
                    if schedule == "cp" else None)
        try:
            _, history = fit(net, split, precision, schedule=schedule, fwd_versions=versions,
                             **{**settings, "momentum": settings["momentum"] or None})
        except ValueError as exc:
            raise UserError(str(exc)) from None
        print(f"  {precision:>7}: test accuracy {100 * history.final_accuracy:5.1f}%  "
              f"(final loss {history.train_loss[-1]:.4f}, {history.steps} steps, "
              f"{history.seconds:.1f} s)", flush=True)
        histories.append(history)
    return histories


def _arrays(text: str, nodes: int) -> list:
    """``--arrays P0,P1,...``: one supported array side per node."""
    from pymtl_fp.engine.config import EngineConfig

    try:
        arrays = [int(v) for v in text.split(",")]
    except ValueError:
        raise UserError(f"--arrays {text}: give one integer array side per node, e.g. 4,4,2,2") from None
    if len(arrays) != nodes:
        raise UserError(f"--arrays {text}: {len(arrays)} array sides for --nodes {nodes}; give one per node")
    for p in arrays:
        try:
            EngineConfig(rows=p, cols=p)
        except ValueError as exc:
            raise UserError(f"--arrays {text}: array side {p} is not supported ({exc})") from None
    return arrays


def _cuts(text: str | None, nodes: int) -> list | None:
    """``--cuts T0,T1,...``: N + 1 rising tile positions starting at 0 (the end is checked
    against the net's tiles by the partition)."""
    if not text:
        return None
    try:
        cuts = [int(v) for v in text.split(",")]
    except ValueError:
        raise UserError(f"--cuts {text}: give {nodes + 1} integer tile positions, e.g. 0,3,6,9 for 3 nodes") from None
    if len(cuts) != nodes + 1:
        raise UserError(f"--cuts {text}: {len(cuts)} positions for --nodes {nodes}; give {nodes + 1} "
                        "(0, the inner cuts, the number of tiles)")
    if cuts[0] != 0 or any(b <= a for a, b in itertools.pairwise(cuts)):
        raise UserError(f"--cuts {text}: positions must rise from 0, strictly (every node gets work)")
    return cuts


def _mapping(args, cuts):
    """The run's :class:`~pymtl_fp.cluster.compiler.mapping.Mapping` from the cluster options
    (its refusals as one-line errors)."""
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.config import ClusterError

    try:
        return Mapping(parallel=args.parallel, groups=args.groups,
                       schedule="1f1b" if args.schedule in (None, "minibatch") else args.schedule,
                       wgrad=args.wgrad, bands=bands_option(args.bands), bands_backward=args.bands_backward,
                       bands_all=args.bands_all, pack=args.tap_pack, weight_home=args.weight_home,
                       overlap=args.overlap, cuts=cuts, split=not args.no_split)
    except ClusterError as exc:
        raise UserError(str(exc)) from None


def _cluster_config(args, net, precision: str):
    """The cluster the options describe (:func:`~pymtl_fp.cluster.config.cluster_for_net`): one
    engine per node (its array side, buffers, stream lanes, pipelines), the links, the clock,
    topology and FPGA family."""
    from pymtl_fp.cluster.config import cluster_for_net, engine_for_net
    from pymtl_fp.engine.config import CLUSTER_DEPTHS
    from pymtl_fp.link.config import LinkConfigError

    pipes = validate.pipelines(args.pipeline)
    try:
        arrays = _arrays(args.arrays, args.nodes) if args.arrays else [args.array] * args.nodes
        depths = {k: getattr(args, k) for k in CLUSTER_DEPTHS if getattr(args, k) is not None}
        return cluster_for_net(net, precision, arrays, link_latency=args.link_latency, stream_lanes=args.stream_lanes,
                               pipelines=pipes, clock_mhz=args.clock_mhz, topology=args.topology,
                               fpga_family=args.fpga_family, **depths)
    except LinkConfigError as exc:
        bits = engine_for_net(net, precision).stream_bits
        raise UserError(f"--stream-lanes {args.stream_lanes}: a link message of {args.stream_lanes} "
                        f"{bits}-bit elements is too wide ({exc})") from None
    except (ValueError, TypeError) as exc:
        raise UserError(str(exc)) from None


def _check_cluster_options(args) -> None:
    """Refuse cluster options out of their ranges, one line each (before anything is built)."""
    from pymtl_fp.cluster.config import MAX_LINK_LATENCY, MAX_NODES
    from pymtl_fp.energy.constants import fpga_families
    from pymtl_fp.engine.config import CLUSTER_DEPTHS, MAX_ARRAY_SIDE, MAX_BUFFER_DEPTH

    if args.plot:
        raise UserError("--plot is for --engine golden (learning curves); the cluster prints a report")
    if args.epochs is not None:
        raise UserError("--epochs is for --engine golden; the cluster trains --steps mini-batches (--steps epoch: "
                        "the training set once)")
    if args.level not in CLUSTER_LEVELS:
        raise UserError(f"--level {args.level}: choose one of {', '.join(CLUSTER_LEVELS)}")
    if args.node_levels and args.level != "mixed":
        raise UserError(f"--node-levels {args.node_levels} needs --level mixed (got --level {args.level})")
    validate.integer(args.nodes, "--nodes", 1, MAX_NODES)  # (the net's tiles may allow fewer)
    validate.integer(args.array, "--array", 1, MAX_ARRAY_SIDE)
    if args.arrays is not None and args.array != CLUSTER_OPTIONS["array"][1]:
        raise UserError(f"--array {args.array}: --arrays {args.arrays} gives every node's array side; give one or "
                        "the other")
    for k in CLUSTER_DEPTHS:
        option = "--" + k.replace("_", "-")
        if getattr(args, k) is not None:
            if args.fit_buffers:
                raise UserError(f"{option} {getattr(args, k)}: --fit-buffers sizes the buffers; give one or the other")
            validate.integer(getattr(args, k), option, 2, MAX_BUFFER_DEPTH)
    validate.integer(args.stream_lanes, "--stream-lanes", 1, 16)
    validate.integer(args.link_latency, "--link-latency", 1, MAX_LINK_LATENCY)
    validate.integer(args.fault_seed, "--fault-seed", 0, 2**32 - 1)
    if args.clock_mhz is not None:
        validate.number(args.clock_mhz, "--clock-mhz", 1, 10_000)  # (below 1 MHz the report's rates print as 0)
    if args.fpga_family not in fpga_families():
        raise UserError(f"--fpga-family {args.fpga_family!r}: choose one of {', '.join(fpga_families())}")
    if args.groups is not None:
        validate.integer(args.groups, "--groups", 1, args.nodes)
    if args.parallel != "pipeline" and args.partition == "search":
        raise UserError(f"--partition search tunes one pipeline's cuts; not with --parallel {args.parallel}")


def _check_memory(args, net, dataset: str, batch: int, engines=()) -> None:
    """The run's estimated memory (:func:`pymtl_fp.footprint.training_bytes`) against ``--max-memory``
    (default: the memory available now)."""
    from pymtl_fp.footprint import training_bytes

    validate.byte_size(args.max_memory, "--max-memory")  # (a bad size first, whatever the run needs)
    what = f"training {net.name} (batch {batch}" + (f", {len(engines)} simulated nodes)" if engines else ")")
    validate.memory_budget(training_bytes(net, dataset, batch, engines), what, args.max_memory)


def _check_node_count(args, net, ccfg, mapping, batch: int) -> None:
    """``--nodes`` against what the net allows a pipeline (:func:`~pymtl_fp.cluster.compiler.partition.max_nodes`;
    given ``--cuts`` and replicas are checked by the partition and the mapping), and the pipeline's
    pieces against the engine's command fields (:func:`~pymtl_fp.cluster.compiler.compile.check_host_loads`),
    before any data or weights are made."""
    from pymtl_fp.cluster.compiler.compile import check_host_loads
    from pymtl_fp.cluster.compiler.partition import grid_unit, max_nodes, partition
    from pymtl_fp.cluster.compiler.schedule import split_allowed
    from pymtl_fp.cluster.config import ClusterError

    if mapping.parallel != "pipeline":
        return
    split = split_allowed(mapping.schedule, mapping.split) and not mapping.bands_backward
    if mapping.cuts is None:
        most = max_nodes(net, grid_unit(ccfg), split)
        if args.nodes > most:
            raise UserError(f"--nodes {args.nodes}: {net.name} can be spread over at most {most} nodes of "
                            f"{grid_unit(ccfg)}-channel tiles (each conv/fc layer "
                            + ("shared by at most two neighbouring nodes" if split
                               else "on one node: layer boundaries only") + f"); give at most {most}")
    try:
        check_host_loads(net, partition(net, ccfg, batch, split=split, cuts=mapping.cut_list(), pack="off"))
    except (ClusterError, ValueError) as exc:
        raise UserError(str(exc)) from None


def _check_levels(args, levels: list, simulated: bool) -> None:
    """Refuse what the levels cannot run (a trace, the direct kernel: fl/cl; faults: verilator)."""
    if simulated and not all(lv in ("fl", "cl") for lv in levels):
        raise UserError(f"{'--trace' if args.trace else '--timeline'} records the CL routers and links: every node "
                        "at fl or cl")
    if args.kernel == "direct" and not all(lv in ("fl", "cl") for lv in levels):
        raise UserError("--kernel direct ticks fl/cl nodes only; use --kernel pymtl (or leave it out)")
    if args.faults and levels != ["verilator"] * args.nodes:
        raise UserError("--faults needs --level verilator (the fault injectors are in the compiled RTL cluster)")
    if args.fault_seed != 1 and not args.faults:
        raise UserError("--fault-seed seeds the injected link faults: give --faults RATE too")
    if not args.skip and (args.kernel == "pymtl" or not all(lv in ("fl", "cl") for lv in levels)):
        raise UserError("--no-skip is an option of the direct kernel (fl/cl nodes); PyMTL3's simulator "
                        "(--kernel pymtl, or rtl/verilator nodes) never skips cycles")


def _run_cluster(args, net, dataset: str) -> int:
    from pymtl_fp.cli.progress import SimProgress
    from pymtl_fp.cluster.config import ClusterError, node_levels
    from pymtl_fp.cluster.run.report import format_report
    from pymtl_fp.cluster.run.session import TrainingOutputs, link_faults, run_training
    from pymtl_fp.sim import SimulationHang

    outputs = TrainingOutputs(report=validate.output_file(args.report, "--report", ".json"),
                              weights=validate.output_file(args.save_weights, "--save-weights", ".npz"),
                              trace=validate.output_file(args.trace, "--trace", ".json"),
                              timeline=validate.output_file(args.timeline, "--timeline", ".png"))
    validate.distinct_outputs({"--report": outputs.report, "--save-weights": outputs.weights,
                               "--trace": outputs.trace, "--timeline": outputs.timeline})
    _check_cluster_options(args)
    mapping = _mapping(args, _cuts(args.cuts, args.nodes))
    precision = "8" if args.precision == "all" else args.precision
    if precision not in net.formats:
        raise UserError(f"--precision {precision}: the cluster runs a fixed-point precision of the net "
                        f"({', '.join(sorted(net.formats))})")
    settings = dict(_settings(args, net), **({"batch": 8} if args.batch is None else {}))
    try:
        steps = "epoch" if args.steps == "epoch" else validate.integer(int(args.steps), "--steps", 1)
    except ValueError:
        raise UserError(f"--steps {args.steps}: give a number of steps or 'epoch'") from None
    try:
        link_faults(args.faults, args.fault_seed)  # (its range, before the levels' checks)
        ccfg = _cluster_config(args, net, precision)
        levels = node_levels(args.level, args.nodes, args.node_levels)
    except (ValueError, TypeError) as exc:
        raise UserError(str(exc)) from None
    _check_levels(args, levels, bool(outputs.trace or outputs.timeline))
    _check_memory(args, net, dataset, settings["batch"], ccfg.engines)
    _check_node_count(args, net, ccfg, mapping, settings["batch"])
    try:
        result = run_training(net, ccfg, mapping, dataset=dataset, steps=steps, batch=settings["batch"], levels=levels,
                              precision=precision, seed=settings["seed"], lr_log2=settings["lr_log2"],
                              momentum=settings["momentum"], translate=settings["translate"],
                              partition=args.partition, fault_rate=args.faults,
                              fault_seed=args.fault_seed, kernel=args.kernel, skip=args.skip, outputs=outputs,
                              settings=settings, progress=lambda total: SimProgress(total, args.progress),
                              say=lambda line: print(line, flush=True), fitted=args.fit_buffers)
    except ClusterError as exc:
        raise UserError(str(exc)) from None
    except SimulationHang as exc:
        raise UserError(str(exc).splitlines()[0]) from None
    print(format_report(result.report))
    for line in result.summary():
        print(line)
    return 0 if result.weights_equal else 1


def _net(name: str):
    from pymtl_fp.net import NetError, load_net

    try:
        return load_net(name)
    except NetError as exc:
        raise UserError(f"--net {name}: {exc}") from None


def _check_chain(net, why: str | None = None) -> None:
    from pymtl_fp.net import NetError, check_chain

    try:
        check_chain(net, *([why] if why else []))
    except NetError as exc:
        raise UserError(str(exc)) from None


def _check_cluster_net(net, args) -> None:
    """Refuse, before the data are loaded, momentum the cluster does not run (a residual net's
    mapping is checked when it is compiled: :func:`~pymtl_fp.cluster.compiler.residual.check_residual`)."""
    from pymtl_fp.cluster.compiler.compile import check_momentum
    from pymtl_fp.cluster.config import ClusterError

    try:
        check_momentum(net.train.momentum if args.momentum is None else args.momentum or None)
    except ClusterError as exc:
        raise UserError(str(exc)) from None


def main(args: argparse.Namespace) -> int:
    if args.engine not in ENGINES:
        raise UserError(f"--engine {args.engine}: choose one of {', '.join(ENGINES)}")
    if args.engine == "cluster":
        net = _net(args.net)
        _check_cluster_net(net, args)
        return _run_cluster(args, net, train_data.dataset(args, net))
    schedule = "minibatch" if args.schedule in (None, "1f1b", "gpipe") else args.schedule
    allowed = ("nodes",) if schedule == "cp" else ()  # the pipeline depth behind cp's staleness
    given = [flag for dest, (flag, default) in CLUSTER_OPTIONS.items()
             if getattr(args, dest, default) != default and dest not in allowed]
    if given:
        raise UserError(f"{', '.join(given)}: option{'s' if len(given) > 1 else ''} of --engine cluster, "
                        f"not of --engine {args.engine}")
    plot_path = validate.output_file(args.plot, "--plot", ".png")
    report_path = validate.output_file(args.report, "--report", ".json")
    net = _net(args.net)
    dataset = train_data.dataset(args, net)
    settings = _settings(args, net)
    precisions = _precisions(args.precision, net)
    if schedule == "cp":
        _check_chain(net, "--schedule cp takes its staleness from the cluster's pipeline, which runs chains of "
                          "conv, pool and fc layers; train it with --schedule minibatch or sgd")
    if schedule != "minibatch":
        if precisions == [FLOAT64]:
            raise UserError(f"--schedule {schedule} is defined in fixed point; choose --precision "
                            f"{' or '.join(sorted(net.formats))}")
        if FLOAT64 in precisions:
            print(f"(--schedule {schedule}: fixed point only, float64 left out)")
            precisions = [p for p in precisions if p != FLOAT64]
    _check_memory(args, net, dataset, settings["batch"])
    histories = _run_golden(args, net, dataset, settings, precisions, schedule)

    by_name = {h.precision: h for h in histories}
    if FLOAT64 in by_name and len(by_name) > 1:
        ref = by_name[FLOAT64].final_accuracy
        gaps = ", ".join(f"{p}-bit {100 * (h.final_accuracy - ref):+.1f}"
                         for p, h in by_name.items() if p != FLOAT64)
        print(f"  accuracy vs float64 (points): {gaps}")
    if plot_path:
        train_data.plot_histories(histories, plot_path, f"{net.name} on {dataset} ({args.engine} engine)")
        print(f"  wrote {plot_path}")
    if report_path:
        report = {
            "engine": args.engine, "dataset": dataset, "net": net.to_dict(), "settings": settings,
            "results": {h.precision: {"final_test_accuracy": h.final_accuracy,
                                      "test_accuracy": h.test_accuracy,
                                      "train_loss": h.train_loss, "steps": h.steps,
                                      "seconds": round(h.seconds, 3)} for h in histories},
        }
        report_path.write_text(json.dumps(report, indent=2) + "\n")
        print(f"  wrote {report_path}")
    return 0


def bands_option(text: str):
    """``--bands``: ``auto`` or rows per band (0: whole layers); a one-line error otherwise."""
    if text == "auto":
        return "auto"
    try:
        rows = int(text)
    except ValueError:
        raise UserError(f"--bands {text!r}: rows per band (0: whole layers) or auto") from None
    if not 0 <= rows <= 1024:
        raise UserError(f"--bands {rows}: rows per band from 0 (whole layers) to 1024, or auto")
    return rows
