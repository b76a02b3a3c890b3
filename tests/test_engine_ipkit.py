"""The engine as IP (pymtl_fp/engine/ipkit.py, encoding.py, verilog_names.py): one definition of
the command word behind the PyMTL3 bitstruct, the Python packer, the C header and the SV package;
two configurations in one Verilator build; a plain C++ Verilator bench written only against the
emitted header and wrapper, bit-exact with the golden model on fwd, bwd_data and bwd_weight."""

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.engine import encoding, ipkit, msgs
from pymtl_fp.engine.config import PRESETS

TB = Path(__file__).resolve().parent.parent / "tb" / "cxx" / "engine_tb.cpp"


FREE = [f.name for f in encoding.FIELDS if f.name not in encoding.PRODUCTS]


@st.composite
def commands(draw):
    names = draw(st.sets(st.sampled_from(FREE)))
    return {n: draw(st.integers(0, 15 if n in encoding.FACTORS else (1 << encoding.FIELD[n].bits) - 1))
            for n in sorted(names)}


@settings(max_examples=200, deadline=None)
@given(commands())
def test_the_python_packer_gives_pymtl3s_bits(fields):
    word = encoding.pack(**fields)
    assert word == int(msgs.make_cmd(**fields).to_bits())
    got = encoding.unpack(word)
    assert {k: v for k, v in got.items() if k in fields} == fields
    assert all(v == 0 for k, v in got.items() if k not in fields and k not in encoding.PRODUCTS)
    # the products are filled in from their factors
    # a batch-parallel map (bp=1) counts image tiles and channels in place of images and channel tiles
    n, t = ("nt", "c") if fields.get("bp") else ("n", "ct")
    assert got["sz_x"] == fields.get(n, 0) * fields.get(t, 0) * fields.get("h", 0) * fields.get("w", 0)
    assert got["crs"] == fields.get("c", 0) * fields.get("r", 0) * fields.get("s", 0)
    assert encoding.pack(**got) == word  # given and right: accepted


def test_a_wrong_or_oversized_product_is_refused():
    with pytest.raises(ValueError, match=r"hw=5 must be h\*w = 6"):
        encoding.pack(h=2, w=3, hw=5)
    with pytest.raises(ValueError, match=r"hw=5 must be h\*w = 6"):
        msgs.make_cmd(h=2, w=3, hw=5)
    with pytest.raises(ValueError, match=r"sz_x=131072 does not fit in 17 bits"):
        encoding.pack(n=4, ct=8, h=64, w=64)


def test_the_command_word_layout():
    assert encoding.CMD_BITS == 738 == sum(b for _, b in msgs.CMD_FIELDS)
    assert encoding.LSB["op"] == 734 and encoding.LSB["sz_pool"] == 0  # the first field is the most significant
    # below raw: the row band's pt (8 bits) and hi (16), acc (1), the batch-parallel bp (1) and nt (16), then
    # 11 products of 17 bits and 5 of 24
    assert (encoding.LSB["raw"], encoding.LSB["pt"], encoding.LSB["hi"], encoding.LSB["acc"]) == (349, 341, 325, 324)
    assert (encoding.LSB["bp"], encoding.LSB["nt"]) == (323, 307)
    assert encoding.OP["fwd"] == msgs.OP_FWD and encoding.BUF["G"] == msgs.BUF_G
    with pytest.raises(ValueError, match="count=16777216 does not fit in 24 bits"):
        encoding.pack(count=1 << 24)
    with pytest.raises(ValueError, match="unknown command fields"):
        encoding.pack(opcode=1)


def test_the_sv_package_struct_is_the_command_word():
    cfg = PRESETS["small"]
    text = ipkit.sv_package(cfg.module_name(), cfg)
    members = re.findall(r"logic \[(\d+):0\] (\w+);", text.split("typedef struct packed")[1])
    assert [(n, int(m) + 1) for m, n in members] == [(f.name, f.bits) for f in encoding.FIELDS]
    assert f"package {cfg.module_name()}_pkg;" in text and "OP_BWD_WEIGHT = 4'd4" in text


def test_the_reference_names_every_field_with_its_bits():
    cfg = PRESETS["small"]
    text = ipkit.reference(cfg.module_name(), cfg)
    for f in encoding.FIELDS:
        lsb = encoding.LSB[f.name]
        bits = f"[{lsb + f.bits - 1}:{lsb}]" if f.bits > 1 else f"[{lsb}]"
        assert f"| {f.name} | {bits} | {f.bits} |" in text
    assert "synchronous, active high" in text and "Icarus" in text


