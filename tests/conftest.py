"""pytest set-up shared by every test: Hypothesis profile, level markers, build directory.

The pytest-pymtl3 plugin (installed with pymtl3) adds ``--test-verilog``, ``--dump-vcd``,
``--dump-textwave`` and ``--max-cycles`` and the ``cmdline_opts`` fixture; when one of its options
is given it skips every test that does not take ``cmdline_opts``.
"""

import os

from pymtl_fp.tb import hypothesis_profiles

PROFILE = hypothesis_profiles.load()


def pytest_report_header(config):
    return [f"pymtl-fp: hypothesis profile '{PROFILE}' (set PYMTL_FP_PROFILE=ci|dev|campaign); "
            f"Verilator builds in {os.environ.get('PYMTL_FP_BUILD_DIR') or '~/.cache/pymtl-fp/build'}"]
