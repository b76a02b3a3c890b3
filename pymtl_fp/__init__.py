"""pymtl-fp: generator and multi-level simulator for CNN-training accelerators on FPGA clusters.

The library: fixed-point numerics, the NumPy golden model, the engine and link models at the
FL, CL and RTL levels, the timing model, and the Verilator tool-chain glue.
"""

__version__ = "0.1.0"