def test_the_kit_states_the_elements_per_beat():
    """E = stream_lanes: a configuration localparam/macro, din/dout E*STREAM_BITS wide in the
    wrapper, and the reference's port table and beat rule."""
    cfg = PRESETS["small"].replace(stream_lanes=4)
    top = cfg.module_name()
    assert "localparam int unsigned STREAM_LANES = 4;" in ipkit.sv_package(top, cfg)
    assert f"#define {top}_STREAM_LANES 4" in ipkit.c_header(top, cfg)
    wrapper = ipkit.axis_wrapper(top, cfg)
    assert wrapper.count(f"[{top}_pkg::STREAM_LANES*{top}_pkg::STREAM_BITS-1:0]") == 2
    ref = ipkit.reference(top, cfg)
    assert "| 128 / 1 / 1 | LOAD data, 4 elements per beat" in ref and "`ceil(count/E)` beats" in ref
    assert "| 32 / 1 / 1 | LOAD data, one element per beat" in ipkit.reference(top, PRESETS["small"])


def test_the_c_header_packs_as_the_python_packer(tmp_path):
    """Compile the header with the system C compiler, pack random commands in C, compare words."""
    cfg = PRESETS["small"]
    top = cfg.module_name()
    (tmp_path / f"{top}.h").write_text(ipkit.c_header(top, cfg))
    rng = np.random.default_rng(5)
    cases = [{n: int(rng.integers(0, 16 if n in encoding.FACTORS else 1 << encoding.FIELD[n].bits)) for n in FREE
              if rng.random() < 0.7} for _ in range(20)]
    body = "\n".join(
        "  { %s_cmd_t c; memset(&c, 0, sizeof c); %s %s_cmd_products(&c); if (%s_cmd_pack(&c, w)) return 1; dump(w); }"
        % (top, " ".join(f"c.{k} = {v}u;" for k, v in case.items()), top, top) for case in cases)
    (tmp_path / "t.c").write_text(f"""#include <stdio.h>
#include <string.h>
#include "{top}.h"
static void dump(const uint32_t *w) {{ for (int i = 0; i < {top}_CMD_WORDS; ++i) printf("%u ", w[i]); printf("\\n"); }}
int main(void) {{
  uint32_t w[{top}_CMD_WORDS];
{body}
  {{ {top}_cmd_t c; memset(&c, 0, sizeof c); c.lgst = 8; if ({top}_cmd_pack(&c, w) != 16) return 2; }}
  {{ {top}_cmd_t c; memset(&c, 0, sizeof c); c.n = 4; c.ct = 8; c.h = 64; c.w = 64; {top}_cmd_products(&c);
     if ({top}_cmd_pack(&c, w) != {[f.name for f in encoding.FIELDS].index("sz_x") + 1}) return 3; }}
  return 0;
}}
""")
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-o", "t", "t.c"], cwd=tmp_path, check=True)
    out = subprocess.run(["./t"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout.splitlines()
    assert [list(map(int, line.split())) for line in out] == [encoding.words32(encoding.pack(**c)) for c in cases]
    assert encoding.FIELDS[15].name == "lgst"  # the refused field's index + 1 above


def _translate(out: Path, preset: str) -> str:
    from pymtl_fp.cli.main import main

    assert main(["translate", "--unit", "engine", "--config", preset, "--out", str(out), "--no-synth"]) == 0
    return PRESETS[preset].module_name()


def _verilator(cwd: Path, args: list) -> subprocess.CompletedProcess:
    from pymtl_fp.toolchain import make_env, setup_verilator

    info = setup_verilator()
    return subprocess.run([info.executable, *args], cwd=cwd, capture_output=True, text=True,
                          env=make_env(dict(os.environ)), check=False)


@pytest.mark.slow
@pytest.mark.verilator
def test_two_configurations_build_together_in_one_verilator_design(tmp_path):
    tops = [_translate(tmp_path, p) for p in ("tiny", "small")]
    inst = "\n".join(f"""  logic [{encoding.CMD_BITS - 1}:0] c{i}; logic [31:0] d{i}, o{i}; logic r{i}, dr{i}, ov{i}, b{i};
  assign c{i} = cmd; assign d{i} = din;
  {t}_axis e{i} (.clk(clk), .reset(reset), .cmd_tdata(c{i}), .cmd_tvalid(cmd_val), .cmd_tready(r{i}),
    .din_tdata(d{i}), .din_tvalid(din_val), .din_tready(dr{i}), .dout_tdata(o{i}), .dout_tvalid(ov{i}),
    .dout_tready(1'b1), .busy(b{i}));""" for i, t in enumerate(tops))
    (tmp_path / "both.sv").write_text(f"""module both (input logic clk, input logic reset,
  input logic [{encoding.CMD_BITS - 1}:0] cmd, input logic cmd_val, input logic [31:0] din, input logic din_val,
  output logic [31:0] out, output logic any);
{inst}
  assign out = o0 ^ o1;
  assign any = r0 | r1 | dr0 | dr1 | ov0 | ov1 | b0 | b1;
endmodule
""")
    files = [f"{tops[0]}_waivers.vlt", f"{tops[1]}_waivers.vlt"] + [f"{t}_pkg.sv" for t in tops] + \
            [f"{t}.sv" for t in tops] + [f"{t}_axis.sv" for t in tops] + ["both.sv"]
    proc = _verilator(tmp_path, ["--cc", "--build", "-Wall", "-j", "2", "--Mdir", "obj_both", *files,
                                 "--top-module", "both"])
    warnings = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("%Warning", "%Error"))]
    assert proc.returncode == 0 and not warnings, (warnings or proc.stderr[-2000:])
    assert (tmp_path / "obj_both" / "Vboth").exists() or list((tmp_path / "obj_both").glob("*.a"))


