"""The node as IP (pymtl_fp/cluster/hw/ipkit.py): the program instruction's SystemVerilog package,
C header and ISA reference, generated from the PyMTL3-free ISA definition; the C packer gives
the Python encoder's bits, the package's ``instr_t`` is the Verilog's ``prog_data`` struct."""

import re
import subprocess
import sys

import numpy as np

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw import ipkit as isa_kit
from pymtl_fp.cluster.hw.router_config import RouterConfig
from pymtl_fp.engine import encoding
from pymtl_fp.engine.config import PRESETS

CFG = (PRESETS["tiny"], RouterConfig(stream_bits=32))


def _random_instrs(rng, n):
    out = []
    for _ in range(n):
        head = {name: int(rng.integers(0, 1 << w)) for name, w in isa.HEADER_FIELDS if rng.random() < 0.7}
        # free fields at random (the products' factors below 16, so that every product fits), the
        # product fields filled in, as isa.eng and isa.encode fill them for an engine command
        cmd = {f.name: int(rng.integers(0, 16 if f.name in encoding.FACTORS else 1 << f.bits)) for f in encoding.FIELDS
               if f.name not in encoding.PRODUCTS and rng.random() < 0.5}
        out.append(isa.Instr(**{"kind": 0, **head}, cmd=encoding.products(cmd)))
    return out


def test_the_isa_packs_without_pymtl3():
    code = ("import sys; from pymtl_fp.cluster import isa; w = isa.encode(isa.load(isa.SRC_HOST, target=3, count=9)); "
            "assert w >> (isa.INSTR_BITS - 4) == isa.LOAD; print('pymtl3' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_c_header_packs_instructions_as_the_python_encoder(tmp_path):
    top = "N"
    (tmp_path / "N.h").write_text(isa_kit.c_header(top, CFG))
    instrs = _random_instrs(np.random.default_rng(3), 25)
    body = []
    for ins in instrs:
        sets = [f"c.{name} = {getattr(ins, name)}u;" for name, _ in isa.HEADER_FIELDS]
        sets += [f"c.cmd_{k} = {v}u;" for k, v in ins.cmd.items()]
        body.append("  { N_instr_t c; memset(&c, 0, sizeof c); %s if (N_instr_pack(&c, w)) return 1; dump(w); }"
                    % " ".join(sets))
    (tmp_path / "t.c").write_text(f"""#include <stdio.h>
#include <string.h>
#include "N.h"
static void dump(const uint32_t *w) {{ for (int i = 0; i < N_INSTR_WORDS; ++i) printf("%u ", w[i]); printf("\\n"); }}
int main(void) {{
  uint32_t w[N_INSTR_WORDS];
{chr(10).join(body)}
  {{ N_instr_t c; memset(&c, 0, sizeof c); c.src = 4; if (N_instr_pack(&c, w) != 8) return 2; }}
  if (N_run_word(1, 7, 100) != {isa.run_word(1, 7, 100)}u || N_run_word(0, 0, 1) != 0) return 3;
  return 0;
}}
""")
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-o", "t", "t.c"], cwd=tmp_path, check=True)
    out = subprocess.run(["./t"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout.splitlines()
    want = [[(isa.encode(ins) >> (32 * i)) & 0xFFFFFFFF for i in range(-(-isa.INSTR_BITS // 32))] for ins in instrs]
    assert [list(map(int, line.split())) for line in out] == want
    assert [n for n, _ in isa.HEADER_FIELDS].index("src") + 1 == 8  # the refused field's index + 1 above


def _struct_members(text: str, name_pattern: str) -> list:
    m = re.search(r"typedef struct packed \{([^{}]*)\}\s*" + name_pattern + r"\s*;", text)
    assert m, name_pattern
    out = []
    for line in m.group(1).splitlines():
        line = line.split("//")[0].strip()
        if line:
            w = re.match(r"logic \[(\d+):0\] (\w+);", line)
            out.append((w.group(2), int(w.group(1)) + 1) if w else (line.split()[-1].rstrip(";"), None))
    return out


def test_the_package_instr_t_is_the_verilogs_prog_data_struct(tmp_path):
    from pymtl_fp.cli.main import main

    assert main(["translate", "--unit", "node", "--config", "tiny", "--out", str(tmp_path), "--no-synth"]) == 0
    verilog = next(p for p in tmp_path.glob("NodeRTL_*.sv") if not p.name.endswith(("_pkg.sv", "_axi.sv"))).read_text()
    pkg = next(tmp_path.glob("*_pkg.sv")).read_text()
    assert _struct_members(pkg, "instr_t") == _struct_members(verilog, r"\w+__RouterInstr__\w+")
    assert _struct_members(pkg, "cmd_t") == _struct_members(verilog, r"\w+__EngineCmd__\w+")
    assert sum(b for _, b in _struct_members(pkg, "instr_t") if b) + encoding.CMD_BITS == isa.INSTR_BITS
    assert re.search(r"input\s+\w+__RouterInstr__\w+ prog_data", verilog)  # the port the package describes


def test_the_reference_names_every_field_and_kind_with_its_bits():
    text = isa_kit.reference("N", CFG)
    for f in isa_kit.header_fields():
        assert f"| {f.name} | {f.range} | {f.bits} |" in text
    for f in isa_kit.cmd_fields():
        assert f"| cmd.{f.name} | {f.range} | {f.bits} |" in text
    for k, name in isa.KIND_NAMES.items():
        assert f"| {name} | {k} |" in text
    assert "synchronous, active high" in text and "| st_cnt [0:5] | out | 32 |" in text
