"""The engine's utilization goals on the VGG-like layer (``pymtl-fp bench engine --json``'s
figures, measured here at CL, which equals the RTL cycle for cycle): with E = P elements a beat
and overlapped streams, ``program_util`` >= 0.90 for fwd, bwd_data and bwd_weight on ``small``
and ``medium`` without pipelines; with the presets' four pipelines (17 cycles more a compute
command) >= 0.90 on ``small`` and >= 0.85 on ``medium`` (its 505-cycle ``bwd_data`` pays the 17);
every result is checked against the golden model by the measurement itself."""

import pytest

from pymtl_fp.cli.benchmarks.engine_utilization import measure
from pymtl_fp.engine.config import pipeline_fields, preset


@pytest.mark.cl
@pytest.mark.parametrize("name,lanes,pipes,least", [("small", 4, "none", 0.90), ("medium", 8, "none", 0.90),
                                                     ("small", 4, None, 0.90), ("medium", 8, None, 0.85)])
def test_vgg_like_programs_reach_90_percent(name, lanes, pipes, least):
    cfg = preset(name).replace(stream_lanes=lanes, **(pipeline_fields(pipes) if pipes else {}))
    got = measure(cfg, level="cl", layers=["vgg-like"])["vgg-like"]
    assert set(got) == {"fwd", "bwd_data", "bwd_weight"}
    for op, fig in got.items():
        assert fig["program_util"] >= least, (op, fig)
        assert fig["program_util"] > fig["program_util_serial"], op  # overlap pays
