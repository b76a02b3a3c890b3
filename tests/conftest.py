"""pytest set-up shared by every test: Hypothesis profile, level markers, build directory, the
routers' smallest depths (shared Verilator builds), the compiled cluster benches' quick builds, the order
in which pytest-xdist hands out the test files, ``--run-slow`` (the long tier, marked ``slow``: deselected
from a plain ``pytest``, run with ``--run-slow`` or a ``-m`` expression naming ``slow``) and ``--run-pnr``
(the place-and-route tests, marked ``pnr``, run only when it is given: each takes 15-30 minutes).

The pytest-pymtl3 plugin (installed with pymtl3) adds ``--test-verilog``, ``--dump-vcd``,
``--dump-textwave`` and ``--max-cycles`` and the ``cmdline_opts`` fixture; when one of its options
is given it skips every test that does not take ``cmdline_opts``.
"""

import os

from pymtl_fp.tb import hypothesis_profiles

#: the files that take longest (compiled-cluster builds, PyMTL3-simulated RTL clusters, Yosys):
#: run first.  ``--dist loadfile`` gives each xdist worker whole files in collection order
#: (``--no-loadscope-reorder`` in setup.cfg keeps that order); a long file handed out last would
#: run alone at the end while the other workers wait.  Longest first, the rest as collected.
LONGEST_FIRST = (
    "test_cluster_resnet_mnist.py",
    "test_cluster_verilated.py",
    "test_cluster_levels.py",
    "test_cluster_rtl.py",
    "test_cluster_lanes.py",
    "test_cluster_bands.py",
    "test_cluster_wgrad.py",
    "test_fuzz.py",
    "test_translate.py",
)

PROFILE = hypothesis_profiles.load()


def pytest_addoption(parser):
    parser.addoption("--run-pnr", action="store_true",
                     help="also run the place-and-route tests (marker pnr; 15-30 minutes each)")
    parser.addoption("--run-slow", action="store_true",
                     help="also run the long tier (marker slow, deselected otherwise); -m slow runs it alone")


def pytest_configure(config):
    """Every test's cluster runs give their routers at least
    :data:`pymtl_fp.tb.cluster_setup.SHARED_ROUTER`'s depths, so that Verilated clusters of the same
    nodes share one build across tests (and xdist workers: the build directory is shared); the
    compiled cluster benches are built with :data:`pymtl_fp.cxxsim.QUICK_MAKE_VARS` (one file at
    -O1): a third of the build's CPU time, for the tests' runs of a few thousand cycles.  The tests'
    own PyMTL3 simulators get the library's speed-ups too (:func:`pymtl_fp.sim_passes.python_sim_speedups`)."""
    from pymtl_fp import cxxsim
    from pymtl_fp.cluster.run import train
    from pymtl_fp.sim_passes import python_sim_speedups
    from pymtl_fp.tb.cluster_setup import SHARED_ROUTER

    train.MIN_ROUTER = SHARED_ROUTER
    cxxsim.MAKE_VARS = cxxsim.QUICK_MAKE_VARS
    python_sim_speedups()


def pytest_report_header(config):
    return [f"pymtl-fp: hypothesis profile '{PROFILE}' (set PYMTL_FP_PROFILE=ci|dev|campaign); "
            f"Verilator builds in {os.environ.get('PYMTL_FP_BUILD_DIR') or '~/.cache/pymtl-fp/build'}"]


def pytest_collection_modifyitems(config, items):
    """Deselect the ``slow`` tests unless ``--run-slow`` is given, ``-m`` names ``slow`` or a test is
    named by its node id (pytest's summary counts them as deselected), put the :data:`LONGEST_FIRST`
    files first (each file's tests keep their order), and mark every test whose parameters name a
    simulation level with that level's marker (``fl``, ``cl``, ``rtl``, ``verilator``), so ``pytest
    -m verilator`` selects every such case: a parameter called ``level``/``levels`` or ending in
    ``_level``, holding a level or a list of levels, or a test class (one class per level, inheriting
    one suite) with a ``level`` or ``LEVEL`` attribute."""
    import pytest

    from pymtl_fp.levels import LEVELS

    named = any("::" in str(arg) for arg in config.args)  # (a test named by its node id runs, slow or not)
    if not (config.getoption("--run-slow") or named) and "slow" not in (config.getoption("-m") or ""):
        kept = [item for item in items if not item.get_closest_marker("slow")]
        if len(kept) < len(items):
            config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("slow")])
            items[:] = kept
    if not config.getoption("--run-pnr"):
        skip = pytest.mark.skip(reason="place and route takes minutes: run with --run-pnr")
        for item in items:
            if item.get_closest_marker("pnr"):
                item.add_marker(skip)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # (stable: collection order otherwise)
    for item in items:
        params = dict(getattr(getattr(item, "callspec", None), "params", {}))
        cls = getattr(item, "cls", None)
        for attr in ("level", "LEVEL"):
            if cls is not None and isinstance(getattr(cls, attr, None), str):
                params["level"] = getattr(cls, attr)
        for name, value in params.items():
            if not (name in ("level", "levels") or name.endswith("_level")):
                continue
            for v in value if isinstance(value, (list, tuple)) else (value,):
                if v in LEVELS and not item.get_closest_marker(v):
                    item.add_marker(getattr(pytest.mark, v))


def pytest_terminal_summary(terminalreporter):
    """The test files that took longest (setup, call and teardown of their tests added, across the
    xdist workers): what to look at when the suite outgrows its budget (README: the suite's time)."""
    per_file: dict = {}
    for reports in terminalreporter.stats.values():
        for r in reports:
            nodeid, duration = getattr(r, "nodeid", None), getattr(r, "duration", None)
            if nodeid and isinstance(duration, float):
                name = nodeid.split("::")[0]
                per_file[name] = per_file.get(name, 0.0) + duration
    if not per_file:
        return
    total = sum(per_file.values())
    terminalreporter.write_sep("=", f"slowest test files ({total:.0f} s of tests in all)")
    for name, t in sorted(per_file.items(), key=lambda kv: -kv[1])[:15]:
        terminalreporter.write_line(f"{t:8.1f} s  {name}")
