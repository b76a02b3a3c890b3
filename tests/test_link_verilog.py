"""LinkRTL translates to Verilog, lints clean with ``verilator --lint-only -Wall`` (only the shared
PyMTL3 waivers, :data:`pymtl_fp.lint.PYMTL3_WAIVERS`), and runs through Verilator with exactly
the results of the PyMTL3 simulation (every handshake in the same cycle).  Two Verilator builds,
cached by module name (every elaboration parameter is in the name)."""

import random

import pytest
from pymtl3 import Bits4, Bits16, bitstruct, mk_bits

from pymtl_fp.link import PRESETS, LinkConfig, LinkRTL
from pymtl_fp.lint import PYMTL3_WAIVERS, lint_component
from pymtl_fp.tb.link_harness import run_link, verilator_name

pytestmark = pytest.mark.verilator


@bitstruct
class LinkTestPkt:
    dst: Bits4
    payload: Bits16


LINT_CASES = {
    **{f"preset-{k}": (v, None) for k, v in PRESETS.items()},
    "crc-off-1flit-1credit": (LinkConfig(msg_bits=16, phit_bits=16, latency=1, credit_latency=1,
                                         credits=1, crc=False), None),
    "padded-bitstruct": (LinkConfig(msg_bits=24, phit_bits=7, latency=3, credit_latency=2,
                                    credits=5), LinkTestPkt),
}


@pytest.mark.parametrize("case", list(LINT_CASES))
def test_link_rtl_lints_clean(case, tmp_path, cmdline_opts):
    cfg, MsgType = LINT_CASES[case]
    MsgType = MsgType or mk_bits(cfg.msg_bits)
    name, _ = verilator_name(cfg, MsgType)
    res = lint_component(LinkRTL(MsgType, cfg), name, tmp_path)
    assert res.clean, res.report()
    assert res.waivers == PYMTL3_WAIVERS  # nothing link-specific is waived


def test_module_name_encodes_every_elaboration_parameter():
    cfg = LinkConfig(msg_bits=24, phit_bits=7, latency=3, credit_latency=2, credits=5)
    name, params = verilator_name(cfg, LinkTestPkt)
    assert "__" not in name and name.startswith("LinkRTL_")
    for key in ("msg", "phit", "lat", "clat", "cred", "win", "to", "crc", "type", "tbits"):
        assert key in params
    others = [cfg.replace(latency=4), cfg.replace(credits=6), cfg.replace(crc=False),
              cfg.replace(window=16), cfg.replace(timeout=99), cfg.replace(credit_latency=3)]
    names = {verilator_name(c, LinkTestPkt)[0] for c in others} | {name}
    assert len(names) == len(others) + 1
    assert verilator_name(cfg, mk_bits(24))[0] != name


VERILATOR_CASES = [
    pytest.param(LinkConfig(msg_bits=40, phit_bits=16, latency=3, credit_latency=2, credits=3),
                 None, id="bits-crc-3flits"),
    pytest.param(LinkConfig(msg_bits=24, phit_bits=32, latency=1, credit_latency=1, credits=1,
                            crc=False), LinkTestPkt, id="bitstruct-nocrc-1flit"),
]


@pytest.mark.parametrize("cfg, MsgType", VERILATOR_CASES)
def test_verilator_matches_pymtl_simulation(cfg, MsgType, cmdline_opts):
    rng = random.Random(cfg.msg_bits)
    if MsgType is None:
        msgs = [rng.getrandbits(cfg.msg_bits) for _ in range(120)]
    else:
        msgs = [MsgType(rng.getrandbits(4), rng.getrandbits(16)) for _ in range(120)]
    for src, sink, seed in ((0.0, 0.0, 1), (0.3, 0.6, 2)):
        rtl = run_link("rtl", cfg, msgs, MsgType=MsgType, src_stall=src, sink_stall=sink, seed=seed)
        vl = run_link("verilator", cfg, msgs, MsgType=MsgType, src_stall=src, sink_stall=sink,
                      seed=seed)
        vl.scoreboard().assert_ok("verilator")
        assert vl.send_cycles == rtl.send_cycles
        assert vl.arrival_cycles == rtl.arrival_cycles
        assert vl.stats == rtl.stats and set(vl.stats.values()) == {0}
