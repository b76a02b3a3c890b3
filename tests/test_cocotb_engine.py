"""The cocotb bench (tb/cocotb/) on the emitted engine: built by cocotb's own Verilator runner from
the kit files alone (waivers, package, Verilog, AXI-Stream wrapper, ``-Wall``), it drives fwd,
bwd_data and bwd_weight on the ``small`` engine with commands packed by the PyMTL3-free encoder,
at 0% and 30% stalls on every stream, and the results equal the golden model bit for bit."""

from pathlib import Path

import numpy as np
import pytest

from pymtl_fp.engine import msgs
from pymtl_fp.engine.config import PRESETS
from pymtl_fp.tb.cocotb import program_file


def test_a_malformed_program_line_is_one_error_naming_file_and_line(tmp_path):
    bad = tmp_path / "p.txt"
    bad.write_text("cmd op=0 count=3\ndin 1\ncmd op=0 count=99999999\n")
    too_wide = r"p\.txt:3: command field count=99999999 does not fit in 24 bits"
    with pytest.raises(program_file.ProgramFileError, match=too_wide):
        program_file.read(bad)
    bad.write_text("# a comment\n\ncmd op=0\nfoo 3\n")
    with pytest.raises(program_file.ProgramFileError, match=r"p\.txt:4: expected 'cmd"):
        program_file.read(bad)
    bad.write_text("cmd op=1 target=2 count=5\ndin -7\n")
    assert program_file.read(bad) == ([{"op": 1, "target": 2, "count": 5}], [-7])


@pytest.mark.slow
@pytest.mark.verilator
def test_the_cocotb_bench_on_the_emitted_kit_is_bit_exact(tmp_path):
    from pymtl_fp.cli.main import main
    from pymtl_fp.engine import program
    from pymtl_fp.engine.cases import golden_op, validate_case
    from pymtl_fp.tb.cocotb import runner
    from pymtl_fp.tb.engine_harness import random_case

    cfg = PRESETS["small"]
    top = cfg.module_name()
    kit = tmp_path / "kit"
    assert main(["translate", "--unit", "engine", "--config", "small", "--out", str(kit), "--no-synth"]) == 0
    build = runner.build(kit, top, tmp_path / "sim_build")
    assert not [ln for ln in (build / "build.log").read_text().splitlines() if ln.startswith("%Warning")]

    rng = np.random.default_rng(23)
    ops, progs, cases, jobs = ("fwd", "bwd_data", "bwd_weight"), {}, {}, []
    for op in ops:
        cases[op] = validate_case(cfg, op, random_case(cfg, op, rng, n=2, c=5, k=6, h=5, w=4, r=3, s=3, pad=1))
        progs[op] = program.build(cfg, op, cases[op])
        path = tmp_path / f"{op}.txt"
        program_file.write(path, [msgs.cmd_fields(c) for c in progs[op].cmds], progs[op].din)
        jobs += [dict(program=path, stall=stall, seed=seed) for stall, seed in ((0.0, 1), (0.3, 2))]
    results = runner.run(build, top, jobs, tmp_path / "run")

    for i, op in enumerate(ops):
        want = golden_op(cfg, op, cases[op])
        for res, stall in zip(results[2 * i: 2 * i + 2], (0, 30)):
            assert len(res["dout"]) == progs[op].out_count(), (op, stall)
            got = progs[op].unpack(res["dout"])
            assert set(got) == {"fwd": {"y"}, "bwd_data": {"dx"}, "bwd_weight": {"dw", "db"}}[op]
            for name, value in got.items():
                np.testing.assert_array_equal(value, want[name], err_msg=f"{op} {name} stall {stall}%")
        assert results[2 * i + 1]["cycles"] > results[2 * i]["cycles"]  # the stalls did hold the streams
    assert Path(tmp_path / "run" / "results.xml").is_file()


def test_the_runner_command_refuses_bad_input_in_one_line_before_building(tmp_path, capsys):
    from pymtl_fp.tb.cocotb import runner

    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "E_axis.sv").write_text("module E_axis; endmodule\n")
    good, bad = tmp_path / "p.txt", tmp_path / "bad.txt"
    good.write_text("cmd op=0 count=1\ndin 1\n")
    bad.write_text("cmd op=0 foo=1\n")
    for argv, why in (([str(tmp_path / "kit"), str(good), "--stall", "1.5"], "--stall must be in [0, 1)"),
                      ([str(tmp_path / "kit"), str(bad)], "bad.txt:1: unknown command fields ['foo']"),
                      ([str(tmp_path), str(good)], "expected one <top>_axis.sv")):
        assert runner.main([*argv, "--out", str(tmp_path / "run")]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and why in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()  # nothing built
