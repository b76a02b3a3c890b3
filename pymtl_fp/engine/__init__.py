"""The conv/backprop engine: the datapath of one FPGA of the training cluster.

One ``P x P`` MAC array serves every training operation (``fwd``, ``bwd_data``, ``bwd_weight``,
``pool_fwd``, ``pool_bwd``, ``update``); an address generator walks one loop nest per operation.
Levels: :mod:`~pymtl_fp.engine.EngineFL` (golden model behind the ports) and
:mod:`~pymtl_fp.engine.EngineRTL` (synthesizable, PyMTL3 and Verilator).  Shared definitions:
:mod:`~pymtl_fp.engine.config` (elaboration parameters), :mod:`~pymtl_fp.engine.msgs` (ports,
command format, buffer layout).
"""

from pymtl_fp.engine.config import PRESETS, EngineConfig, preset

__all__ = ["PRESETS", "EngineConfig", "preset"]
