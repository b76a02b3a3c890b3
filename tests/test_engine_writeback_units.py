"""The units of :class:`~pymtl_fp.engine.EngineWritebackRTL.EngineWritebackRTL`, each driven alone
at ``rtl`` (PyMTL3 simulation; the write-back as a whole is tested in ``test_engine_units.py``):

* :class:`WritebackSaturateRTL`: every lane saturated to its format and sign-extended to the
  buffer's width; ``update``'s ``w - q`` only for a row of the word;
* :class:`WritebackResultRTL`: a batch-parallel ``fwd``'s drain row goes to word ``dr_addr +
  dr_roff``, real channels and images only;
* :class:`WritebackRequestsRTL`: a raw ``bwd_weight`` drain writes its un-rounded rows to B word
  ``d0 + (dr_addr - d0) * P + row`` and the db row to ``db_addr``.
"""

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.engine.msgs import OP_BWD_WEIGHT, OP_FWD, from_word, make_cmd, to_word
from pymtl_fp.engine.WritebackRequestsRTL import WritebackRequestsRTL
from pymtl_fp.engine.WritebackResultRTL import WritebackResultRTL
from pymtl_fp.engine.WritebackSaturateRTL import WritebackSaturateRTL
from pymtl_fp.sim import build_sim
from pymtl_fp.tb.hypothesis_profiles import examples

pytestmark = pytest.mark.rtl


@functools.cache
def unit(cls, *args):
    return build_sim(cls(*args), "rtl")


def fresh(cls, *args):
    m = unit(cls, *args)
    m.sim_reset()
    return m


def clamp(v, bits):
    return min(max(v, -(1 << (bits - 1))), (1 << (bits - 1)) - 1)


@settings(max_examples=examples(30))
@given(q=st.lists(st.integers(-600, 600), min_size=4, max_size=4),
       w=st.lists(st.integers(-128, 127), min_size=2, max_size=2), row=st.integers(0, 3))
def test_saturate_every_lane_to_its_format(q, w, row):
    P, act, wgt, grad, AB, dr = 2, 6, 8, 7, 24, 2
    m = fresh(WritebackSaturateRTL, P, act, wgt, grad, AB, dr)
    for i in range(dr * P):
        m.q[i] @= to_word(q[i], AB)
    for j in range(P):
        m.w_row[j] @= to_word(w[j], 8)
    m.rowB @= row
    m.sim_eval_combinational()
    assert [from_word(int(v), 8) for v in m.y_a] == [clamp(v, act) for v in q[:P]]
    assert [from_word(int(v), 8) for v in m.y_g] == [clamp(v, grad) for v in q]
    assert [from_word(int(v), AB) for v in m.y_gb] == [clamp(v, grad) for v in q[:P]]
    new = [clamp(w[j] - q[j], wgt) if row < P else 0 for j in range(P)]
    assert [from_word(int(v), 8) for v in m.y_w] == new


@pytest.mark.parametrize("row,nrows,nlanes", [(0, 2, 2), (1, 2, 1), (1, 1, 2), (0, 1, 0)])
def test_result_of_a_batch_parallel_drain_row(row, nrows, nlanes):
    P = 2
    m = fresh(WritebackResultRTL, P, 8, 6)
    m.cmd @= make_cmd(op=OP_FWD, bp=1)
    m.ex_busy @= 1
    m.dr_busy @= 1
    m.dr_row @= row
    m.dr_nrows @= nrows
    m.dr_nlanes @= nlanes
    m.dr_addr @= 64 + 10  # truncated to the 6-bit act address
    m.dr_roff @= 3
    for i in range(P):
        m.y_a[i] @= 20 + i
    m.sim_eval_combinational()
    if row < nrows:
        assert (int(m.wb_en), int(m.wb_addr)) == (1, 13)
        assert [int(v) for v in m.wb_lane] == [int(i < nlanes) for i in range(P)]
        assert [int(v) for v in m.wb_data] == [20, 21]
    else:
        assert not m.wb_en


@pytest.mark.parametrize("row", [0, 1, 2])
def test_requests_of_a_raw_drain_go_to_b(row):
    P, D, AB = 2, 8, 24
    m = fresh(WritebackRequestsRTL, P, D, AB, 6, 5, 5, 1)
    m.cmd @= make_cmd(op=OP_BWD_WEIGHT, raw=1, d0=4)
    m.ex_busy @= 1
    m.dr_busy @= 1
    m.dr_row @= row
    m.dr_addr @= 4 + 3  # the tile's G word: the fourth tile
    m.db_addr @= 17
    for i in range(P):
        m.raw[i] @= 1000 + i
    m.sim_eval_combinational()
    assert (int(m.b_we), [int(v) for v in m.b_wen], [int(v) for v in m.b_wdata]) == (1, [1, 1], [1000, 1001])
    assert int(m.b_addr) == (4 + 3 * P + row if row < P else 17)
    assert not (m.g_we or m.x_we or m.o_we or m.d_we or m.w_we)
