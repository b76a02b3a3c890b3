"""The REQUANT unit's layout walk (RTL): the counters that visit the un-rounded sums of a
``(k, c, r, s)`` tensor in the engine's G layout (or B's), element by element, and the flat C-order
index of each.

``start`` registers the tensor (``lanes`` = P, ``glayout``, ``ct``, ``c``, ``r``, ``sw``) and
clears the counters; each ``step`` moves to the next element: ``j`` (lane, G's layout only)
fastest, then row ``i``, ``s``, ``r``, ``ct``, ``kt``.  Element ``(kt*P + i, ct*P + j, r, s)`` has
the flat index ``flat`` (one level of products with the strides ``r*s``, registered at ``start``,
and ``c*r*s``, registered one edge later: the first element has ``kk = 0``) and is real
(``in_tensor``: ``kk < k`` and ``cc < c``; ``k`` is the registered tensor's) or padding.
Combinational outputs from registers.  No elaboration parameters.
"""

from pymtl3 import Bits16, Bits32, Component, InPort, OutPort, Wire, update, update_ff, zext


class RouterUnitWalkRTL(Component):
    def construct(s):
        T1 = Bits16(1)
        Z16 = Bits16(0)

        s.start = InPort()
        s.step = InPort()
        s.lanes = InPort(8)
        s.glayout = InPort()
        s.ct, s.c, s.r, s.sw = InPort(16), InPort(16), InPort(16), InPort(16)
        s.k = InPort(16)
        s.flat = OutPort(32)
        s.in_tensor = OutPort()

        s.r_lanes, s.r_g = Wire(8), Wire()
        s.r_ct, s.r_c, s.r_r, s.r_s = Wire(16), Wire(16), Wire(16), Wire(16)
        s.cj, s.ci, s.cs, s.cr, s.cct, s.ckt = (Wire(16) for _ in range(6))
        s.kk, s.cc = Wire(32), Wire(32)
        s.k_rs, s.k_crs = Wire(32), Wire(32)
        s.jl = Wire(16)       # lanes of j: P in G's layout, 1 in B's

        @update
        def up_walk_index():
            s.kk @= zext(s.ckt, Bits32) * zext(s.r_lanes, Bits32) + zext(s.ci, Bits32)
            s.cc @= zext(s.cct, Bits32) * zext(s.r_lanes, Bits32) + zext(s.cj, Bits32)
            s.flat @= (s.kk * s.k_crs + s.cc * s.k_rs + zext(s.cr, Bits32) * zext(s.r_s, Bits32)
                       + zext(s.cs, Bits32))
            s.in_tensor @= (s.kk < zext(s.k, Bits32)) & (s.cc < zext(s.r_c, Bits32))
            if s.r_g:
                s.jl @= zext(s.r_lanes, Bits16)
            else:
                s.jl @= T1

        @update_ff
        def up_walk_crs():
            s.k_crs <<= zext(s.r_c, Bits32) * s.k_rs

        @update_ff
        def up_walk_regs():
            if s.start:
                s.k_rs <<= zext(s.r, Bits32) * zext(s.sw, Bits32)
                s.r_lanes <<= s.lanes
                s.r_g <<= s.glayout
                s.r_ct <<= s.ct
                s.r_c <<= s.c
                s.r_r <<= s.r
                s.r_s <<= s.sw
                s.cj <<= Z16
                s.ci <<= Z16
                s.cs <<= Z16
                s.cr <<= Z16
                s.cct <<= Z16
                s.ckt <<= Z16
            elif s.step:  # j fastest, then i, s, r, ct, kt
                if s.cj + T1 < s.jl:
                    s.cj <<= s.cj + T1
                else:
                    s.cj <<= Z16
                    if s.ci + T1 < zext(s.r_lanes, Bits16):
                        s.ci <<= s.ci + T1
                    else:
                        s.ci <<= Z16
                        if s.cs + T1 < s.r_s:
                            s.cs <<= s.cs + T1
                        else:
                            s.cs <<= Z16
                            if s.cr + T1 < s.r_r:
                                s.cr <<= s.cr + T1
                            else:
                                s.cr <<= Z16
                                if s.cct + T1 < s.r_ct:
                                    s.cct <<= s.cct + T1
                                else:
                                    s.cct <<= Z16
                                    s.ckt <<= s.ckt + T1

    def line_trace(s):
        return f"W{int(s.ckt)}.{int(s.cct)}.{int(s.cr)}.{int(s.cs)}.{int(s.ci)}.{int(s.cj)}"
