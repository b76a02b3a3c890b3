"""The pipelined REQUANT unit's layout walk (RTL): the counters of
:class:`~pymtl_fp.cluster.hw.RouterUnitWalkRTL.RouterUnitWalkRTL` (``j`` fastest, then row ``i``, ``s``,
``r``, ``ct``, ``kt``), with the flat C-order index of element ``(kt*P + i, ct*P + j, r, s)`` kept as
running sums instead of products, so that nothing multiplies on the way from the counters to ``flat``.

``flat = kk*crs + cc*rs + r*s_w + s`` (``kk = kt*P + i``, ``cc = ct*P + j``; the strides ``rs = r*s`` and
``crs = c*r*s`` come with the instruction, computed by the host).  When a counter steps and the faster
ones restart, the new index is that counter's *base* (the index where it last stepped, every faster
counter 0) plus its stride: ``rs`` (``j``), ``crs`` (``i``), 1 (``s``), ``s_w`` (``r``), ``P*rs`` (``ct``),
``P*crs`` (``kt``); the bases of that counter and of every faster one take the new index.  So each step
is one add of a register and a stride, selected by the counters' wrap flags.  ``kk`` and ``cc`` (for
``in_tensor``: ``kk < k`` and ``cc < c``) are running sums likewise.

``start`` registers the tensor and clears the counters and sums; the strides ``P*rs`` and ``P*crs`` are
one product each of registers (one DSP), registered at the edge after ``start``: the unit steps from
the second edge after ``start`` on.  ``flat`` and ``in_tensor`` come from registers.  No elaboration
parameters.
"""

from pymtl3 import Bits16, Bits32, Component, InPort, OutPort, Wire, update, update_ff, zext


