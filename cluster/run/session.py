"""A whole training session on a simulated cluster, from the real data to the output files.

:func:`run_training` is what ``pymtl-fp train --engine cluster`` runs, as a library call: it loads
the net's split of a data set, ``digits`` or ``mnist`` (:func:`pymtl_fp.data.dataset_for`), draws
the run's images in the seed's order and quantizes them and the initial weights to the run's
precision, optionally searches the partition (:func:`~pymtl_fp.cluster.run.tune.search_partition`),
trains on the cluster (:func:`~pymtl_fp.cluster.run.train.train_on_cluster`), replays the same
steps on the golden model, compares the weights bit for bit, measures the test accuracy before and
after, and writes the requested files (JSON report, Perfetto trace, timeline picture, final
weights).  It returns a :class:`TrainingResult`; the lines a user reads come from it
(:meth:`TrainingResult.summary`) and, as the session goes, from the ``say`` callback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pymtl_fp.cluster.compiler.buffers import DEPTH_BUFFERS
from pymtl_fp.cluster.compiler.compile import check_momentum, roomy_bias
from pymtl_fp.cluster.compiler.mapping import TRAIN_DEFAULT, Mapping
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.cluster.run.train import (
    ClusterRun,
    compile_run,
    cp_versions,
    fit_buffers,
    golden_steps,
    params_equal,
    train_on_cluster,
)


@dataclass(frozen=True)
class TrainingOutputs:
    """Files a session writes (``None``: not written): the JSON report, the Perfetto trace, the
    timeline picture (PNG) and the final weights (``.npz`` of raw integers)."""

    report: Path | str | None = None
    trace: Path | str | None = None
    timeline: Path | str | None = None
    weights: Path | str | None = None


@dataclass
class TrainingResult:
    """What a session produced: the cluster's run, the golden model's weights and losses, their
    agreement, the test accuracy before and after, and the files written."""

    net: object
    precision: str
    steps: int
    batch: int
    levels: list
    mapping: Mapping
    run: ClusterRun
    golden_params: dict
    golden_losses: list
    weights_equal: bool
    accuracy_before: float
    accuracy_after: float
    test_images: int
    search: dict | None = None  #: the partition search's result (``partition="search"``)
    written: list = field(default_factory=list)  #: ``(path, note)`` of every file written

    @property
    def report(self) -> dict:
        return self.run.report

    def to_dataframe(self, table: str = "nodes"):
        """The report as a pandas DataFrame: ``nodes`` (one row per node), ``steps`` (cycles, the
        host's and the golden model's loss per step) or ``links`` (:mod:`pymtl_fp.cluster.run.frames`)."""
        from pymtl_fp.cluster.run.frames import frame

        return frame(self.report, table, self.golden_losses)

    def plot_nodes(self, ax=None):
        """Each node's cycles by router state, stacked, on ``ax`` (a new figure by default)."""
        from pymtl_fp.cluster.run.frames import plot_nodes

        return plot_nodes(self.report, ax)

    def plot_losses(self, ax=None):
        """The cluster's and the golden model's loss per step, on ``ax`` (a new figure by default)."""
        from pymtl_fp.cluster.run.frames import plot_losses

        return plot_losses(self.report, self.golden_losses, ax)

    def plot_timeline(self, path):
        """The run's timeline as a PNG at ``path`` (the run must have recorded a trace: ``trace=True``)."""
        from pymtl_fp.cluster.run.trace_plot import plot_timeline

        if self.run.trace is None:
            raise ClusterError("no trace recorded: run with trace=True (fl/cl nodes and cl links)")
        return plot_timeline(self.run.trace, path, title=f"{self.net.name}, {len(self.levels)} nodes")

    def summary(self) -> list:
        """The lines after the report: agreement with the golden model, test accuracy, files written."""
        losses = [f"{x:.4f}" for x in self.golden_losses]
        shown = ", ".join(losses) if len(losses) <= 8 else (
            f"steps 1-2: {', '.join(losses[:2])}; steps {len(losses) - 1}-{len(losses)}: {', '.join(losses[-2:])}")
        lines = [f"final weights equal the golden model's: {'yes' if self.weights_equal else 'NO'} "
                 f"(golden losses {shown})",
                 f"test accuracy of the trained weights: {100 * self.accuracy_after:.1f}% on the {self.test_images} "
                 f"test images ({100 * self.accuracy_before:.1f}% before training)"]
        return lines + [f"  wrote {path}" + (f" ({note})" if note else "") for path, note in self.written]


