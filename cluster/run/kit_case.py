"""A node kit's test case: one training step of a whole net on ONE node, as text files the kit's plain
C++ bench (:mod:`pymtl_fp.cluster.hw.kit_bench`) reads, the expected outputs from the golden model.

:func:`node_case` compiles ``lenet-digits`` (8-bit formats) for a one-node cluster of the node's
engine and router, as ``pymtl-fp train`` does (:func:`pymtl_fp.cluster.run.train.compile_run`, the
default mapping), and takes the host's streams from the host models the simulated clusters use
(:class:`~pymtl_fp.cluster.hw.host.HostModel`: the images in node 0's layout, and each image's loss
gradient from its logits). The expected values come from the golden model only
(:func:`pymtl_fp.golden.train.forward` for the logits, :func:`~pymtl_fp.cluster.run.train.golden_steps`
for the trained weights, packed as the node stores them by
:func:`~pymtl_fp.cluster.compiler.compile.host_out_elements`), never from a simulation of the node.

:func:`write_case` writes (beats and words in hexadecimal, whitespace-separated, ``#`` lines are comments):

* ``program.hex``: one instruction per line, ``INSTR_WORDS`` 32-bit words, least significant first;
* ``table.hex``: the gather-table words;
* ``fwd_in.hex``: the images (node 0's input link); ``host_in.hex``: the initial weights and biases;
* ``bwd_in.hex``: each image's loss gradient, to send once that image's logits are out;
* ``fwd_out.hex``: the expected logits; ``host_out.hex``: the expected trained weights and biases;
* ``case.txt``: ``key value`` lines (``images``, ``max_cycles``, ``what``).
"""

from __future__ import annotations

from pathlib import Path

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, default_link
from pymtl_fp.cluster.hw.host_side import side_beats
from pymtl_fp.cluster.hw.kit_bench import BATCH, NET, PRECISION, SEED
from pymtl_fp.wordkit import words32

#: the case's net, precision, images per step, seeds (weights, data)
#: cycles the bench allows (a step takes ~20k cycles on the 8x8 preset)
MAX_CYCLES = 2_000_000


def node_case(cfg) -> dict:
    """The case of node ``cfg`` (``(engine, router)`` configs): ``{file stem: [int, ...] or [[int]]}`` and
    ``what``.  Raises :class:`~pymtl_fp.cluster.config.ClusterError` when the net does not fit the node."""
    from pymtl_fp.cluster.compiler.compile import host_out_elements
    from pymtl_fp.cluster.compiler.mapping import DEFAULT
    from pymtl_fp.cluster.compiler.schedule import PER_IMAGE
    from pymtl_fp.cluster.hw.host import HostModel
    from pymtl_fp.cluster.run.train import compile_run, golden_steps
    from pymtl_fp.data import load_digits_split, quantize_images
    from pymtl_fp.engine.msgs import pack_act
    from pymtl_fp.golden.train import TrainConfig, forward, init_params_float64, quantize_params, step_seed
    from pymtl_fp.net import load_net

    ecfg, rcfg = cfg
    net = load_net(NET)
    fmt = net.precision(PRECISION)
    have = (ecfg.act_bits, ecfg.weight_bits, ecfg.grad_bits)
    if have != (fmt.act.bits, fmt.weight.bits, fmt.grad.bits):
        raise ClusterError(f"the case trains {NET} at {PRECISION} bits; this node's engine has act/weight/grad "
                           f"bits {have}")
    if DEFAULT.schedule in PER_IMAGE:
        raise ClusterError("the case's golden model is a mini-batch step; the default schedule is per image")
    split = load_digits_split(seed=SEED)
    images, labels = quantize_images(split.x_train[:BATCH], fmt.act), split.y_train[:BATCH]
    params = quantize_params(net, init_params_float64(net, SEED), PRECISION)
    tcfg = TrainConfig(PRECISION)
    ccfg = ClusterConfig((ecfg,), default_link(ecfg.stream_bits, 8, ecfg.stream_lanes))
    ccfg2, part, _, cprog = compile_run(net, ccfg, params, tcfg, steps=1, batch=BATCH)
    if ccfg2.engines[0] != ecfg:
        raise ClusterError(f"{NET} at batch {BATCH} needs deeper engine buffers than this node's")
    prog = cprog.nodes[0]
    for what, need, have in (("instructions", len(prog.ops), rcfg.prog_depth),
                             ("gather-table entries", len(prog.table), rcfg.table_depth),
                             ("scratch elements", prog.scratch_peak, rcfg.scratch_depth)):
        if need > have:
            raise ClusterError(f"{NET}'s one-node program needs {need} {what}; the node's router holds {have}")
    host = HostModel(ecfg, net, fmt, images, labels, BATCH, ecfg.P, cprog.image_pack)
    E, bits = ecfg.stream_lanes, ecfg.stream_bits
    # the golden model's logits of the step, and each image's loss gradient from them (the host's rule)
    logits = forward(net, params, images, PRECISION, mode=tcfg.fwd_mode, seed=step_seed(tcfg.seed, tcfg.step))[-1]
    logits = logits[0] if isinstance(logits, tuple) else logits
    fwd_out, bwd_in = [], []
    for i in range(BATCH):
        elems = [int(v) for v in pack_act(logits[i:i + 1], ecfg.P).reshape(-1)]
        fwd_out += elems
        grads = []
        for v in elems:
            grads += host.logit(v, 0)
        bwd_in += grads
    new_params, losses = golden_steps(net, params, images, labels, tcfg, 1, BATCH)
    host_out = host_out_elements(net, part, prog, ecfg.P, new_params)
    mask = (1 << (E * bits)) - 1
    what = (f"one training step of {BATCH} images (scikit-learn digits) of {NET} at {PRECISION} bits on one node "
            f"({len(prog.ops)} instructions; golden loss {losses[0]:.4f})")
    return {"program": [[(isa.encode(ins) >> (32 * i)) & 0xFFFFFFFF for i in range(words32(isa.INSTR_BITS))]
                        for ins in prog.ops],
            "table": list(prog.table),
            "fwd_in": host.image_beats(), "host_in": side_beats(prog.host_in, E, bits),
            "bwd_in": [b & mask for b in side_beats(bwd_in, E, bits)],
            "fwd_out": [b & mask for b in side_beats(fwd_out, E, bits)],
            "host_out": [b & mask for b in side_beats(host_out, E, bits)],
            "images": BATCH, "what": what}


def write_case(out_dir, cfg) -> str:
    """Write :func:`node_case` into ``out_dir`` (created); returns its description."""
    case = node_case(cfg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    width = -(-cfg[0].beat_bits // 4)
    for stem in ("table", "fwd_in", "host_in", "bwd_in", "fwd_out", "host_out"):
        lines = [f"{v:0{width if stem != 'table' else 8}x}" for v in case[stem]]
        (out / f"{stem}.hex").write_text(f"# {stem}: {len(lines)} {'words' if stem == 'table' else 'beats'}\n"
                                         + "".join(f"{ln}\n" for ln in lines))
    prog = case["program"]
    (out / "program.hex").write_text(f"# program: {len(prog)} instructions of {len(prog[0])} words, least significant "
                                     "first\n" + "".join(" ".join(f"{w:08x}" for w in ins) + "\n" for ins in prog))
    (out / "case.txt").write_text(f"images {case['images']}\nmax_cycles {MAX_CYCLES}\nwhat {case['what']}\n")
    return case["what"]
