"""The engine's Verilog lints clean with ``verilator --lint-only -Wall`` (engine waivers listed
with reasons in :data:`pymtl_fp.engine.verilog.ENGINE_WAIVERS`): the presets (one element per
stream beat, every pipeline), a 3x3 engine with mixed widths and 3 elements per beat and engines
without pipelines (``--pipeline none``) or with some (one of them with the MAC array accumulating
in the DSP blocks, two with the address generator's tap bounds in registers)."""

import pytest

from pymtl_fp.engine.config import pipeline_fields, preset
from pymtl_fp.engine.verilog import ENGINE_WAIVERS, lint_engine

NONE = pipeline_fields("none")


@pytest.mark.verilator
@pytest.mark.parametrize("cfg", [preset("tiny"), preset("small"), pytest.param(preset("medium"), marks=pytest.mark.slow),
                                 preset("tiny").replace(rows=3, cols=3, stochastic=False, act_bits=6, grad_bits=12,
                                                        acc_bits=40, stream_bits=40, act_depth=200, stream_lanes=3,
                                                        **NONE),
                                 preset("small").replace(drain_rows=2, stream_lanes=2, **NONE),
                                 preset("small").replace(drain_rows=2, stream_lanes=2),
                                 preset("tiny").replace(rows=3, cols=3, stochastic=False, act_bits=6, grad_bits=12,
                                                        acc_bits=40, stream_bits=40,
                                                        **pipeline_fields("requant,mac")),
                                 preset("tiny").replace(rows=3, cols=3, acc_bits=40, stream_bits=40,
                                                        **pipeline_fields("dsp")),
                                 preset("small").replace(**pipeline_fields("all,taps")),
                                 preset("tiny").replace(**pipeline_fields("taps"))],
                         ids=["tiny", "small", "medium", "3x3-mixed-widths-nosto-3-per-beat-no-pipelines",
                              "small-drain-rows-2-2-per-beat-no-pipelines", "small-all-pipelines-drain-rows-2-2-per-beat",
                              "3x3-mixed-widths-nosto-requant-and-mac-pipelines", "3x3-dsp-mac", "small-all-taps",
                              "tiny-taps-only"])
def test_engine_lints_clean(tmp_path, cfg, cmdline_opts):
    res = lint_engine(cfg, tmp_path)
    assert res.clean, res.report()


def test_every_waiver_has_a_reason():
    for key, reason in ENGINE_WAIVERS.items():
        assert isinstance(reason, str) and len(reason) > 20, key
