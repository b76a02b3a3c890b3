"""The engine's Verilog lints clean with ``verilator --lint-only -Wall`` (engine waivers listed
with reasons in :data:`pymtl_fp.engine.verilog.ENGINE_WAIVERS`): the presets (one element per
stream beat), a 3x3 engine with mixed widths and 3 elements per beat, and engines with the
pipelines (one of them with the MAC array accumulating in the DSP blocks)."""

import pytest

from pymtl_fp.engine.config import preset
from pymtl_fp.engine.verilog import ENGINE_WAIVERS, lint_engine


@pytest.mark.verilator
@pytest.mark.parametrize("cfg", [preset("tiny"), preset("small"), pytest.param(preset("medium"), marks=pytest.mark.slow),
                                 preset("tiny").replace(rows=3, cols=3, stochastic=False, act_bits=6, grad_bits=12,
                                                        acc_bits=40, stream_bits=40, act_depth=200, stream_lanes=3),
                                 preset("small").replace(drain_rows=2, stream_lanes=2),
                                 preset("small").replace(drain_rows=2, stream_lanes=2, pipelined_requant=True,
                                                         pipelined_mac=True, pipelined_addr=True, pipelined_cmd=True),
                                 preset("tiny").replace(rows=3, cols=3, stochastic=False, act_bits=6, grad_bits=12,
                                                        acc_bits=40, stream_bits=40, pipelined_requant=True,
                                                        pipelined_mac=True),
                                 preset("tiny").replace(rows=3, cols=3, acc_bits=40, stream_bits=40, pipelined_mac=True,
                                                        dsp_mac=True)],
                         ids=["tiny", "small", "medium", "3x3-mixed-widths-nosto-3-per-beat",
                              "small-drain-rows-2-2-per-beat", "small-all-pipelines-drain-rows-2-2-per-beat",
                              "3x3-mixed-widths-nosto-requant-and-mac-pipelines", "3x3-dsp-mac"])
def test_engine_lints_clean(tmp_path, cfg, cmdline_opts):
    res = lint_engine(cfg, tmp_path)
    assert res.clean, res.report()


def test_every_waiver_has_a_reason():
    for key, reason in ENGINE_WAIVERS.items():
        assert isinstance(reason, str) and len(reason) > 20, key
