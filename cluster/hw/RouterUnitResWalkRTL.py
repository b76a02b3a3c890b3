"""The residual unit's walk (RTL): the counters that visit an ``(N, C, H, W)`` map in the engine's
activation layout for a global average pool (GAP, GAPB of :mod:`pymtl_fp.cluster.isa.residual`), with
every address and index as a running sum (no multiplier between the counters and the outputs).

The layout: element ``[n, c, hw]`` (``A`` pixels, ``c = ct*P + j``) sits at ``((n*CT + ct)*A + hw)*P +
j``; a group ``g = n*CT + ct`` is one channel tile of one image.

* ``gap`` high (GAP's order: pixel ``hw`` fastest, then lane ``j``, then the group): ``addr`` is the
  element's position (the map's element read), ``first`` / ``last`` mark the first / last pixel of a
  channel's sum, ``flat = n*C + c`` is the mean's flat index;
* ``gap`` low (GAPB's order, the layout's own: lane fastest, then pixel, then group): ``addr = g*P + j``
  is dy's element, ``flat = (n*C + c)*A + hw`` the flat index of dx's element;
* ``in_tensor``: ``c < C`` (else a padding lane).

``start`` registers the order and the map (``lanes`` = P, ``ct``, ``c``, ``area`` = A, ``chw`` = C*A)
and clears the counters; each ``step`` moves to the next element.  Outputs come from registers.
Elaboration parameter: ``addr_bits`` (the scratch FIFO's address width; addresses wrap at it).
"""

from pymtl3 import Bits8, Bits16, Bits17, Bits24, Bits32, Component, InPort, OutPort, Wire, mk_bits, update, update_ff, zext


class RouterUnitResWalkRTL(Component):
    def construct(s, addr_bits=23):
        A = mk_bits(addr_bits)
        Z8, Z16, Z17, Z24, Z32, ZA = Bits8(0), Bits16(0), Bits17(0), Bits24(0), Bits32(0), A(0)
        ONE8, ONE16, ONE17, ONE24, ONE32, ONEA = Bits8(1), Bits16(1), Bits17(1), Bits24(1), Bits32(1), A(1)
        s.params = dict(addr_bits=addr_bits)

        s.start = InPort()
        s.step = InPort()
        s.gap = InPort()
        s.lanes = InPort(8)
        s.ct = InPort(16)
        s.c = InPort(16)
        s.area = InPort(17)
        s.chw = InPort(24)
        s.addr = OutPort(addr_bits)
        s.flat = OutPort(32)
        s.in_tensor = OutPort()
        s.first = OutPort()
        s.last = OutPort()

        s.r_gap = Wire()
        s.r_p, s.r_ct, s.r_c, s.r_a, s.r_chw = Wire(8), Wire(16), Wire(16), Wire(17), Wire(24)
        s.cj, s.cct, s.chwc = Wire(8), Wire(16), Wire(17)   # lane, channel tile, pixel
        s.pos = Wire(addr_bits)    # GAP: the element read
        s.jbase = Wire(addr_bits)  # GAP: the position of the group's lane j, pixel 0
        s.gp = Wire(addr_bits)     # GAPB: g*P
        s.cc = Wire(24)       # c = ct*P + j
        s.ccbase = Wire(24)   # ct*P
        s.nbase = Wire(32)    # GAP: n*C; GAPB: n*C*A
        s.fl = Wire(32)       # GAPB: the flat index
        s.hwbase = Wire(32)   # GAPB: the flat index of lane 0 at this pixel
        s.wj, s.wp, s.wct = Wire(), Wire(), Wire()  # the lane, pixel and tile counters wrap at this step

        @update
        def up_res_walk_out():
            s.wj @= ~(zext(s.cj, Bits16) + ONE16 < zext(s.r_p, Bits16))
            s.wp @= ~(s.chwc + ONE17 < s.r_a)
            s.wct @= ~(s.cct + ONE16 < s.r_ct)
            s.in_tensor @= s.cc < zext(s.r_c, Bits24)
            s.first @= s.chwc == Z17
            s.last @= s.wp
            if s.r_gap:
                s.addr @= s.pos
                s.flat @= s.nbase + zext(s.cc, Bits32)
            else:
                s.addr @= s.gp + zext(s.cj, A)
                s.flat @= s.fl

        @update_ff
        def up_res_walk_regs():
            if s.start:
                s.r_gap <<= s.gap
                s.r_p <<= s.lanes
                s.r_ct <<= s.ct
                s.r_c <<= s.c
                s.r_a <<= s.area
                s.r_chw <<= s.chw
                s.cj <<= Z8
                s.cct <<= Z16
                s.chwc <<= Z17
                s.pos <<= ZA
                s.jbase <<= ZA
                s.gp <<= ZA
                s.cc <<= Z24
                s.ccbase <<= Z24
                s.nbase <<= Z32
                s.fl <<= Z32
                s.hwbase <<= Z32
            elif s.step & s.r_gap:  # pixel fastest, then lane, then group
                if ~s.wp:
                    s.chwc <<= s.chwc + ONE17
                    s.pos <<= s.pos + zext(s.r_p, A)
                else:
                    s.chwc <<= Z17
                    if ~s.wj:
                        s.cj <<= s.cj + ONE8
                        s.jbase <<= s.jbase + ONEA
                        s.pos <<= s.jbase + ONEA
                        s.cc <<= s.cc + ONE24
                    else:  # the group's last element: the next group starts right after it
                        s.cj <<= Z8
                        s.pos <<= s.pos + ONEA
                        s.jbase <<= s.pos + ONEA
                        if ~s.wct:
                            s.cct <<= s.cct + ONE16
                            s.cc <<= s.cc + ONE24
                        else:
                            s.cct <<= Z16
                            s.cc <<= Z24
                            s.nbase <<= s.nbase + zext(s.r_c, Bits32)
            elif s.step:  # lane fastest, then pixel, then group
                if ~s.wj:
                    s.cj <<= s.cj + ONE8
                    s.fl <<= s.fl + zext(s.r_a, Bits32)
                    s.cc <<= s.cc + ONE24
                else:
                    s.cj <<= Z8
                    if ~s.wp:
                        s.chwc <<= s.chwc + ONE17
                        s.fl <<= s.hwbase + ONE32
                        s.hwbase <<= s.hwbase + ONE32
                        s.cc <<= s.ccbase
                    else:
                        s.chwc <<= Z17
                        s.gp <<= s.gp + zext(s.r_p, A)
                        if ~s.wct:  # the tile's last element: the next tile's flat index follows it
                            s.cct <<= s.cct + ONE16
                            s.fl <<= s.fl + ONE32
                            s.hwbase <<= s.fl + ONE32
                            s.ccbase <<= s.ccbase + zext(s.r_p, Bits24)
                            s.cc <<= s.ccbase + zext(s.r_p, Bits24)
                        else:
                            s.cct <<= Z16
                            s.nbase <<= s.nbase + zext(s.r_chw, Bits32)
                            s.fl <<= s.nbase + zext(s.r_chw, Bits32)
                            s.hwbase <<= s.nbase + zext(s.r_chw, Bits32)
                            s.ccbase <<= Z24
                            s.cc <<= Z24

    def line_trace(s):
        return f"R{int(s.cct)}.{int(s.chwc)}.{int(s.cj)}@{int(s.addr)}={int(s.flat)}"
