"""The conftest hook marks level-parametrized tests: ``-m verilator`` / ``-m rtl`` select them; tests
marked ``slow`` (the long tier) are deselected unless ``--run-slow`` is given or ``-m`` names ``slow``."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _collect(marker: str, *extra: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n0", "-m", marker, *extra,
                           "tests/test_router.py", "tests/test_link_levels.py"],
                          cwd=REPO, capture_output=True, text=True, check=False)
    return proc.stdout


def test_level_parameters_become_markers():
    ver, rtl = _collect("verilator"), _collect("rtl", "--run-slow")
    assert "test_router_cl_equals_rtl_every_cycle[verilator-units]" in ver
    assert "test_router_cl_equals_rtl_every_cycle[rtl-units]" not in ver
    assert "test_router_cl_equals_rtl_every_cycle[rtl-units]" in rtl
    assert "test_encode_decode_round_trip" not in ver  # no level: no marker
    assert "TestLinkRTL::test_in_order_full_rate" in rtl and "TestLinkFL" not in rtl


def test_the_long_tier_is_deselected_unless_asked_for():
    """The router's random programs at ``rtl`` are in the long tier: a plain run leaves them out (and
    says so), ``--run-slow`` or ``-m slow`` takes them."""
    plain, slow = _collect("rtl"), _collect("slow")
    name = "test_router_cl_equals_rtl_every_cycle[rtl-units]"
    assert name not in plain and "deselected" in plain and "TestLinkRTL::test_in_order_full_rate" in plain
    assert name in slow and "[verilator-units]" not in slow
