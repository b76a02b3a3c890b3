"""``pymtl-fp bench schedules``: CATERPILLAR's comparison of plain SGD, mini-batch SGD and pipelined
SGD / continuous propagation, on the digits data, measured two ways in one run.

* **Convergence** (golden model, the bits the cluster reproduces): test accuracy after each epoch
  for ``minibatch`` (one update per batch), ``sgd`` (an update after each image, one image in the
  pipeline at a time) and ``cp`` (an update after each image while the pipeline stays full: the
  forward passes of node ``j`` see the weights ``N - j`` updates late), every seed of ``--seeds``.
  The three move the weights equally far per image (the loss gradient is divided by the batch
  size in all three), so they differ only in when the updates land.
* **Throughput** (the CL cluster, bit-exact with the golden model, checked): per schedule and node
  count, the cycles of the last of ``--steps`` steps, images/s at the clock, and the cluster's MAC
  utilization (useful MACs over ``nodes x P x P x cycles`` of the whole run). ``minibatch`` runs the
  1F1B pipeline.
* **Accuracy vs simulated time**: each epoch's accuracy placed at the simulated time of the epochs
  so far on ``--time-nodes`` nodes (steps per epoch x that step's cycles / clock), in a plot.

Per-image schedules cut the net at layer boundaries, so the node counts are at most the net's
conv/fc layers (3 for ``lenet-digits``, 5 for ``vgg-digits``).  Figures only: nothing passes or
fails on time.
"""

from __future__ import annotations

import json

from pymtl_fp.cli import validate
from pymtl_fp.cli.benchmarks.digits import int_list, last_step_figures, run_inputs, run_jobs, zoo_net
from pymtl_fp.cli.errors import UserError
from pymtl_fp.cluster.compiler.mapping import Mapping

HELP = "SGD vs mini-batch vs continuous propagation: accuracy per epoch (golden) and images/s (CL cluster)"
METHODS = {"minibatch": "1f1b", "sgd": "sgd", "cp": "cp"}  #: study method -> cluster schedule


def add_arguments(parser):
    parser.add_argument("--net", default="lenet-digits", metavar="NAME", help="zoo net (default lenet-digits)")
    parser.add_argument("--precision", default="8", metavar="P", help="fixed-point precision (default 8)")
    parser.add_argument("--epochs", type=int, metavar="E", help="epochs (default: the net's)")
    parser.add_argument("--batch", type=int, metavar="B", help="mini-batch (default: the net's)")
    parser.add_argument("--seeds", default="0,1,2,3", metavar="S0,S1,...", help="training seeds (default 0,1,2,3)")
    parser.add_argument("--nodes", default="1,2,3", metavar="N0,N1,...",
                        help="node counts of the throughput runs (default 1,2,3)")
    parser.add_argument("--time-nodes", type=int, metavar="N",
                        help="nodes behind cp's staleness and the time axis (default: the most of --nodes)")
    parser.add_argument("--steps", type=int, default=2, metavar="S", help="cluster steps per run (default 2)")
    parser.add_argument("--act-depth", type=int, default=8192, metavar="WORDS",
                        help="activation buffer words per node (default 8192: whole batches of 32 fit)")
    parser.add_argument("--pipeline", metavar="PARTS",
                        help="the nodes' engine pipelines, as train --pipeline (default all; none: without)")
    parser.add_argument("--workers", type=int, default=2, metavar="W", help="processes for the golden runs (default 2)")
    parser.add_argument("--json", metavar="FILE.json", help="write the figures as JSON")
    parser.add_argument("--plot", metavar="FILE.png", help="accuracy vs epoch and vs simulated time")


def _check(args):
    net = zoo_net(args.net, args.precision)
    layers = len(net.param_layers())
    nodes = int_list(args.nodes, "--nodes", 1, layers)
    tn = validate.integer(args.time_nodes, "--time-nodes", 1, layers) or max(nodes)
    seeds = int_list(args.seeds, "--seeds", 0, 2**32 - 1)
    epochs = validate.integer(args.epochs, "--epochs", 1, 1000) or net.train.epochs
    batch = validate.integer(args.batch, "--batch", 1, 1024) or net.train.batch
    validate.integer(args.steps, "--steps", 1, 100)
    validate.integer(args.act_depth, "--act-depth", 1, 1 << 20)
    validate.pipelines(args.pipeline)
    validate.integer(args.workers, "--workers", 1, 64)
    return net, nodes, tn, seeds, epochs, batch


def _throughput(net, prec, method, n, batch, steps, act_depth, pipes=None):
    """One CL cluster run: cycles of the last step, images/s, MAC utilization; bit-exact checked."""
    from pymtl_fp.cluster.config import ClusterConfig, engine_for_net
    from pymtl_fp.cluster.run.train import cp_versions, golden_steps, params_equal, train_on_cluster

    images, labels, params, tcfg = run_inputs(net, prec, steps, batch)
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(net, prec, act_depth=act_depth).replace(**(pipes or {})))
    sched = METHODS[method]
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg, Mapping(overlap=True, schedule=sched), steps=steps,
                           batch=batch, levels=["cl"] * n)
    want, _ = golden_steps(net, params, images, labels, tcfg, steps, batch, cp_versions(net, ccfg, batch,
                                                                                        Mapping(schedule=sched)))
    if not params_equal(run.params, want):
        raise UserError(f"bench schedules: {method} on {n} nodes differs from the golden model")
    return dict(last_step_figures(run, ccfg, batch), method=method, schedule=sched, nodes=n,
                steady_cycles_per_image=(run.report.get("steady_state") or {}).get("cycles_per_image"))


