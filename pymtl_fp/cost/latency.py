"""Per-unit latencies of the hardware, in cycles: the constants every cycle count is built from.

Each is a property of one unit's RTL, defined here once so that the closed forms
(:mod:`pymtl_fp.cost.engine`), the engine's elaboration parameters
(:class:`~pymtl_fp.engine.config.EngineConfig`), the units themselves
(:mod:`~pymtl_fp.engine.MacArrayPipeRTL`, :mod:`~pymtl_fp.primitives.RequantPipeRTL`), the
compiler's and the design-space tools' models all read the same number without importing PyMTL3.
Every CL == RTL cycle test of a unit holds its RTL to the number here.
"""

from __future__ import annotations

#: a compute command's fixed overhead on the engine: the command register, the MAC/requantize
#: stage B and the return to idle (:func:`pymtl_fp.cost.engine.compute_cycles`)
PIPE = 3

#: stages each optional engine pipeline adds: the requantizer's
#: (:data:`pymtl_fp.primitives.RequantPipeRTL.LATENCY`), the MAC array's
#: (:data:`pymtl_fp.engine.MacArrayPipeRTL.LATENCY`), the address stage (EngineStepAddrRTL's
#: registers) and the command register (EngineAcceptRTL's); ``EngineConfig.pipelined_<name>``
#: builds them
PIPELINE_LATENCY = {"requant": 13, "mac": 3, "addr": 1, "cmd": 1}

#: cycles between two engine commands a router issues (its command port is registered)
ISSUE_CYCLES = 1

#: the router's scalar units (requantizer, bias SGD, relayout gather) retire an instruction of
#: ``count`` elements ``count + UNIT_OVERHEAD`` cycles after it starts (:data:`pymtl_fp.cluster.isa.KIND_DOC`)
UNIT_OVERHEAD = 2

#: cycles a BIAS or REQUANT takes more on a router built with pipelined scalar units
#: (``RouterConfig.pipelined_units``, :class:`~pymtl_fp.cluster.hw.RouterUnitPipeRTL.RouterUnitPipeRTL`): one
#: edge computing the layout walk's strides, the requantizer's pipeline and three stages of the step and the
#: saturation
UNIT_PIPE_LATENCY = 1 + PIPELINE_LATENCY["requant"] + 3


def router_units_pipelined(ecfg) -> bool:
    """Whether the router of a node with engine ``ecfg`` has pipelined scalar units and a pipelined
    sequencer (``RouterConfig.pipelined_units``, ``pipelined_seq``; the sequencer's instruction register
    adds no cycle): when the engine pipelines its requantizer (the node's every requantizer for the same
    clock)."""
    return bool(ecfg.pipelined_requant)


def router_unit_latency(ecfg) -> int:
    """Cycles a BIAS or REQUANT of the router of a node with engine ``ecfg`` takes beyond
    ``count + UNIT_OVERHEAD``."""
    return UNIT_PIPE_LATENCY if router_units_pipelined(ecfg) else 0
