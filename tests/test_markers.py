"""The conftest hook marks level-parametrized tests: ``-m verilator`` / ``-m rtl`` select them."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _collect(marker: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n0", "-m", marker,
                           "tests/test_router.py", "tests/test_link_levels.py"],
                          cwd=REPO, capture_output=True, text=True, check=False)
    return proc.stdout


def test_level_parameters_become_markers():
    ver, rtl = _collect("verilator"), _collect("rtl")
    assert "test_router_cl_equals_rtl_every_cycle[verilator-units]" in ver
    assert "test_router_cl_equals_rtl_every_cycle[rtl-units]" not in ver
    assert "test_router_cl_equals_rtl_every_cycle[rtl-units]" in rtl
    assert "test_encode_decode_round_trip" not in ver  # no level: no marker
    assert "TestLinkRTL::test_in_order_full_rate" in rtl and "TestLinkFL" not in rtl