def _fit(job):
    from pymtl_fp.data import digits_for
    from pymtl_fp.golden.study import fit
    from pymtl_fp.net import load_net

    net_name, prec, method, seed, epochs, batch, versions = job
    net = load_net(net_name)
    t = net.train
    _, h = fit(net, digits_for(net), prec, epochs=epochs, batch=batch, lr_log2=t.lr_log2,
               lr_halve_every=t.lr_halve_every, seed=seed, schedule=method, fwd_versions=versions)
    return {"method": method, "seed": seed, "test_accuracy": h.test_accuracy, "train_loss": h.train_loss,
            "seconds": h.seconds}


def _plot(path, curves, thr, tn, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (ax_e, ax_t) = plt.subplots(1, 2, figsize=(11, 4))
    for method in METHODS:
        acc = np.array([c["test_accuracy"] for c in curves if c["method"] == method]) * 100
        ep = np.arange(1, acc.shape[1] + 1)
        sec = thr[(method, tn)]["epoch_seconds"] * ep * 1e3
        for ax, x in ((ax_e, ep), (ax_t, sec)):
            ax.plot(x, acc.mean(0), marker=".", label=f"{method} (mean of {len(acc)} seeds)")
            ax.fill_between(x, acc.min(0), acc.max(0), alpha=0.2)
    ax_e.set(xlabel="epoch", ylabel="test accuracy (%)", title="accuracy per epoch (golden model)")
    ax_t.set(xlabel=f"simulated time on {tn} node(s) at 200 MHz (ms)", ylabel="test accuracy (%)",
             title="accuracy vs simulated training time (CL cluster)")
    for ax in (ax_e, ax_t):
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(args) -> int:
    json_path = validate.output_file(args.json, "--json", ".json")
    plot_path = validate.output_file(args.plot, "--plot", ".png")
    net, nodes, tn, seeds, epochs, batch = _check(args)
    from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
    from pymtl_fp.cluster.run.train import cp_versions
    from pymtl_fp.data import load_digits_split

    prec = args.precision
    try:
        versions = cp_versions(net, ClusterConfig.homogeneous(tn, engine_for_net(net, prec)), batch, Mapping(schedule="cp"))
    except ClusterError as exc:
        raise UserError(str(exc)) from None
    steps_per_epoch = len(load_digits_split(seed=0).y_train) // batch
    print(f"{net.name} ({prec}-bit) on digits, batch {batch}: throughput on the CL cluster "
          f"({args.steps} steps, last one measured), convergence over {epochs} epochs x seeds {seeds}", flush=True)
    thr = {}
    print(f"{'method':>9} {'nodes':>5} {'cycles/step':>12} {'images/s':>10} {'MAC util':>9}")
    for method in METHODS:
        for n in sorted(set(nodes) | {tn}):
            try:
                r = _throughput(net, prec, method, n, batch, args.steps, args.act_depth,
                                validate.pipelines(args.pipeline))
            except ClusterError as exc:
                raise UserError(f"{method} on {n} nodes: {exc}") from None
            r["epoch_seconds"] = steps_per_epoch * r["cycles_per_step"] / (r["clock_mhz"] * 1e6)
            thr[(method, n)] = r
            print(f"{method:>9} {n:>5} {r['cycles_per_step']:>12,} {r['images_per_s']:>10,.0f} "
                  f"{100 * r['mac_utilization']:>8.1f}%", flush=True)
    jobs = [(net.name, prec, m, s, epochs, batch, versions if m == "cp" else None) for m in METHODS for s in seeds]
    curves = run_jobs(_fit, jobs, args.workers)
    print(f"test accuracy (mean over seeds; min..max) after epochs 1 / {max(1, epochs // 3)} / {epochs}, and at "
          f"the simulated time of {tn} node(s):")
    for method in METHODS:
        accs = [c["test_accuracy"] for c in curves if c["method"] == method]

        def at(e, accs=accs):
            vals = [100 * a[e - 1] for a in accs]
            return f"{sum(vals) / len(vals):5.1f} ({min(vals):.1f}..{max(vals):.1f})"
        secs = thr[(method, tn)]["epoch_seconds"] * epochs * 1e3
        print(f"  {method:>9}: {at(1)} / {at(max(1, epochs // 3))} / {at(epochs)} %; {epochs} epochs in "
              f"{secs:.1f} ms simulated", flush=True)
    if json_path:
        doc = {"net": net.name, "precision": prec, "batch": batch, "epochs": epochs, "seeds": seeds,
               "time_nodes": tn, "cp_fwd_versions": versions, "throughput": list(thr.values()), "convergence": curves}
        json_path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"  wrote {json_path}")
    if plot_path:
        _plot(plot_path, curves, thr, tn, f"{net.name} ({prec}-bit), batch {batch}: SGD vs mini-batch vs CP")
        print(f"  wrote {plot_path}")
    return 0