#: the fault injectors' probability unit, inverted (rates are integers of 2^-16 per flit)
FAULT_UNIT_INV = 65536
#: how far the injected rate may be from the one asked for (1e-3 becomes 66 * 2^-16 = 1.007e-3)
FAULT_RATE_TOLERANCE = 0.05


def link_faults(rate: float, seed: int = 1) -> dict | None:
    """A per-flit link fault ``rate`` (a third each lost flits, bursts and bit flips) as the fault
    injectors' rates in units of ``2**-16``, or ``None`` for 0."""
    if not (rate == rate and 0.0 <= rate <= 0.5):
        raise ClusterError(f"--faults {rate}: a per-flit probability in [0, 0.5]")
    if isinstance(seed, bool) or not 0 <= seed <= 0xFFFFFFFF:
        raise ClusterError(f"--fault-seed {seed}: a seed in 0..2**32-1")
    if rate == 0:
        return None
    each = round(rate * FAULT_UNIT_INV / 3)
    injected = 3 * each / FAULT_UNIT_INV
    if each < 1 or abs(injected - rate) > FAULT_RATE_TOLERANCE * rate:
        near = ", ".join(f"{3 * e / FAULT_UNIT_INV:.4g}" for e in sorted({max(1, each), max(1, each) + 1}))
        raise ClusterError(f"--faults {rate:g}: the injectors draw each of the three fault kinds in steps of "
                           f"2^-16 per flit, so the rate is a multiple of 3 * 2^-16 = {3 / FAULT_UNIT_INV:.4g} "
                           f"(within {FAULT_RATE_TOLERANCE:.0%}); nearest: {near}")
    return dict(seed=seed, drop=each, burst=each, flip=each)