class RouterUnitWalkSumRTL(Component):
    def construct(s):
        T1 = Bits16(1)
        Z16 = Bits16(0)
        Z32 = Bits32(0)
        ONE32 = Bits32(1)

        s.start = InPort()
        s.step = InPort()
        s.lanes = InPort(8)
        s.glayout = InPort()
        s.ct, s.c, s.r, s.sw = InPort(16), InPort(16), InPort(16), InPort(16)
        s.rs = InPort(17)
        s.crs = InPort(24)
        s.k = InPort(16)
        s.flat = OutPort(32)
        s.in_tensor = OutPort()

        s.r_lanes, s.r_g = Wire(8), Wire()
        s.r_ct, s.r_c, s.r_r, s.r_s = Wire(16), Wire(16), Wire(16), Wire(16)
        s.r_rs, s.r_crs = Wire(17), Wire(24)
        s.rs32, s.crs32, s.sw32, s.p32 = Wire(32), Wire(32), Wire(32), Wire(32)
        s.prs, s.pcrs = Wire(32), Wire(32)  # P*rs, P*crs
        s.cj, s.ci, s.cs, s.cr, s.cct, s.ckt = (Wire(16) for _ in range(6))
        s.idx = Wire(32)      # the flat index
        s.b_i, s.b_s, s.b_r, s.b_ct, s.b_kt = (Wire(32) for _ in range(5))  # the counters' bases
        s.kk, s.kbase, s.cc, s.cbase = Wire(32), Wire(32), Wire(32), Wire(32)
        s.jl = Wire(16)       # lanes of j: P in G's layout, 1 in B's
        s.wj, s.wi, s.ws, s.wr, s.wct = Wire(), Wire(), Wire(), Wire(), Wire()  # the counter restarts

        @update
        def up_walk_sum_out():
            s.flat @= s.idx
            s.p32 @= zext(s.r_lanes, Bits32)
            s.rs32 @= zext(s.r_rs, Bits32)
            s.crs32 @= zext(s.r_crs, Bits32)
            s.sw32 @= zext(s.r_s, Bits32)
            s.in_tensor @= (s.kk < zext(s.k, Bits32)) & (s.cc < zext(s.r_c, Bits32))
            if s.r_g:
                s.jl @= zext(s.r_lanes, Bits16)
            else:
                s.jl @= T1
            s.wj @= ~(s.cj + T1 < s.jl)
            s.wi @= ~(s.ci + T1 < zext(s.r_lanes, Bits16))
            s.ws @= ~(s.cs + T1 < s.r_s)
            s.wr @= ~(s.cr + T1 < s.r_r)
            s.wct @= ~(s.cct + T1 < s.r_ct)

        @update_ff
        def up_walk_sum_strides():
            s.prs <<= s.p32 * s.rs32
            s.pcrs <<= s.p32 * s.crs32

        @update_ff
        def up_walk_sum_regs():
            if s.start:
                s.r_lanes <<= s.lanes
                s.r_g <<= s.glayout
                s.r_ct <<= s.ct
                s.r_c <<= s.c
                s.r_r <<= s.r
                s.r_s <<= s.sw
                s.r_rs <<= s.rs
                s.r_crs <<= s.crs
                s.cj <<= Z16
                s.ci <<= Z16
                s.cs <<= Z16
                s.cr <<= Z16
                s.cct <<= Z16
                s.ckt <<= Z16
                s.idx <<= Z32
                s.b_i <<= Z32
                s.b_s <<= Z32
                s.b_r <<= Z32
                s.b_ct <<= Z32
                s.b_kt <<= Z32
                s.kk <<= Z32
                s.kbase <<= Z32
                s.cc <<= Z32
                s.cbase <<= Z32
            elif s.step:  # j fastest, then i, s, r, ct, kt
                if ~s.wj:
                    s.cj <<= s.cj + T1
                    s.idx <<= s.idx + s.rs32
                    s.cc <<= s.cc + ONE32
                else:
                    s.cj <<= Z16
                    if ~s.wi:
                        s.ci <<= s.ci + T1
                        s.idx <<= s.b_i + s.crs32
                        s.b_i <<= s.b_i + s.crs32
                        s.kk <<= s.kk + ONE32
                        s.cc <<= s.cbase
                    else:
                        s.ci <<= Z16
                        if ~s.ws:
                            s.cs <<= s.cs + T1
                            s.idx <<= s.b_s + ONE32
                            s.b_i <<= s.b_s + ONE32
                            s.b_s <<= s.b_s + ONE32
                            s.kk <<= s.kbase
                            s.cc <<= s.cbase
                        else:
                            s.cs <<= Z16
                            if ~s.wr:
                                s.cr <<= s.cr + T1
                                s.idx <<= s.b_r + s.sw32
                                s.b_i <<= s.b_r + s.sw32
                                s.b_s <<= s.b_r + s.sw32
                                s.b_r <<= s.b_r + s.sw32
                                s.kk <<= s.kbase
                                s.cc <<= s.cbase
                            else:
                                s.cr <<= Z16
                                if ~s.wct:
                                    s.cct <<= s.cct + T1
                                    s.idx <<= s.b_ct + s.prs
                                    s.b_i <<= s.b_ct + s.prs
                                    s.b_s <<= s.b_ct + s.prs
                                    s.b_r <<= s.b_ct + s.prs
                                    s.b_ct <<= s.b_ct + s.prs
                                    s.kk <<= s.kbase
                                    s.cc <<= s.cbase + s.p32
                                    s.cbase <<= s.cbase + s.p32
                                else:
                                    s.cct <<= Z16
                                    s.ckt <<= s.ckt + T1
                                    s.idx <<= s.b_kt + s.pcrs
                                    s.b_i <<= s.b_kt + s.pcrs
                                    s.b_s <<= s.b_kt + s.pcrs
                                    s.b_r <<= s.b_kt + s.pcrs
                                    s.b_ct <<= s.b_kt + s.pcrs
                                    s.b_kt <<= s.b_kt + s.pcrs
                                    s.kk <<= s.kbase + s.p32
                                    s.kbase <<= s.kbase + s.p32
                                    s.cc <<= Z32
                                    s.cbase <<= Z32

    def line_trace(s):
        return f"W{int(s.ckt)}.{int(s.cct)}.{int(s.cr)}.{int(s.cs)}.{int(s.ci)}.{int(s.cj)}={int(s.idx)}"
