"""``pymtl-fp explore``: design-space and scaling studies (analytic models, no simulation).

Sub-commands (each runs with no options, on built-in defaults):

* ``scaling``   -- FPDeep-style balanced partition of a network on 1..N identical FPGAs in a
  chain, under several link bandwidths: throughput, utilization, busiest link, knee, storage;
* ``partition`` -- the optimal contiguous partition (dynamic programming) of a network over a
  chain of FPGAs of different sizes, against an even split and FPDeep balancing;
* ``design``    -- DarkFPGA-style search over engines (P, E), tiling and batch tile on one FPGA:
  the best points and the Pareto front;
* ``parallelism`` -- FPDeep's pipeline vs data-parallel (ring all-reduce) vs hybrid training for
  every cluster size and mini-batch: which wins where;
* ``modes``     -- per MAC layer, the engine's dataflows (channel-parallel, tap-packed,
  batch-parallel): utilization of each pass under each, the fastest, the whole network's figure;
* ``zoo``       -- the networks' FP/BP/WG operation counts against their published totals (CSV and
  Markdown).

Outputs go to ``--out DIR`` (default ``reports/`` in the current directory): CSV, Markdown and
PNG files named after the study.  This module holds the options; the studies run in
:mod:`pymtl_fp.cli.explore_studies`, the option readers are :mod:`pymtl_fp.cli.explore_options`.
"""

from __future__ import annotations

import argparse

from pymtl_fp.cli import explore_studies as studies
from pymtl_fp.cli.explore_options import DEFAULT_LINKS

HELP = "design-space and scaling studies: scaling, partition, design, parallelism, modes, zoo"