def run_training(net, ccfg, mapping: Mapping = TRAIN_DEFAULT, *, dataset: str | None = None, steps: int | str = 2,
                 batch: int = 8, levels: list | None = None, precision: str = "8", seed: int | None = None,
                 lr_log2: int | None = None, momentum: int | None = None, translate: int | None = None,
                 partition: str = "rule",
                 fault_rate: float = 0.0, fault_seed: int = 1, kernel: str | None = None, skip: bool = True,
                 trace: bool = False, progress=None, outputs: TrainingOutputs | None = None,
                 settings: dict | None = None, say=None, fitted: bool = False,
                 init_params: dict | None = None) -> TrainingResult:
    """Train ``net`` (a :class:`~pymtl_fp.net.Net` or a preset name) on ``dataset`` (``digits`` or
    ``mnist``; default: the one the net's input fits, :func:`pymtl_fp.data.default_dataset`) on the
    cluster ``ccfg`` mapped as ``mapping``, check it against the golden model and write
    ``outputs`` (module docstring).

    ``steps``: mini-batches of ``batch`` images (``"epoch"``: the training set once, the last
    partial batch dropped), drawn in the order of ``seed`` (default: the net's, as are
    ``lr_log2``, ``momentum`` (0: none, whatever the net's) and ``translate``, the augmentation's
    largest translation: the images are the golden study's first epoch's,
    :func:`pymtl_fp.data.augment_batch`).  ``levels``: one engine level per node (default: every
    node ``cl``).  ``partition``: ``rule`` (the compiler's)
    or ``search`` (the fastest cut vector by a one-step CL run of each candidate).  ``fault_rate``,
    ``fault_seed``: link faults (:func:`link_faults`; every node at ``verilator``).  ``kernel``, ``skip``, ``trace``: as
    :func:`~pymtl_fp.cluster.run.train.train_on_cluster` (a trace is also recorded when
    ``outputs`` asks for one).  ``progress(total_images)``: makes the ``progress_cb`` of the run
    (closed after it when it has ``close``).  ``settings``: recorded in the JSON report (default:
    the net's training settings with this run's batch, seed and learning rate).  ``say(line)``:
    called with the session's lines before the simulation (the partition search, the run).
    ``fitted``: every node's buffers are sized to what the run needs
    (:func:`~pymtl_fp.cluster.run.train.fit_buffers`) instead of ``ccfg``'s depths.
    ``init_params``: the initial weights as float64 ``{layer: {"w", "b"}}`` (e.g. an imported
    model's, :func:`pymtl_fp.interop.torch_net.params_from_torch`), quantized to ``precision``
    (default: He-normal weights drawn from ``seed``, :func:`~pymtl_fp.golden.train.init_params_float64`).

    Refusals are one-line :class:`~pymtl_fp.cluster.config.ClusterError`\\ s; a hang raises
    :class:`pymtl_fp.sim.SimulationHang`."""
    from pymtl_fp.net import load_net

    net = load_net(net) if isinstance(net, str) else net
    outputs = outputs or TrainingOutputs()
    say = say or (lambda line: None)
    levels = list(levels) if levels is not None else ["cl"] * ccfg.n
    defaults = net.train
    seed = defaults.seed if seed is None else seed
    lr_log2 = defaults.lr_log2 if lr_log2 is None else lr_log2
    momentum = defaults.momentum if momentum is None else momentum or None  # (0: plain SGD)
    check_momentum(momentum)  # (before the data are made)
    translate = defaults.translate if translate is None else translate
    faults = link_faults(fault_rate, fault_seed)
    _check_run(ccfg, levels, batch, steps)
    data = _data(net, dataset, precision, steps, batch, seed, lr_log2, momentum, init_params, translate)
    steps, images, labels, params, tcfg = data["steps"], data["images"], data["labels"], data["params"], data["tcfg"]
    found = None
    if partition == "search":
        from pymtl_fp.cluster.run.tune import search_partition

        # (``fitted``: the candidates run on the deepest buffers an engine takes, as fit_buffers
        # compiles; the chosen cuts' buffers are fitted below)
        searched = roomy_bias(ccfg, DEPTH_BUFFERS) if fitted else ccfg
        found = search_partition(net, searched, params, images, labels, tcfg, batch, mapping)
        mapping = mapping.replace(cuts=found["cuts"])
        say(f"partition search ({len(found['table'])} cut vectors, one step each at cl): "
            + ", ".join(f"{r['cuts']} {r['cycles']:,} cycles" for r in found["table"]) + f" -> {found['cuts']}")
    elif partition != "rule":
        raise ClusterError(f"unknown partition method {partition!r}; choose rule or search")
    if fitted:
        ccfg = fit_buffers(net, ccfg, params, tcfg, mapping, steps=steps, batch=batch)
    compiled = compile_run(net, ccfg, params, tcfg, mapping, steps=steps, batch=batch)  # (refusals before the header)
    say(_header(data["dataset"], net, ccfg, mapping, precision, steps, batch, levels, fault_rate, fault_seed, faults))
    if fitted:
        e = ccfg.engines[0]
        say(f"buffers fitted to the run: A {e.act_depth}, W {e.weight_depth}, B {e.bias_depth} words on every node")
    bar = progress(steps * batch) if progress is not None else None
    try:
        run = train_on_cluster(net, params, images, labels, tcfg, ccfg, mapping, steps=steps, batch=batch,
                               levels=levels, faults=faults,
                               kernel=kernel, skip=skip, trace=bool(trace or outputs.trace or outputs.timeline),
                               progress_cb=bar, compiled=compiled)
    finally:
        if hasattr(bar, "close"):
            bar.close()
    if found is not None:  # the report says how the cuts were chosen
        run.report["partition"]["method"] = f"searched at cl; the rule's cuts: {found['rule_cuts']}"
        run.report["partition"]["search"] = found["table"]
    want, golden_losses = golden_steps(net, params, images, labels, tcfg, steps, batch,
                                       cp_versions(net, ccfg, batch, mapping, tcfg))
    result = _assess(net, data, run, want, golden_losses, precision, steps, batch, levels, mapping, found)
    if settings is None:
        settings = {"epochs": defaults.epochs, "batch": batch, "lr_log2": lr_log2, "momentum": momentum,
                    "lr_halve_every": defaults.lr_halve_every, "seed": seed, "translate": translate}
    result.written = write_outputs(result, outputs, settings)
    return result


def _check_run(ccfg, levels: list, batch, steps) -> None:
    """One-line refusals of levels, a batch or a step count the session cannot run, before any work."""
    from pymtl_fp.cluster.config import node_levels

    node_levels("cl", ccfg.n, levels)  # (their count and names)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ClusterError(f"batch {batch!r}: a mini-batch is at least 1 image")
    if steps != "epoch" and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ClusterError(f"steps {steps!r}: a number of steps (at least 1) or 'epoch'")


