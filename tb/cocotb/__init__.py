"""A cocotb bench for the engine's IP kit: drivers for the three streams of the emitted
``<top>_axis`` wrapper (:mod:`.engine_driver`), the cocotb test that runs program files through
it (:mod:`.engine_test`), and a runner that builds the emitted Verilog with Verilator through
cocotb's own runner (:mod:`.runner`).

Written only against what ``pymtl-fp translate --unit engine`` emits (the wrapper's port names
and widths) and :mod:`pymtl_fp.engine.encoding` (the PyMTL3-free command packer): no PyMTL3 and
none of our Python harness.  Needs the dev extra (``pip install -e ".[dev]"`` brings cocotb).
"""