def _common(p, net, bits, batch=None):
    """--net, --bits, --batch (unless ``batch`` is None: a study over several), --out, --no-plot."""
    p.add_argument("--net", default=net, help=f"network from the zoo (default {net})")
    p.add_argument("--bits", type=int, default=bits,
                   help=f"word width of activations/weights/gradients (default {bits}; "
                   "<= 8 packs 2 MACs per DSP)")
    if batch is not None:
        p.add_argument("--batch", type=int, default=batch, help=f"mini-batch (default {batch})")
    p.add_argument("--out", default="reports", help="output folder (default ./reports)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="study", metavar="STUDY", required=True)

    p = sub.add_parser("scaling", help="FPDeep-style scaling over 1..N identical FPGAs",
                       description="FPDeep-style balanced partition for every cluster size; "
                       "throughput, utilization, busiest link, knee, storage.")
    _common(p, "vgg16", 16, 32)
    p.add_argument("--device", default="xc7vx690t", help="FPGA part (default xc7vx690t)")
    p.add_argument("--array", default=None, help="the FPGA's engines ENGINESxP: ENGINES engines of PxP, P <= 32 "
                   "(default: from the part's DSP budget)")
    p.add_argument("--fpgas", default="1..128",
                   help="cluster sizes: 1..128, 1..128:4, 1,2,4,8 or a mix (default 1..128)")
    p.add_argument("--link", action="append", default=None,
                   help=f"link model(s), repeatable or comma-separated: NxRG (transceivers "
                   f"per FPGA x line rate), AG (Gb/s per FPGA), linkAG (per link), inf "
                   f"(default {DEFAULT_LINKS})")
    p.add_argument("--pieces", type=int, default=64,
                   help="most pieces a layer may be split into (default 64)")
    p.add_argument("--split", choices=("auto", "rows", "channels"), default="auto",
                   help="how a layer is shared by neighbours (default auto)")
    p.add_argument("--optimal", action="store_true",
                   help="also find the best possible partition for every size and link "
                   "(exact, slower: seconds instead of a fraction of one)")

    p = sub.add_parser("partition", help="optimal (DP) partition over asymmetric FPGAs",
                       description="Optimal contiguous partition of a network over a chain of "
                       "FPGAs of different sizes by dynamic programming, against an even "
                       "split and FPDeep balancing.")
    _common(p, "resnet152", 16, 32)
    p.add_argument("--devices", default=None,
                   help="cluster file, TOML or JSON (default: the bundled asymmetric16.toml)")
    p.add_argument("--pieces", type=int, default=8,
                   help="most pieces a layer may be split into (default 8)")
    p.add_argument("--split", choices=("auto", "rows", "channels"), default="auto")
    p.add_argument("--memory-limit", action="store_true",
                   help="forbid stages whose fine-grained storage exceeds on-chip RAM")

    p = sub.add_parser("design", help="DarkFPGA-style single-FPGA parameter search",
                       description="Search engines (P, E), tiling and batch tile under the "
                       "device's DSP / RAM / DRAM-bandwidth budget; best points and Pareto "
                       "front.")
    _common(p, "vgg-cifar", 8, 128)
    p.add_argument("--device", default="xcvu9p", help="FPGA part (default xcvu9p)")
    p.add_argument("--dram-gbs", type=float, default=None,
                   help="DRAM bandwidth in GB/s (default: the part's typical board)")
    p.add_argument("--top", type=int, default=10, help="best points to list (default 10)")
    p.add_argument("--scheduler", metavar="local|ADDRESS",
                   help="fan the search out over Dask, one task per engine array: local (a local cluster of "
                        "--workers processes) or a running scheduler's address (tcp://host:8786); default: in "
                        "this process")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes of --scheduler local (default 2; an error without it)")
    p.add_argument("--modes", default="channel,packed,batch",
                   help="dataflows a layer's passes may take, the fastest per layer: channel (always), packed "
                   "(a first layer tap-packed), batch (a forward pass batch-parallel); default all three")

    p = sub.add_parser("modes", help="per layer: channel-parallel, tap-packed or batch-parallel",
                       description="Per MAC layer and pass, the MAC utilization of each of the engine's "
                       "dataflows (timing model) and the fastest; the whole network's FP + BP + WG "
                       "utilization channel-only, with tap packing and with every mode.")
    p.add_argument("--net", default="vgg-cifar", help="network (default vgg-cifar)")
    p.add_argument("--arrays", default="16,32", help="array sides P, as --fpgas (default 16,32; at most 32)")
    p.add_argument("--batches", default="4,32", help="images per command, as --fpgas (default 4,32)")
    p.add_argument("--layers", default=None, help="only these MAC layers, comma-separated (default: all)")
    p.add_argument("--out", default="reports", help="output folder (default ./reports)")

    p = sub.add_parser("parallelism", help="pipeline vs data-parallel vs hybrid per mini-batch",
                       description="FPDeep's pipeline, data-parallel training with a ring all-reduce "
                       "(CATERPILLAR's collectives) and hybrids of both, for every cluster size and "
                       "mini-batch: the fastest, and the batch at which each wins.")
    _common(p, "vgg16", 16)
    p.add_argument("--device", default="xc7vx690t", help="FPGA part (default xc7vx690t)")
    p.add_argument("--link", default="6x10G", help="link model (default 6x10G; see explore scaling)")
    p.add_argument("--fpgas", default="1,2,4,8,16,32,64,128", help="cluster sizes (default 1,2,4,...,128)")
    p.add_argument("--batches", default="1,2,4,8,16,32,64,128,256",
                   help="mini-batches, as --fpgas (default 1,2,4,...,256)")
    p.add_argument("--grad-bits", type=int, default=None,
                   help="bits per gradient in the all-reduce (default: the accumulator width, as "
                        "bit-exact data-parallel training needs)")
    p.add_argument("--pieces", type=int, default=64, help="most pieces a layer may be split into (default 64)")

    p = sub.add_parser("zoo", help="operation counts of the networks vs published totals")
    p.add_argument("--net", default=None, help="one network (default: all)")
    p.add_argument("--layers", action="store_true", help="per-layer table")
    p.add_argument("--out", default="reports", help="output folder (default ./reports)")


def main(args) -> int:
    return {"scaling": studies.scaling, "partition": studies.partition, "design": studies.design,
            "parallelism": studies.parallelism, "modes": studies.modes, "zoo": studies.zoo}[args.study](args)
