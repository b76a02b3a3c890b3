"""The units of :class:`~pymtl_fp.engine.EngineComputeCtrlRTL.EngineComputeCtrlRTL` and the
per-operation table of :class:`~pymtl_fp.engine.EngineCmdRangesRTL.EngineCmdRangesRTL`, at ``rtl``:

* :class:`EngineMacCtrlRTL`: the MAC array accumulates on the steps of the MAC operations, in outer
  mode for ``bwd_weight`` and a batch-parallel ``fwd``; its operand is X, D for ``bwd_data``, 0 in
  the padding;
* :class:`EngineWriteTailRTL`: ``wb_idle`` falls for ``mac_latency + rq_latency`` cycles after a
  stage-B step and ``rq_latency`` cycles after a drain cycle;
* :data:`EngineCmdRangesRTL.RANGES`: an entry per compute operation, naming the buffers
  :data:`msgs.OP_BUFFERS` names (with the default ``dsel`` / ``amsel``).
"""

import functools

import pytest

from pymtl_fp.engine import msgs
from pymtl_fp.engine.EngineCmdRangesRTL import BUF_SOURCES, RANGES
from pymtl_fp.engine.EngineMacCtrlRTL import EngineMacCtrlRTL
from pymtl_fp.engine.EngineWriteTailRTL import EngineWriteTailRTL
from pymtl_fp.engine.msgs import make_cmd
from pymtl_fp.sim import build_sim

pytestmark = pytest.mark.rtl


@functools.cache
def unit(cls, *args):
    return build_sim(cls(*args), "rtl")


def fresh(cls, *args):
    m = unit(cls, *args)
    m.sim_reset()
    return m


@pytest.mark.parametrize("op", [msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT, msgs.OP_POOL_FWD,
                                msgs.OP_UPDATE])
@pytest.mark.parametrize("bp,zero", [(0, 0), (1, 0), (0, 1)])
def test_mac_ctrl_modes_and_operand(op, bp, zero):
    bp = bp if op == msgs.OP_FWD else 0
    m = fresh(EngineMacCtrlRTL, 2, 8)
    m.cmd @= make_cmd(op=op, bp=bp)
    m.vB @= 1
    m.firstB @= 1
    m.zeroB @= zero
    m.colB @= 1
    for j in range(2):
        m.x_rd[j] @= 10 + j
        m.d_rd[j] @= 20 + j
    m.sim_eval_combinational()
    mac_op = op in (msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT)
    assert (bool(m.mac_en), bool(m.mac_first)) == (mac_op, True)
    assert bool(m.mac_outer) == (op == msgs.OP_BWD_WEIGHT or bool(bp))
    assert (bool(m.mac_bp), int(m.mac_col)) == (bool(bp), 1)
    assert bool(m.mac_transpose) == (op == msgs.OP_BWD_DATA)
    assert bool(m.mac_use_bias) == (op == msgs.OP_FWD)
    want = [0, 0] if zero else ([20, 21] if op == msgs.OP_BWD_DATA else [10, 11])
    assert [int(v) for v in m.mac_v] == want


@pytest.mark.parametrize("k,lat", [(0, 1), (3, 0), (3, 13)])
def test_write_tail_waits_for_the_last_write(k, lat):
    m = fresh(EngineWriteTailRTL, k, lat)

    def busy_cycles(sig):
        sig @= 1
        m.sim_tick()
        sig @= 0
        n = 0
        while True:
            m.sim_eval_combinational()
            if m.wb_idle:
                return n
            n += 1
            m.sim_tick()

    assert busy_cycles(m.vB) == k + lat
    assert busy_cycles(m.dr_busy) == lat


def test_ranges_table_names_the_buffers_of_each_operation():
    assert set(RANGES) == set(msgs.OPS.values())
    defaults = {"dsel": msgs.DSEL_BUF[0], "amsel": msgs.AMSEL_BUF[0]}
    for name, fields in msgs.OP_BUFFERS.items():
        slots = RANGES[msgs.OPS[name]]
        got = {field: slot[0] for field, slot in zip(("a0", "a1", "a2", "d0", "d1"), slots) if slot}
        assert set(got.values()) <= set(BUF_SOURCES)
        want = {field: buf for field, (buf, _) in fields.items()}
        assert {f: msgs.BUF_NAMES[defaults[s]] if s in defaults else s.upper() for f, s in got.items()} == want
