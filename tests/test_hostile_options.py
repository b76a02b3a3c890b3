"""Careless and hostile options of ``train`` (both engines) and ``translate``, devices files, net files
within every per-layer limit that still cannot run, and documented limits that must be the real
ones: a one-line error naming the option (or file and field) and the limit, exit status 1, no
traceback, nothing written and no simulation started.

Each row: ``(id, argv, pattern)``; ``argv`` may name the prepared input files (``{f:NAME}``, made
from ``FILES``) and ``{tmp}``.  A property test checks that any net within the documented limits is
either accepted by the checks before the work or refused in one line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymtl_fp.cli.cmd_train  # noqa: F401  (imported at collection: the first row does not pay for it)
from pymtl_fp.cli.main import main as cli_main
from pymtl_fp.net import MAX_CHANNELS, MAX_LAYERS, MAX_SIDE
from pymtl_fp.tb.cli_probe import devices_doc, fill, listing, net_doc
from pymtl_fp.tb.hypothesis_profiles import examples

CONV4 = {"type": "conv", "name": "c1", "out_channels": 4, "kernel": 3, "pad": 1}
FC = {"type": "fc", "name": "fc", "out_features": 10}


def _fpga(**fields) -> list:
    return [{"part": "xcvu9p", "count": 2, **fields}]


FILES = {
    "big_input.json": net_doc([1, 1024, 1024], [{"type": "pool", "k": 64}, FC]),
    "layers.json": net_doc([1, 8, 8], [CONV4] + [{"type": "pool", "k": 1}] * MAX_LAYERS + [FC]),
    "epochs.json": net_doc([1, 8, 8], [CONV4, FC], epochs=99_999_999),
    "halve.json": net_doc([1, 8, 8], [CONV4, FC], lr_halve_every=10**14),
    "lr.json": net_doc([1, 8, 8], [CONV4, FC], lr_log2=500),
    "wide.json": net_doc([1, 8, 8], [dict(CONV4, out_channels=MAX_CHANNELS), FC]),
    "pool_first.json": net_doc([1, 8, 8], [{"type": "pool", "k": 2}, FC]),
    "count24.json": net_doc([1, 8, 8], [dict(CONV4, out_channels=128), {"type": "fc", "name": "f1", "out_features": 16384},
                                     FC]),
    "links_number.json": devices_doc(links=5),
    "links_text.json": devices_doc(links="abc"),
    "gbps_text_inf.json": devices_doc(link={"gbps": "inf"}),
    "gbps_huge.json": devices_doc(link={"gbps": 1e300}),
    "rate_zero.json": devices_doc(link={"lanes": 4, "rate_gbps": 0}),
    "lanes_huge.json": devices_doc(link={"lanes": 10**9}),
    "latency_huge.json": devices_doc(link={"gbps": 10, "latency_ns": 1e300}),
    "clock_huge.json": devices_doc(fpga=_fpga(clock_mhz=1e300)),
    "clock_text.json": devices_doc(fpga=_fpga(clock_mhz="300")),
    "dram_zero.json": devices_doc(fpga=_fpga(dram_gbs=0)),
    "array_huge.json": devices_doc(fpga=_fpga(array=[100_000, 32])),
    "array_float.json": devices_doc(fpga=_fpga(array=[1.5, 32])),
    "dsp_huge.json": devices_doc(fpga=[{"name": "big", "dsp": 10**15, "bram36": 10}]),
    "family_number.json": devices_doc(fpga=[{"name": "x", "dsp": 100, "bram36": 10, "family": 7}]),
    "part_number.json": devices_doc(fpga=[{"part": 5}]),
    "part_unknown.json": devices_doc(fpga=[{"part": "xc9z"}]),
    "description_table.json": devices_doc(description={"a": 1}),
}

C = ["train", "--engine", "cluster"]
T = ["translate", "--config", "tiny", "--out", "{tmp}/t"]
EP = ["explore", "partition", "--no-plot", "--out", "{tmp}/r", "--devices"]
ROWS = [
    # documented limits that are the real ones, named by the option
    ("act-depth-1", C + ["--act-depth", "1"], r"--act-depth must be in 2\.\.65536, got 1$"),
    ("act-depth-65537", C + ["--act-depth", "65537"], r"--act-depth must be in 2\.\.65536, got 65537"),
    ("weight-depth-huge", C + ["--weight-depth", "100000"], r"--weight-depth must be in 2\.\.65536"),
    ("link-latency-512", C + ["--link-latency", "512"], r"--link-latency must be in 1\.\.511, got 512"),
    ("link-latency-4096", C + ["--link-latency", "4096"], r"--link-latency must be in 1\.\.511, got 4096"),
    ("nodes-7", C + ["--nodes", "7"], r"--nodes 7: lenet-digits can be spread over at most 6 nodes"),
    ("nodes-64", C + ["--nodes", "64"], r"--nodes 64: lenet-digits can be spread over at most 6 nodes"),
    ("nodes-cp", C + ["--nodes", "4", "--schedule", "cp"], r"--nodes 4: .*at most 3 nodes .*layer boundaries"),
    ("nodes-array-8", C + ["--nodes", "6", "--array", "8"], r"--nodes 6: .*at most 5 nodes of 8-channel tiles"),
    ("stream-lanes-link-too-wide", C + ["--stream-lanes", "16", "--array", "16", "--precision", "16", "--nodes", "1"],
     r"--stream-lanes 16: a link message of 16 64-bit elements is too wide"),
    # options that were silently ignored or silently changed
    ("pipeline-empty", C + ["--pipeline", ""], r"--pipeline '': an empty value"),
    ("trace-is-report", C + ["--trace", "{tmp}/x.json", "--report", "{tmp}/x.json"],
     r"--trace .*x\.json: the same file as --report"),
    ("trace-is-report-dot", C + ["--trace", "{tmp}/./x.json", "--report", "{tmp}/x.json"], r"the same file as --report"),
    ("fault-seed-negative", C + ["--level", "verilator", "--faults", "1e-3", "--fault-seed", "-1"],
     r"--fault-seed must be in 0\.\.4294967295, got -1"),
    ("fault-seed-huge", C + ["--level", "verilator", "--faults", "1e-3", "--fault-seed", "99999999999999"],
     r"--fault-seed must be in 0\.\.4294967295"),
    ("fault-seed-alone", C + ["--fault-seed", "5"], r"--fault-seed .*give --faults"),
    ("faults-below-resolution", C + ["--level", "verilator", "--faults", "1e-9"], r"--faults 1e-09: .*2\^-16"),
    ("faults-off-resolution", C + ["--level", "verilator", "--faults", "1e-4"], r"--faults 0\.0001: .*nearest"),
    ("no-skip-pymtl", C + ["--no-skip", "--kernel", "pymtl"], r"--no-skip is an option of the direct kernel"),
    ("epochs-cluster", C + ["--epochs", "5"], r"--epochs is for --engine golden; .*--steps"),
    ("clock-tiny", C + ["--clock-mhz", "1e-300"], r"--clock-mhz must be in \[1, 10000\], got 1e-300"),
    ("no-skip-rtl", C + ["--no-skip", "--level", "rtl"], r"--no-skip is an option of the direct kernel"),
    # runs within every limit that cannot run: refused before any simulation
    ("memory-node-buffers", C + ["--nodes", "64", "--parallel", "data", "--array", "32", "--weight-depth", "65536",
                                "--act-depth", "65536", "--max-memory", "8G"],
     r"64 simulated nodes\) needs about 67\.00 GiB of memory; 8\.00 GiB --max-memory 8G"),
    ("memory-big-input-golden", ["train", "--net", "{f:big_input.json}", "--max-memory", "8G"],
     r"training t \(batch 32\) needs about 2\d\.\d\d GiB"),
    ("memory-big-input-cluster", C + ["--nodes", "1", "--net", "{f:big_input.json}", "--max-memory", "8G"],
     r"needs about .* GiB"),
    ("max-memory-word", ["train", "--max-memory", "lots"], r"--max-memory 'lots': a size of at least 1M"),
    ("net-pool-first", C + ["--nodes", "1", "--net", "{f:pool_first.json}"],
     r"t starts with a pool layer: the cluster's nodes run pools after a conv or fc layer"),
    ("count-field", C + ["--nodes", "1", "--net", "{f:count24.json}"],
     r"count=134217728 does not fit in 24 bits: node 0's weights of f1"),
    ("count-field-golden-memory", ["train", "--net", "{f:count24.json}", "--max-memory", "512M"],
     r"needs about 4\.\d\d GiB of memory"),
    # buffers too small for the mapping: refused by the compile, before the run's header line
    ("buffers-act-depth", C + ["--act-depth", "10"], r"does not fit the nodes' buffers \(batch 8\): node 0 buffer X"),
    ("buffers-batch", C + ["--level", "verilator", "--batch", "64"], r"does not fit the nodes' buffers \(batch 64\)"),
    ("buffers-fit-and-depth", C + ["--fit-buffers", "--bias-depth", "128"], r"--bias-depth 128: --fit-buffers sizes"),
    ("max-memory-tiny", C + ["--max-memory", "1K"], r"--max-memory '1K'"),
    ("max-memory-budget", ["train", "--max-memory", "1M"], r"needs about .* MiB of memory; 1\.0 MiB --max-memory 1M"),
    # net files
    ("net-layers", ["train", "--net", "{f:layers.json}"], r"1026 layers; a net has at most 1024"),
    ("net-train-epochs", ["train", "--net", "{f:epochs.json}"], r"train\.epochs must be an integer in 1\.\.1000"),
    ("net-train-halve", ["train", "--net", "{f:halve.json}"], r"train\.lr_halve_every must be an integer in 1\.\.1000"),
    ("net-train-lr", C + ["--net", "{f:lr.json}"], r"--net .*train\.lr_log2 must be an integer in 0\.\.16"),
    # translate: options of another unit, options of a step that does not run
    ("translate-engine-nodes", T + ["--nodes", "4"], r"--nodes: option of --unit cluster, not of --unit engine"),
    ("translate-engine-topology", T + ["--topology", "ring"], r"--topology: option of --unit cluster"),
    ("translate-engine-faults", T + ["--faults", "--nodes", "3"], r"--nodes, --faults: options of --unit cluster"),
    ("translate-link-arrays", ["translate", "--unit", "link", "--config", "default", "--out", "{tmp}/t", "--arrays", "4"],
     r"--arrays: option of --unit cluster, not of --unit link"),
    ("translate-cycles-no-build", T + ["--cycles", "100"], r"--cycles sets the smoke run of --build"),
    ("translate-synth-timeout-no-synth", T + ["--no-synth", "--synth-timeout", "5"], r"--synth-timeout .*--no-synth"),
    ("translate-pipeline-empty", T + ["--pipeline", ""], r"--pipeline '': an empty value"),
    ("translate-engine-name", T + ["--name", "eng"], r"--name is a --unit node option, not for --unit engine"),
    ("translate-engine-case", T + ["--case", "{tmp}/c"], r"--case is a --unit node option"),
    ("translate-node-name-bad", ["translate", "--unit", "node", "--config", "tiny", "--out", "{tmp}/t", "--name", "9x"],
     r"--name '9x': a module name of a letter"),
    ("translate-node-case-too-small", ["translate", "--unit", "node", "--config", "tiny", "--out", "{tmp}/t", "--case",
                                       "{tmp}/c", "--no-synth"], r"--case: the case's net does not fit node tiny"),
    # devices files: every field checked, the file and field named
    ("devices-links-number", EP + ["{f:links_number.json}"], r"links_number\.json: links must be a list"),
    ("devices-links-text", EP + ["{f:links_text.json}"], r"links_text\.json: links must be a list"),
    ("devices-gbps-text-inf", EP + ["{f:gbps_text_inf.json}"], r"gbps_text_inf\.json: .*field 'gbps' must be a number"),
    ("devices-gbps-huge", EP + ["{f:gbps_huge.json}"], r"field 'gbps' must be a finite number > 0 and <= 100000"),
    ("devices-rate-zero", EP + ["{f:rate_zero.json}"], r"rate_zero\.json: \[link\]: field 'rate_gbps' must be .*> 0"),
    ("devices-lanes-huge", EP + ["{f:lanes_huge.json}"], r"field 'lanes' must be .*<= 1024"),
    ("devices-latency-huge", EP + ["{f:latency_huge.json}"], r"field 'latency_ns' must be"),
    ("devices-clock-huge", EP + ["{f:clock_huge.json}"], r"clock_huge\.json: fpga entry 0: field 'clock_mhz' .*<= 10000"),
    ("devices-clock-text", EP + ["{f:clock_text.json}"], r"field 'clock_mhz' must be a number"),
    ("devices-dram-zero", EP + ["{f:dram_zero.json}"], r"dram_zero\.json: fpga entry 0: field 'dram_gbs'"),
    ("devices-array-huge", EP + ["{f:array_huge.json}"], r"array \[100000, 32\] has 102400000 MAC lanes; xcvu9p"),
    ("devices-array-float", EP + ["{f:array_float.json}"], r"array must be \[engines, P\], two integers"),
    ("devices-dsp-huge", EP + ["{f:dsp_huge.json}"], r"field 'dsp' must be"),
    ("devices-family-number", EP + ["{f:family_number.json}"], r"field 'family' must be a string"),
    ("devices-part-number", EP + ["{f:part_number.json}"], r"part_number\.json: fpga entry 0: field 'part' must be"),
    ("devices-part-unknown", EP + ["{f:part_unknown.json}"], r"part_unknown\.json: fpga entry 0: unknown device"),
    ("devices-description-table", EP + ["{f:description_table.json}"], r"description must be a string"),
]




def _run(argv: list, tmp: Path, capsys) -> tuple:
    try:
        rc = cli_main([fill(a, tmp) for a in argv])
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("argv,pattern", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_hostile_option_is_a_one_line_error_before_any_work(argv, pattern, tmp_path, monkeypatch, capsys):
    used = {a[3:-1] for a in argv if a.startswith("{f:")}
    for name in used:
        (tmp_path / name).write_bytes(FILES[name])
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    rc, out, err = _run(argv, tmp_path, capsys)
    assert rc == 1, (rc, out[-500:], err[-800:])
    assert "Traceback" not in err and "Traceback" not in out
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert re.search(pattern, lines[0]), err
    assert out.strip() == "", out  # no header, no simulation, no output
    assert listing(tmp_path) == before, "files appeared: " + ", ".join(sorted(listing(tmp_path) - before))


def test_the_table_names_each_row_once():
    assert len(ROWS) >= 50 and len({r[0] for r in ROWS}) == len(ROWS)


_SIDES = st.integers(1, MAX_SIDE // 8).map(lambda k: 8 * k)  # inputs the digits set fits (1 x 8k x 8k)
_LAYER = st.one_of(
    st.fixed_dictionaries({"type": st.just("conv"), "out_channels": st.integers(1, MAX_CHANNELS),
                           "kernel": st.integers(1, 7), "pad": st.integers(0, 3), "stride": st.integers(1, 4)}),
    st.fixed_dictionaries({"type": st.just("pool"), "k": st.integers(1, 8)}),
    st.fixed_dictionaries({"type": st.just("fc"), "out_features": st.integers(1, MAX_CHANNELS)}),
)


@settings(max_examples=examples(25), deadline=None)
@given(side=_SIDES, layers=st.lists(_LAYER, min_size=1, max_size=6), cluster=st.booleans(),
       batch=st.integers(1, 64))
def test_a_net_within_the_limits_is_accepted_or_refused_in_one_line(side, layers, cluster, batch):
    """Any net within the documented per-layer limits goes through the checks before the work
    without an exception: it is refused in one line (the net's geometry, the data set, the nodes,
    the memory budget) or passes them.  ``--max-memory 1M`` stops every run that passes at the
    memory budget (the digits set alone is larger), so no example trains."""
    import contextlib
    import io
    import tempfile

    named = [dict(layer, name=f"l{i}") if layer["type"] != "pool" else layer for i, layer in enumerate(layers)]
    named.append({"type": "fc", "name": "out", "out_features": 10})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "net.json"
        path.write_bytes(net_doc([1, side, side], named))
        argv = (["train", "--engine", "cluster", "--nodes", "1"] if cluster else ["train"]) + \
            ["--net", str(path), "--batch", str(batch), "--max-memory", "1M"]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli_main(argv)
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        assert rc == 1 and len(lines) == 1, (rc, err.getvalue()[-800:])
        assert "Traceback" not in err.getvalue() and "cycles per step" not in out.getvalue()
        assert os.listdir(tmp) == ["net.json"]


def test_a_command_beyond_the_isa_fields_is_a_one_line_cluster_error():
    """``--steps epoch --batch 719``: a command field of the compiled programs overflows; the compiler
    says so in one line naming the batch (before any simulation), not with an ``IsaError``."""
    from pymtl_fp.cluster.compiler.compile import compile_pipeline
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.compiler.partition import partition
    from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
    from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
    from pymtl_fp.net import load_net

    net = load_net("lenet-digits")
    ccfg = ClusterConfig.homogeneous(1, engine_for_net(net, "8"))
    params = quantize_params(net, init_params_float64(net, 0), "8")
    with pytest.raises(ClusterError, match=r"^batch 719: .*does not fit in 16 bits\); a smaller --batch") as info:
        compile_pipeline(net, ccfg, partition(net, ccfg, 719), params, TrainConfig("8", lr_log2=3), 1, Mapping(bands=0))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("net_name,P,counts", [("lenet-digits", 4, range(1, 7)), ("lenet-digits", 8, range(1, 6)),
                                               ("vgg-digits", 2, [10])])
def test_every_node_count_up_to_the_documented_most_partitions(net_name, P, counts):
    """``--nodes`` up to :func:`max_nodes` runs (the rule, else cuts sharing no layer three ways: on
    vgg-digits at P = 2 the rule shares fc over three of 10 nodes) and one more is refused naming
    that number."""
    from pymtl_fp.cluster.compiler.partition import max_nodes, partition
    from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
    from pymtl_fp.net import load_net

    net = load_net(net_name)
    most = max_nodes(net, P)
    assert max(counts) == most
    for n in counts:
        part = partition(net, ClusterConfig.homogeneous(n, engine_for_net(net, "8", P=P)), 8)
        assert all(part.nodes) and len(part.nodes) == n
    with pytest.raises(ClusterError, match=f"at most {most} nodes"):
        partition(net, ClusterConfig.homogeneous(most + 1, engine_for_net(net, "8", P=P)), 8)


def test_the_documented_link_latency_is_the_real_one():
    from pymtl_fp.cluster.config import MAX_LINK_LATENCY, default_link
    from pymtl_fp.link.config import LinkConfigError

    assert MAX_LINK_LATENCY == 511
    for lanes in (1, 16):
        default_link(32, MAX_LINK_LATENCY, lanes)
        with pytest.raises(LinkConfigError, match="window"):
            default_link(32, MAX_LINK_LATENCY + 1, lanes)


@pytest.mark.parametrize("rate,ok", [(1e-3, True), (0.5, True), (3 / 65536, True), (1e-9, False), (1e-4, False)])
def test_a_fault_rate_is_injected_as_asked_or_refused(rate, ok):
    from pymtl_fp.cluster.config import ClusterError
    from pymtl_fp.cluster.run.session import link_faults

    if not ok:
        with pytest.raises(ClusterError, match=r"2\^-16"):
            link_faults(rate, 1)
        return
    faults = link_faults(rate, 1)
    assert abs(3 * faults["drop"] / 65536 - rate) <= 0.05 * rate
