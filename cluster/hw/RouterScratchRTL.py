"""The router's scratch FIFO (RTL): a ring buffer of elements with a FIFO interface that moves up to
``lanes`` elements an edge for the DMA's copies, and random reads relative to its head for the
scalar units.

* ``push_n`` elements (0..``lanes``: lanes ``0 .. push_n - 1`` of ``push_data``) append at the
  tail and ``pop_n`` elements drop from the head, at a rising edge; ``head`` holds the ``lanes``
  oldest elements (combinational; lanes past ``count`` are undefined), ``count`` what is held;
* ``raddr0``/``raddr1`` read the elements at those offsets from the head (combinational:
  ``rdata0``/``rdata1``): the bias unit reads ``b[i]`` and ``db[i]``, the gather unit its runs;
* ``drop`` discards ``drop_n`` elements at the head (a scalar unit's consumed input) in one edge
  (with a push in the same edge allowed; ``pop_n`` and ``drop`` never come together);
* ``peak``: the largest ``count`` since reset; ``error`` (sticky): a push that does not fit, or a
  pop / drop of more than is held (the head, tail and count are a
  :class:`~pymtl_fp.primitives.RingPtrRTL.RingPtrRTL`'s).

Element ``i`` of the ring (``depth`` elements) lives in bank ``i % lanes``, row ``i // lanes``,
so ``lanes`` consecutive elements, wherever they start, sit in different banks: a beat is written
or read in one edge with the lanes rotated by the tail's (head's) position.  Each bank is a
:class:`~pymtl_fp.cluster.hw.RouterScratchBankRTL.RouterScratchBankRTL` (one write, three reads: LUT
RAM to Yosys).  With ``lanes = 1`` this is a plain one-element ring in the same shape.
Elaboration parameters: ``width``, ``depth`` and ``lanes``
(powers of two, ``lanes`` dividing ``depth``), ``fast`` (the ring's count and peak computed for a
short path: :class:`~pymtl_fp.primitives.RingPtrRTL.RingPtrRTL`'s ``fast``; the same values) and
``wreg`` (every bank's write registered, a bank even for ``lanes = 1``: the bank's ``wreg``; the
same values at every port in every cycle).
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, update_ff, zext

from pymtl_fp.cluster.hw.RouterScratchBankRTL import RouterScratchBankRTL
from pymtl_fp.primitives.RingPtrRTL import RingPtrRTL


def _pow2(v) -> bool:
    return isinstance(v, int) and v >= 1 and v & (v - 1) == 0


class RouterScratchRTL(Component):
    def construct(s, width=32, depth=1024, lanes=1, fast=False, wreg=False):
        if not (_pow2(depth) and depth >= 2):
            raise ValueError(f"RouterScratchRTL: depth must be a power of two >= 2, got {depth!r}")
        if not (_pow2(lanes) and lanes <= depth // 2):
            raise ValueError(f"RouterScratchRTL: lanes must be a power of two <= depth / 2, got {lanes!r}")
        s.params = dict(width=width, depth=depth, lanes=lanes)
        if fast:
            s.params["fast"] = True
        if wreg:
            s.params["wreg"] = True
        E = lanes
        A = depth.bit_length() - 1   # element address bits
        LB = E.bit_length() - 1      # lane bits
        C = A + 1
        NB = E.bit_length()          # 0..E
        AT, NT = mk_bits(A), mk_bits(NB)
        LMASK = AT(E - 1)
        ZW = mk_bits(width)(0)

        s.push_n = InPort(NB)
        s.push_data = [InPort(width) for _ in range(E)]
        s.pop_n = InPort(NB)
        s.head = [OutPort(width) for _ in range(E)]
        s.count = OutPort(C)
        s.peak = OutPort(C)
        s.error = OutPort()
        s.raddr0 = InPort(A)
        s.rdata0 = OutPort(width)
        s.raddr1 = InPort(A)
        s.rdata1 = OutPort(width)
        s.drop = InPort()
        s.drop_n = InPort(C)

        # the ring's pointers: push_n in, pop_n or a drop's drop_n out
        s.ring = RingPtrRTL(depth, NB, C, fast=fast)
        s.ring.push_n //= s.push_n
        s.count //= s.ring.count
        s.peak //= s.ring.peak
        s.error //= s.ring.error
        s.hd = Wire(A)
        s.tl = Wire(A)
        s.hd //= s.ring.hd
        s.tl //= s.ring.tl
        s.ok_push = Wire()
        s.ok_push //= s.ring.ok_push
        s.a0 = Wire(A)
        s.a1 = Wire(A)

        @update
        def up_scratch_pop():
            if s.drop:
                s.ring.pop_n @= s.drop_n
            else:
                s.ring.pop_n @= zext(s.pop_n, C)

        if E == 1 and not wreg:
            # one element an edge: a plain ring, one write and three reads at computed addresses
            # (Yosys maps it to quad-port LUT RAM)
            s.mem = [Wire(width) for _ in range(depth)]

            @update
            def up_ring_read():
                s.head[0] @= s.mem[s.hd]
                s.a0 @= s.hd + s.raddr0
                s.a1 @= s.hd + s.raddr1
                s.rdata0 @= s.mem[s.a0]
                s.rdata1 @= s.mem[s.a1]

            @update_ff
            def up_ring_mem():
                if s.ok_push & s.push_n:
                    s.mem[s.tl] <<= s.push_data[0]
        else:
            # E banks of one write and three reads each (RouterScratchBankRTL): tail lane j writes
            # bank (tl + j) % E, head lane j reads bank (hd + j) % E, and every bank reads the rows
            # of raddr0 and raddr1 (one of them is the bank that holds the element)
            RT = mk_bits(A - LB)
            s.banks = [RouterScratchBankRTL(width, depth // E, wreg) for _ in range(E)]
            s.h_idx = [Wire(A) for _ in range(E)]  # head lane j: element hd + j
            s.t_idx = [Wire(A) for _ in range(E)]  # tail lane j: element tl + j

            @update
            def up_scratch_bank_ports():
                for j in range(E):
                    s.h_idx[j] @= s.hd + AT(j)
                    s.t_idx[j] @= s.tl + AT(j)
                s.a0 @= s.hd + s.raddr0
                s.a1 @= s.hd + s.raddr1
                for b in range(E):
                    s.banks[b].wen @= 0
                    s.banks[b].waddr @= RT(0)
                    s.banks[b].wdata @= ZW
                    s.banks[b].raddr[0] @= RT(0)
                    for j in range(E):
                        if (s.t_idx[j] & LMASK) == AT(b):
                            s.banks[b].wen @= s.ok_push & (NT(j) < s.push_n)
                            s.banks[b].waddr @= s.t_idx[j][LB:A]
                            s.banks[b].wdata @= s.push_data[j]
                        if (s.h_idx[j] & LMASK) == AT(b):
                            s.banks[b].raddr[0] @= s.h_idx[j][LB:A]
                    s.banks[b].raddr[1] @= s.a0[LB:A]
                    s.banks[b].raddr[2] @= s.a1[LB:A]

            @update
            def up_scratch_bank_reads():
                for j in range(E):
                    s.head[j] @= ZW
                    for b in range(E):
                        if (s.h_idx[j] & LMASK) == AT(b):
                            s.head[j] @= s.banks[b].rdata[0]
                s.rdata0 @= ZW
                s.rdata1 @= ZW
                for b in range(E):
                    if (s.a0 & LMASK) == AT(b):
                        s.rdata0 @= s.banks[b].rdata[1]
                    if (s.a1 & LMASK) == AT(b):
                        s.rdata1 @= s.banks[b].rdata[2]

    def line_trace(s):
        return f"[{int(s.count)}]"
