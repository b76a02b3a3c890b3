"""``pymtl-fp import MODEL.onnx --out NET.toml``: an ONNX model as a net description for ``--net``.

Reads the ONNX file with :func:`pymtl_fp.interop.onnx_net.net_from_onnx` (a chain of Conv, Relu,
MaxPool, Flatten/Reshape, Gemm or MatMul + Add nodes), gives it the number formats and training
settings of a zoo net (``--like``, default ``lenet-digits``), and writes it as TOML or JSON (by the
suffix of ``--out``; :func:`pymtl_fp.net.save_net`), which ``pymtl-fp train --net``, ``explore``
and ``bench`` take.  Only the architecture goes into the file; the ONNX weights are read by
:func:`pymtl_fp.interop.onnx_net.params_from_onnx` in a library call
(``run_training(..., init_params=...)``).  An unsupported node, a malformed file or a bad option
is one line naming it; nothing is written but ``--out``.
"""

from __future__ import annotations

import argparse
import os

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError

HELP = "import a network from an ONNX file as a net description (TOML or JSON) that --net takes"

SUFFIXES = (".toml", ".json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL.onnx", help="the ONNX file to import")
    parser.add_argument("--out", required=True, metavar="NET.toml|NET.json",
                        help="the net description to write (TOML or JSON, by the suffix)")
    parser.add_argument("--input-shape", metavar="C,H,W",
                        help="the input image shape (default: the graph input's)")
    parser.add_argument("--name", metavar="NAME", help="the net's name (default: the file's stem)")
    parser.add_argument("--like", default="lenet-digits", metavar="NET",
                        help="the preset or net file whose number formats and [train] settings the net gets "
                             "(default lenet-digits)")


def _shape(text):
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(p.isdigit() and len(p) < 9 and int(p) >= 1 for p in parts):
        raise UserError(f"--input-shape {text[:100]}: give C,H,W (three positive integers)")
    return tuple(int(p) for p in parts)


def main(args: argparse.Namespace) -> int:
    from pymtl_fp.interop.chain import InteropError
    from pymtl_fp.interop.onnx_net import net_from_onnx
    from pymtl_fp.net import NetError, load_net, save_net

    out = validate.output_file(args.out, "--out")
    if out.suffix.lower() not in SUFFIXES:
        raise UserError(f"--out {args.out}: the file name must end in .toml or .json")
    try:
        same = os.path.exists(args.model) and os.path.samefile(args.model, out) if out.exists() else False
    except OSError:
        same = False
    if same:
        raise UserError(f"--out {args.out}: the same file as the model; give the net its own file")
    shape = _shape(args.input_shape)
    try:
        like = load_net(args.like)
    except NetError as exc:
        raise UserError(f"--like {args.like}: {exc}") from None
    try:
        net = net_from_onnx(args.model, shape, args.name, formats=like)
    except InteropError as exc:
        text = str(exc)
        raise UserError(text if text.startswith(str(args.model)) else f"{args.model}: {text}") from None
    except NetError as exc:
        raise UserError(f"{args.model}: {exc}") from None
    save_net(net, out)
    shapes = net.shapes()
    print(f"net {net.name}: input {'x'.join(map(str, net.input_shape))}, {len(net.layers)} layers, "
          f"{net.classes} outputs; formats {', '.join(sorted(net.formats))} and [train] of {like.name}")
    for layer, shape_out in zip(net.layers, shapes[1:]):
        kind = type(layer).__name__.lower() + (" + relu" if getattr(layer, "relu", False) else "")
        print(f"  {layer.name:<16} {kind:<12} -> {'x'.join(map(str, shape_out))}")
    print(f"wrote {out}")
    return 0
