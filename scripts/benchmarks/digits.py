"""What the cluster benchmarks on the digits data share (``bench schedules``, ``bench parallel``):
the option parsing of a zoo net and of integer lists, the training inputs of a run, and the
figures of a run's last step.  Not a bench target itself."""

from __future__ import annotations

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError


def int_list(text, option, lo, hi) -> list:
    """``--option A,B,...`` as integers in ``lo..hi`` (else a one-line :class:`UserError`)."""
    try:
        vals = [int(v) for v in str(text).split(",")]
    except ValueError:
        raise UserError(f"{option} {text}: give comma-separated integers") from None
    for v in vals:
        validate.integer(v, option, lo, hi)
    return vals


def run_jobs(fn, jobs: list, workers: int) -> list:
    """``fn`` over ``jobs``, in order: in this process with one worker (or one job), else on
    ``workers`` processes that are spawned, not forked (a forked child of a process that has loaded
    a Verilator model, as a test worker may have, can hang in that library's ``dlclose``).

    Ctrl-C is the parent's: the workers ignore SIGINT once started, and an interrupt of the parent
    alone (not of its process group) terminates them at once instead of waiting for their jobs."""
    if workers <= 1 or len(jobs) <= 1:
        return [fn(job) for job in jobs]
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(workers, initializer=_ignore_sigint) as pool:
        return pool.map(fn, jobs, chunksize=1)  # (leaving the block terminates the workers)


def _ignore_sigint():
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def zoo_net(name: str, precision: str):
    """The zoo net ``--net name`` at ``--precision``, refused unless it is a bundled net (the
    benchmarks' worker processes load it by name) that takes the images of a data set (the digits,
    or MNIST's 28x28: :func:`pymtl_fp.data.check_dataset`)."""
    from pymtl_fp.data import check_dataset
    from pymtl_fp.net import NetError, load_net, presets

    if name not in presets():
        raise UserError(f"--net {name[:200]}: a bundled net ({', '.join(presets())}); a net file trains with "
                        "train --engine cluster --net FILE")
    try:
        net = load_net(name)
    except NetError as exc:
        raise UserError(f"--net {name}: {exc}") from None
    try:
        check_dataset(net)
    except ValueError as exc:
        raise UserError(f"--net {name}: {exc}") from None
    if precision not in net.formats:
        raise UserError(f"--precision {precision}: {net.name} offers {', '.join(sorted(net.formats))}")
    return net


def run_inputs(net, prec: str, steps: int, batch: int) -> tuple:
    """``(images, labels, params, tcfg)`` of a benchmark run: ``steps`` batches of the training
    images in a seed-0 order, seed-0 weights, the net's learning rate."""
    import numpy as np

    from pymtl_fp.data import dataset_for, quantize_images

    split = dataset_for(net)
    order = np.random.default_rng(0).permutation(len(split.y_train))[: steps * batch]
    images, labels = quantize_images(split.x_train[order], net.precision(prec).act), split.y_train[order]
    return (images, labels) + run_params(net, prec)


def run_params(net, prec: str) -> tuple:
    """``(params, tcfg)`` of a benchmark run: seed-0 weights, the net's learning rate."""
    from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params

    params = quantize_params(net, init_params_float64(net, 0), prec)
    return params, TrainConfig(prec, lr_log2=net.train.lr_log2, seed=0)


def pipelines_named(pipes: dict) -> str:
    """The nodes' engine pipelines, the presets' with ``pipes`` (``EngineConfig`` fields, as
    ``validate.pipelines`` gives them) applied, as the clock records name them (``none``,
    ``requant,mac,addr,cmd``, ...)."""
    from pymtl_fp.clock import pipelines_key
    from pymtl_fp.engine.config import preset

    return pipelines_key(preset("small").replace(**pipes))


def fitted_cluster(net, prec: str, nodes: int, mapping, *, steps: int, batch: int, flits: int = 1,
                   pipelines: dict | None = None):
    """``nodes`` default engines for ``net`` (``pipelines``: ``EngineConfig`` fields replacing their
    default pipelines) on links of ``flits`` cycles a message
    (:func:`~pymtl_fp.cluster.config.link_flits`), every buffer the depth the run needs (compiled
    here: a run that cannot fit is a ``ClusterError`` before any simulation)."""
    from pymtl_fp.cluster.config import ClusterConfig, engine_for_net, link_flits
    from pymtl_fp.cluster.run.train import fit_buffers

    params, tcfg = run_params(net, prec)
    ccfg = link_flits(ClusterConfig.homogeneous(nodes, engine_for_net(net, prec).replace(**(pipelines or {}))), flits)
    return fit_buffers(net, ccfg, params, tcfg, mapping, steps=steps, batch=batch)


def last_step_figures(run, ccfg, batch: int) -> dict:
    """The cycles of a run's last step, images/s at the clock, and the cluster's MAC utilization
    (useful MACs over ``nodes x P x P x cycles`` of the whole run)."""
    rep = run.report
    last = rep["cycles_per_step"][-1]
    peak = sum(e.P * e.P for e in ccfg.engines)
    macs = sum(nd["macs"] for nd in rep["node"])
    return {"cycles_per_step": last, "images_per_s": batch * ccfg.clock.mhz * 1e6 / last,
            "mac_utilization": macs / (peak * run.cycles), "clock_mhz": ccfg.clock.mhz}
