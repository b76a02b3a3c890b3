"""The benchmarks behind ``pymtl-fp bench TARGET``: one module per target, each printing measured figures
(never pass/fail on time).

A target module (``engine``, ``engine_cl``, ``modes``, ``bands``, ``link``, ``cluster``, ``schedules``,
``parallel``, ``storage``, ``weights``; the target's ``-`` becomes ``_``) has ``HELP``,
``add_arguments(parser)`` and ``main(args) -> int``; :mod:`pymtl_fp.cli.cmd_bench` dispatches to it.
``digits`` (the digits-data runs the cluster benchmarks share) and ``engine_utilization`` (MAC utilization
per operation and layer) are helpers, not targets.
"""
