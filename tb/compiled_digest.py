"""A fingerprint of everything the cluster compiler produces, over a sweep of configurations.

:func:`sweep_digests` compiles each configuration of :data:`CONFIGS` the way
:func:`~pymtl_fp.cluster.run.train.compile_run` does for a training run (partition, bands, weight
placement, replicas, the deepened B buffers) and hashes, per configuration, every node's binary
program, gather table, host streams, buffer regions, modelled cycles and link elements and the
cluster-wide figures -- or the one-line error the configuration is refused with.
``tests/test_compiled_digest.py`` compares them with ``tests/data/compiled_digests.json``, so a
restructuring of the compiler that changes one bit of one program fails; regenerate the file with
``python -m pymtl_fp.tb.compiled_digest tests/data/compiled_digests.json`` only for an intended change.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
from dataclasses import fields, is_dataclass

import numpy as np

NETS = ("lenet-digits", "vgg-digits")


def _configs() -> list:
    """(net, nodes, batch, options) tuples: every schedule, weight-gradient mode, band setting,
    overlap and parallel layout the runner offers, on 1-4 nodes, plus mixed array sides and weights
    kept by a neighbour."""
    out = []
    for net, n, batch in itertools.product(NETS, (1, 2, 3, 4), (3, 8)):
        for schedule, wgrad, bands in itertools.product(("1f1b", "gpipe", "cp"), ("batch", "image", "auto"),
                                                        (0, 1, "auto")):
            if schedule == "cp" and wgrad != "batch" and bands != 0:
                continue  # (refused whatever the bands: once is enough)
            out.append((net, n, batch, dict(schedule=schedule, wgrad=wgrad, bands=bands, overlap=(n + batch) % 2 == 1)))
        out.append((net, n, batch, dict(schedule="sgd")))
        out.append((net, n, batch, dict(bands=1, bands_backward=True, overlap=True)))
        out.append((net, n, batch, dict(bands=2, bands_all=True)))
        out.append((net, n, batch, dict(split=False, pack="auto")))
        for parallel in ("data", "hybrid"):
            out.append((net, n, batch, dict(parallel=parallel, groups=2 if parallel == "hybrid" else None,
                                            overlap=True)))
    for net, n in itertools.product(NETS, (2, 3, 4)):
        out.append((net, n, 8, dict(arrays=(4, 8) * 2, wgrad="auto")))
    for schedule, home, overlap in itertools.product(("1f1b", "gpipe"), ("auto", "off"), (False, True)):
        out.append(("lenet-digits", 4, 3, dict(weight_depth=110, weight_home=home, schedule=schedule, overlap=overlap)))
    return out


CONFIGS = _configs()


def _plain(x):
    """A JSON-able, order-stable form of compiler output (dataclasses, arrays, tuples, dict keys)."""
    if is_dataclass(x) and not isinstance(x, type):
        return {f.name: _plain(getattr(x, f.name)) for f in fields(x) if f.name not in ("net",)}
    if isinstance(x, np.ndarray):
        return [str(x.dtype), list(x.shape), x.ravel().tolist()]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, dict):
        return [[_plain(k), _plain(v)] for k, v in sorted(x.items(), key=lambda kv: repr(kv[0]))]
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (frozenset, set)):
        return sorted(_plain(v) for v in x)
    if isinstance(x, (int, float, str, bool)) or x is None:
        return x
    return repr(x)


def _node(prog) -> dict:
    regions = prog.alloc.regions if prog.alloc is not None else {}
    return {"words": [int(w) for w in prog.words()], "table": _plain(prog.table), "host_in": _plain(prog.host_in),
            "host_out": _plain(prog.host_out), "regions": _plain(regions), "scratch_peak": prog.scratch_peak,
            "relayouts": _plain(prog.relayouts), "compute": prog.compute_cycles, "io": prog.io_cycles,
            "macs": prog.macs, "link_elems": _plain(prog.link_elems), "phase": _plain(prog.phase_compute),
            "loop": list(prog.loop), "longest": prog.longest_command, "notes": _plain(prog.notes),
            "collective": _plain(prog.collective_elems), "useful": _plain(prog.useful_macs),
            "hoisted": _plain(prog.hoisted)}


def compile_config(net_name: str, n: int, batch: int, opts: dict):
    """Compile one configuration (its mapping options as a
    :class:`~pymtl_fp.cluster.compiler.mapping.Mapping`); returns ``(ccfg, part, parts, cprog)``."""
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.run.train import compile_run
    from pymtl_fp.golden.train import TrainConfig
    from pymtl_fp.net import load_net
    from pymtl_fp.tb.cluster_setup import seeded_params, small_cluster

    opts = dict(opts)
    net = load_net(net_name)
    ccfg = small_cluster(n, net, Ps=list(opts.pop("arrays", (4,) * n))[:n], act_depth=4096)
    if "weight_depth" in opts:
        depth = opts.pop("weight_depth")
        ccfg = ccfg.replace(engines=tuple(e.replace(weight_depth=depth) for e in ccfg.engines))
    return compile_run(net, ccfg, seeded_params(net), TrainConfig("8", seed=5), Mapping(**opts), steps=2, batch=batch)


def digest(net_name: str, n: int, batch: int, opts: dict) -> str:
    """The SHA-256 of one configuration's compiled output (or of its refusal)."""
    from pymtl_fp.cluster.config import ClusterError

    try:
        ccfg, part, parts, cprog = compile_config(net_name, n, batch, opts)
    except (ClusterError, ValueError) as exc:
        doc = {"error": f"{type(exc).__name__}: {exc}"}
    else:
        doc = {"engines": _plain(ccfg.engines), "cuts": _plain(part.cuts), "work": _plain(part.work),
               "nodes": [_node(p) for p in cprog.nodes],
               "cluster": {k: _plain(getattr(cprog, k)) for k in (
                   "host_in_elems", "logit_elems", "out_shape", "steps", "batch", "overlap", "schedule", "image_pack",
                   "wgrad", "bands", "bands_backward", "bands_all", "placement", "replicas")},
               "parts": None if parts is None else [_plain(p.cuts) for p in parts]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def key(net_name: str, n: int, batch: int, opts: dict) -> str:
    return f"{net_name} n={n} b={batch} " + " ".join(f"{k}={v}" for k, v in sorted(opts.items()))


def sweep_digests(configs=None) -> dict:
    return {key(*c): digest(*c) for c in (CONFIGS if configs is None else configs)}


if __name__ == "__main__":  # python -m pymtl_fp.tb.compiled_digest OUT.json
    with open(sys.argv[1], "w") as fh:
        json.dump(sweep_digests(), fh, indent=0, sort_keys=True)
        fh.write("\n")