def _program_file(path: Path, prog) -> None:
    from pymtl_fp.tb.cocotb import program_file  # the format both benches read

    program_file.write(path, [msgs.cmd_fields(c) for c in prog.cmds], prog.din)


@pytest.mark.slow
@pytest.mark.verilator
def test_a_plain_cxx_bench_on_the_emitted_header_is_bit_exact(tmp_path):
    """tb/cxx/engine_tb.cpp (only the emitted T.h and T_axis) drives fwd, bwd_data and
    bwd_weight with 30% stalls on every stream; the results equal the golden model."""
    from pymtl_fp.engine import program
    from pymtl_fp.engine.cases import golden_op, validate_case
    from pymtl_fp.tb.engine_harness import random_case

    top = _translate(tmp_path, "small")
    cfg = PRESETS["small"]
    proc = _verilator(tmp_path, ["--cc", "--exe", "--build", "-Wall", "-j", "2", "--Mdir", "obj_tb",
                                 f"{top}_waivers.vlt", f"{top}_pkg.sv", f"{top}.sv", f"{top}_axis.sv", str(TB),
                                 "--top-module", f"{top}_axis", "-CFLAGS", f"-DENGINE_TOP={top} -I{tmp_path}",
                                 "-o", "engine_tb"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    exe = tmp_path / "obj_tb" / "engine_tb"
    rng = np.random.default_rng(11)
    for op in ("fwd", "bwd_data", "bwd_weight"):
        case = validate_case(cfg, op, random_case(cfg, op, rng, n=2, c=6, k=5, h=5, w=5, r=3, s=3, pad=1))
        prog = program.build(cfg, op, case)
        _program_file(tmp_path / f"{op}.txt", prog)
        cycles = {}
        for stall in (0, 30):
            run = subprocess.run([str(exe), f"{op}.txt", f"{op}.out", str(stall), "7"], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=300, check=False)
            assert run.returncode == 0 and run.stdout.startswith("DONE"), run.stdout + run.stderr
            cycles[stall] = int(re.search(r"cycles=(\d+)", run.stdout).group(1))
            elements = [int(v) for v in (tmp_path / f"{op}.out").read_text().split()]
            assert len(elements) == prog.out_count()
            got, want = prog.unpack(elements), golden_op(cfg, op, case)
            assert set(got) == {"fwd": {"y"}, "bwd_data": {"dx"}, "bwd_weight": {"dw", "db"}}[op]
            for name, value in got.items():
                np.testing.assert_array_equal(value, want[name], err_msg=f"{op} {name} stall {stall}%")
        assert cycles[30] > cycles[0]  # the stalls did hold the streams
