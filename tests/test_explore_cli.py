"""``pymtl-fp explore``: every study runs on its defaults, writes its files, and bad input is
one line of error, never a traceback."""

import csv

import pytest

from pymtl_fp.cli import main as cli
from pymtl_fp.cli.errors import UserError
from pymtl_fp.cli.explore_options import parse_fpgas


def _run(argv, capsys):
    rc = cli.main(["explore"] + argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("study,stems", [
    ("scaling", ["scaling_vgg16_xc7vx690t.csv", "scaling_vgg16_xc7vx690t.md",
                 "scaling_vgg16_xc7vx690t.png"]),
    ("partition", ["partition_resnet152_asymmetric16.csv", "partition_resnet152_asymmetric16.md",
                   "partition_resnet152_asymmetric16.png"]),
    ("design", ["design_vgg-cifar_xcvu9p_b128_pareto.csv", "design_vgg-cifar_xcvu9p_b128.md",
                "design_vgg-cifar_xcvu9p_b128.png"]),
    ("zoo", ["zoo.csv", "zoo.md"]),
    ("parallelism", ["parallelism_vgg16_xc7vx690t_6x10G.csv", "parallelism_vgg16_xc7vx690t_6x10G.md",
                     "parallelism_vgg16_xc7vx690t_6x10G.png"]),
    ("modes", ["modes_vgg-cifar.csv", "modes_vgg-cifar_network.csv", "modes_vgg-cifar.md"]),
])
def test_each_study_runs_on_defaults(study, stems, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc, _, err = _run([study], capsys)
    assert rc == 0, err
    for stem in stems:
        f = tmp_path / "reports" / stem
        assert f.is_file() and f.stat().st_size > 0, stem
        if stem.endswith(".png"):
            assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert f.stat().st_size < 200_000


def test_scaling_table_content(tmp_path, capsys):
    rc, out, _ = _run(["scaling", "--net", "alexnet", "--fpgas", "1..4,8", "--link", "6x10G",
                       "--link", "inf", "--out", str(tmp_path), "--no-plot"], capsys)
    assert rc == 0
    assert "knee" in out and "swept in" in out
    rows = list(csv.DictReader((tmp_path / "scaling_alexnet_xc7vx690t.csv").open()))
    assert sorted({int(r["fpgas"]) for r in rows}) == [1, 2, 3, 4, 8]
    assert {r["link"] for r in rows} == {"6x10G", "inf"}
    assert not (tmp_path / "scaling_alexnet_xc7vx690t.png").exists()


def test_modes_and_the_channel_only_design(tmp_path, capsys):
    rc, out, err = _run(["modes", "--net", "vgg16", "--layers", "conv1_1,fc7", "--arrays", "16", "--batches", "32",
                         "--out", str(tmp_path)], capsys)
    assert rc == 0, err
    rows = list(csv.DictReader((tmp_path / "modes_vgg16.csv").open()))
    assert [(r["layer"], r["fp_choice"]) for r in rows] == [("conv1_1", "batch"), ("fc7", "channel")]
    assert "every mode" in out and "| conv1_1 | 16 | 32 |" in (tmp_path / "modes_vgg16.md").read_text()
    for modes in ("channel", "channel,packed,batch"):
        rc, out, err = _run(["design", "--out", str(tmp_path / modes), "--no-plot", "--batch", "32",
                             "--modes", modes], capsys)
        assert rc == 0, err
    md = (tmp_path / "channel" / "design_vgg-cifar_xcvu9p_b32.md").read_text()
    assert "of its dataflows: channel-parallel\n" in md
    md = (tmp_path / "channel,packed,batch" / "design_vgg-cifar_xcvu9p_b32.md").read_text()
    assert "channel-parallel, tap-packed (a first layer), batch-parallel (a forward pass" in md


def test_partition_with_a_json_devices_file(tmp_path, capsys):
    f = tmp_path / "c.json"
    f.write_text('{"link": {"gbps": 40}, "fpga": [{"part": "xcvu9p", "count": 2}, '
                 '{"part": "xc7vx690t", "clock_mhz": 150}]}')
    rc, out, err = _run(["partition", "--net", "alexnet", "--devices", str(f), "--out",
                         str(tmp_path), "--no-plot"], capsys)
    assert rc == 0, err
    assert "dp:" in out and "fpdeep:" in out and "even:" in out
    text = (tmp_path / "partition_alexnet_c.md").read_text()
    assert "xc7vx690t" in text and "@150 MHz" in text


@pytest.mark.parametrize("argv,needle", [
    (["scaling", "--net", "lenet-9000"], "unknown network"),
    (["scaling", "--device", "xc9z999"], "unknown device"),
    (["scaling", "--fpgas", "0..3"], "--fpgas"),
    (["scaling", "--fpgas", "8..2"], "--fpgas"),
    (["scaling", "--fpgas", "lots"], "--fpgas"),
    (["scaling", "--link", "6xfast"], "bad link spec"),
    (["scaling", "--array", "16by8"], "ENGINESxP"),
    (["scaling", "--array", "2x64"], "ENGINESxP"),
    (["scaling", "--batch", "0"], "--batch"),
    (["design", "--device", "nope"], "unknown device"),
    (["design", "--dram-gbs", "-1"], "--dram-gbs"),
    (["partition", "--devices", "/nonexistent/file.toml"], "no such file"),
    (["parallelism", "--link", "6x10G,250G"], "give one link model"),
    (["parallelism", "--grad-bits", "0"], "--grad-bits"),
    (["parallelism", "--batches", "0,4"], "outside"),
    (["parallelism", "--fpgas", "9999"], "--fpgas"),
    (["modes", "--arrays", "64"], "--arrays"),
    (["modes", "--batches", "0"], "--batches"),
    (["modes", "--layers", "pool1"], "no MAC layer"),
    (["modes", "--net", "resnet9000"], "unknown network"),
    (["design", "--modes", "packed,batch"], "includes channel"),
    (["design", "--modes", "channel,diagonal"], "--modes"),
])
def test_bad_input_is_one_line(argv, needle, tmp_path, capsys):
    rc, _, err = _run(argv + ["--out", str(tmp_path)], capsys)
    assert rc == 1
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("content,needle", [
    ("[[fpga]]\npart = 'xcvu9p'\ncount = 0\n", "count"),
    ("[[fpga]]\npart = 'vu99'\n", "unknown device"),
    ("fpga = 3\n", "[[fpga]]"),
    ("[[fpga]]\npart = 'xcvu9p'\n[[fpga]]\npart = 'xcvu9p'\n[[links]]\nindex = 5\ngbps = 1\n",
     "index"),
    ("[[fpga]]\npart = 'xcvu9p'\nflavour = 'x'\n", "unknown field"),
    ("[[fpga]\npart = 'xcvu9p'\n", "bad TOML"),
    ("[link]\nlanes = 0\n[[fpga]]\npart = 'xcvu9p'\ncount = 2\n", "lanes"),
])
def test_malformed_devices_file(content, needle, tmp_path, capsys):
    f = tmp_path / "bad.toml"
    f.write_text(content)
    rc, _, err = _run(["partition", "--devices", str(f), "--out", str(tmp_path)], capsys)
    assert rc == 1 and needle in err and "Traceback" not in err


def test_memory_limit_infeasible_is_reported(tmp_path, capsys):
    f = tmp_path / "tiny.toml"
    f.write_text("[[fpga]]\npart = 'xc7k325t'\ncount = 2\n")
    rc, _, err = _run(["partition", "--net", "vgg16", "--devices", str(f), "--memory-limit",
                         "--out", str(tmp_path), "--no-plot"], capsys)
    assert rc == 1 and "on-chip memory" in err


def test_memory_limit_reports_the_weight_balanced_partition(tmp_path, capsys):
    rc, out, _ = _run(["partition", "--net", "resnet50", "--bits", "8", "--pieces", "4", "--memory-limit",
                       "--out", str(tmp_path), "--no-plot"], capsys)
    assert rc == 0 and "dp+wb: II" in out and "of weights kept by FPGAs with room" in out
    md = next(tmp_path.glob("partition_*.md")).read_text()
    assert "| dp+wb |" in md and "storage fits" in md


def test_parse_fpgas():
    assert parse_fpgas("1..4") == [1, 2, 3, 4]
    assert parse_fpgas("1..10:4") == [1, 5, 9, 10]
    assert parse_fpgas("8, 2,2, 1..3") == [1, 2, 3, 8]
    for bad in ("0..3", "5..4", "", "a", "1..2:0", "0", "1..99999"):
        with pytest.raises(UserError):
            parse_fpgas(bad)