def _data(net, dataset: str | None, precision: str, steps, batch: int, seed: int, lr_log2: int,
          momentum: int | None, init_params: dict | None = None, translate: int = 0) -> dict:
    """The run's data: ``steps`` resolved, its images (in ``seed``'s order, translated as the golden
    study's first epoch translates them for ``translate``) and initial weights
    (``init_params``, default drawn from ``seed``) quantized to ``precision``, the training config and
    the test split."""
    from pymtl_fp.data import augment_batch, check_dataset, check_translate, dataset_for, quantize_images
    from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params

    try:
        check_translate(translate)
        dataset = check_dataset(net, dataset)
        split = dataset_for(net, dataset)
    except ValueError as exc:
        raise ClusterError(str(exc)) from None
    if batch > len(split.y_train):
        raise ClusterError(f"--batch {batch}: larger than the {len(split.y_train)} training images of {dataset}")
    if steps == "epoch":
        steps = len(split.y_train) // batch
    if init_params is not None:
        from pymtl_fp.golden.train import _check_params

        try:
            _check_params(net, init_params)
        except ValueError as exc:
            raise ClusterError(f"initial weights: {exc}") from None
    fmt = net.precision(precision)
    order = np.random.default_rng(seed).permutation(len(split.y_train))[: steps * batch]
    if len(order) < steps * batch:
        raise ClusterError(f"--steps {steps} x --batch {batch} exceeds the {len(split.y_train)} training images")
    return {"steps": steps, "split": split, "fmt": fmt, "dataset": dataset,
            "images": quantize_images(augment_batch(split.x_train[order], order, seed, 0, len(split.y_train), translate),
                                      fmt.act), "labels": split.y_train[order],
            "params": quantize_params(net, init_params_float64(net, seed) if init_params is None else init_params,
                                      precision),
            "tcfg": TrainConfig(precision, lr_log2=lr_log2, momentum=momentum, seed=seed)}


def _header(dataset, net, ccfg, mapping, precision, steps, batch, levels, fault_rate, fault_seed, faults) -> str:
    """The session's line before the simulation: data, net, nodes, levels, arrays, replicas, faults."""
    return (f"{dataset}: {steps} steps of {batch} images; net {net.name} ({precision}-bit); "
            f"{ccfg.n} nodes at level{'s' if len(set(levels)) > 1 else ''} {','.join(levels)} "
            f"(arrays {','.join(str(p) for p in ccfg.Ps)})"
            + (f"; --parallel {mapping.parallel}" + (f" --groups {mapping.groups}" if mapping.groups else "")
               if mapping.replicated else "")
            + (f"; link faults {fault_rate:g} per flit (seed {fault_seed})" if faults else ""))


def _assess(net, data, run, want, golden_losses, precision, steps, batch, levels, mapping, found) -> TrainingResult:
    """The run's agreement with the golden model and its test accuracy (recorded in its report)."""
    from pymtl_fp.data import quantize_images
    from pymtl_fp.golden.study import accuracy

    split = data["split"]
    test = quantize_images(split.x_test, data["fmt"].act)
    acc0 = accuracy(net, data["params"], test, split.y_test, precision)
    acc = accuracy(net, run.params, test, split.y_test, precision)
    run.report["test_accuracy"] = {"before": acc0, "after": acc, "test_images": len(split.y_test)}
    return TrainingResult(net, precision, steps, batch, levels, mapping, run, want, golden_losses,
                          params_equal(run.params, want), acc0, acc, len(split.y_test), found)


def write_outputs(result: TrainingResult, outputs: TrainingOutputs, settings: dict) -> list:
    """Write the files ``outputs`` asks for; returns ``[(path, note)]`` in the order written."""
    run, written = result.run, []
    if outputs.report:
        rep = dict(run.report, engine="cluster", precision=result.precision, settings=settings,
                   weights_equal_golden=result.weights_equal, golden_losses=result.golden_losses)
        Path(outputs.report).write_text(json.dumps(rep, indent=2, default=float) + "\n")
        written.append((outputs.report, ""))
    if outputs.trace:
        from pymtl_fp.cluster.run.trace import write_trace

        write_trace(run.trace, outputs.trace)
        written.append((outputs.trace, "open it in ui.perfetto.dev"))
    if outputs.timeline:
        from pymtl_fp.cluster.run.trace_plot import plot_timeline

        plot_timeline(run.trace, outputs.timeline,
                      f"{result.net.name}: {len(result.levels)} nodes at {','.join(result.levels)}, batch "
                      f"{result.batch}, {result.steps} steps ({run.cycles:,} cycles)")
        written.append((outputs.timeline, ""))
    if outputs.weights:
        flat = {f"{name}.{k}": np.asarray(v) for name, p in run.params.items() for k, v in p.items()}
        np.savez(outputs.weights, **flat)
        written.append((outputs.weights, ""))
    return written
