"""PyMTL3's default pass group as every Python-level simulator here is built (FL, CL, RTL).

:func:`default_passes` is PyMTL3's ``DefaultPassGroup`` after :func:`python_sim_speedups`, which
speeds PyMTL3's simulation of RTL in Python up without changing a value or a cycle.
"""

from __future__ import annotations


def python_sim_speedups() -> None:
    """Speed PyMTL3's Python simulation up for every simulator built afterwards in this process,
    values and cycles unchanged: ``Bits`` operators with a direct path for an ``int`` operand
    (:mod:`pymtl_fp.bits_int_paths`) and a clock edge that flips only the flip-flops written in the
    cycle (:mod:`pymtl_fp.sparse_flip`)."""
    from pymtl_fp import bits_int_paths, sparse_flip

    bits_int_paths.install()
    sparse_flip.install()


def default_passes(**options):
    """PyMTL3's ``DefaultPassGroup(**options)``, after :func:`python_sim_speedups`: every
    Python-level simulator here is built with it."""
    from pymtl3 import DefaultPassGroup

    python_sim_speedups()
    return DefaultPassGroup(**options)
