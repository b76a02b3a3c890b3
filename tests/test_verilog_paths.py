"""The Verilog depends only on the design, not on where the checkout lies: source paths in
PyMTL3's comments are relative (pymtl_fp/verilog_paths.py), in the emitted file and in the file
PyMTL3's Verilator import builds and hashes for its cache."""

import os
from pathlib import Path

import pytest

import pymtl_fp
from pymtl_fp.verilog_paths import portable

ROOT = str(Path(pymtl_fp.__file__).resolve().parent.parent) + os.sep


def test_portable_strips_the_source_tree_and_pymtl3s_directory():
    import pymtl3

    theirs = str(Path(pymtl3.__file__).resolve().parent.parent) + os.sep
    assert portable(f"// At {ROOT}pymtl_fp/engine/EngineRTL.py:71") == "// At pymtl_fp/engine/EngineRTL.py:71"
    assert portable(f"// At {theirs}pymtl3/stdlib/x.py") == "// At pymtl3/stdlib/x.py"
    assert portable("// At /elsewhere/x.py") == "// At /elsewhere/x.py"


def test_a_virtual_environment_inside_the_checkout_still_gives_pymtl3_paths(monkeypatch):
    """CI's virtual environment lies inside the clone: PyMTL3's prefix is the longer one and wins."""
    import pymtl3

    site = f"{ROOT}.venv-ci/lib/python3.11/site-packages/"
    monkeypatch.setattr(pymtl3, "__file__", f"{site}pymtl3/__init__.py")
    assert portable(f"// At {site}pymtl3/stdlib/x.py") == "// At pymtl3/stdlib/x.py"
    assert portable(f"// At {ROOT}pymtl_fp/engine/EngineRTL.py:71") == "// At pymtl_fp/engine/EngineRTL.py:71"


def test_translated_verilog_names_sources_relative_to_the_tree(tmp_path):
    from pymtl_fp.lint import translate_verilog
    from pymtl_fp.primitives.MacRTL import MacRTL

    text = translate_verilog(MacRTL(8, 8, 24), "MacRTL_paths_test", tmp_path).read_text()
    assert "// At pymtl_fp/primitives/MacRTL.py" in text
    assert ROOT not in text


@pytest.mark.verilator
def test_the_imported_models_verilog_and_cache_key_carry_no_checkout_path():
    import json

    from pymtl_fp.primitives.MacRTL import MacRTL
    from pymtl_fp.verilate import shared_build_dir, translate_import

    translate_import(MacRTL(8, 8, 24), "MacRTL_paths_import_test", params=dict(a=8, acc=24))
    where = shared_build_dir("pymtl3")  # untraced imports are built where every process shares them
    files = list(where.glob("MacRTL_paths_import_test*.v"))
    assert files
    for f in files:
        assert ROOT not in f.read_text(), f
    cfg = json.loads((where / "pymtl_import_config_MacRTL_paths_import_test.json").read_text())
    assert ROOT not in json.dumps(cfg)
