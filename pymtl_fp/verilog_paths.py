"""Portable source paths in PyMTL3's Verilog: ``// At pymtl_fp/engine/EngineRTL.py:71`` instead of
this machine's absolute path.

PyMTL3's translator writes the absolute source path of every component and update block into
the Verilog.  The checkout's location then changes the Verilog, its hash and PyMTL3's
Verilator-import cache key (``pymtl_import_config_<top>.json`` holds the Verilog's hash), so a
second clone with the same build directory rebuilds every model, and emitted IP carries the
developer's directories.  :func:`install` patches the two places where PyMTL3 takes these paths
(the component's RTLIR type and the update-block comment) so that paths under our source tree
are relative to it and PyMTL3's own are relative to its installation directory: the Verilog
then depends only on the design.
"""

from __future__ import annotations

import os
from pathlib import Path

_installed = False


def _roots() -> list:
    import pymtl3

    ours = Path(__file__).resolve().parent.parent  # the source tree (pymtl_fp/, cluster/, ...)
    theirs = Path(pymtl3.__file__).resolve().parent.parent  # site-packages holding pymtl3/
    # The longer prefix first: a virtual environment inside the checkout (CI's) holds PyMTL3 under
    # the source tree, and its paths must still become ``pymtl3/...``.
    return sorted({str(ours) + os.sep, str(theirs) + os.sep}, key=len, reverse=True)


def portable(text: str) -> str:
    """``text`` with PyMTL3's and the source tree's directory prefixes removed."""
    for root in _roots():
        text = text.replace(root, "")
    return text


def install() -> None:
    """Patch PyMTL3's translator (idempotent)."""
    global _installed
    if _installed:
        return
    from pymtl3.passes.backends.verilog.translation.behavioral.VBehavioralTranslatorL1 import (
        VBehavioralTranslatorL1,
    )
    from pymtl3.passes.rtlir.rtype import RTLIRType

    upblk_src = VBehavioralTranslatorL1.rtlir_tr_upblk_py_src
    file_info = RTLIRType.Component.get_file_info

    def rtlir_tr_upblk_py_src(s, upblk, is_lambda, src, lino, filename):
        return upblk_src(s, upblk, is_lambda, src, lino, portable(str(filename)))

    def get_file_info(s):
        return portable(str(file_info(s)))

    VBehavioralTranslatorL1.rtlir_tr_upblk_py_src = rtlir_tr_upblk_py_src
    RTLIRType.Component.get_file_info = get_file_info
    _installed = True
