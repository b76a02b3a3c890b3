"""A shift by a variable amount as explicit multiplexer stages (RTL, combinational).

``out = in_ << amt`` (``left``) or ``in_ >> amt`` (logical), truncated to ``nbits``: one stage of
2:1 selects per bit of ``amt`` (stage ``b`` shifts by ``2**b`` where bit ``b`` is set), the
barrel shifter a synthesis tool builds from a ``<<`` anyway.  Written out, it is not a shift
cell: Yosys's resource sharing (``share``, in ``synth_xilinx`` and ``synth_ecp5``) merges shift
cells whose results are used under exclusive conditions by putting selects in front of them,
which puts those conditions on the path through the shift.  The address generator's tap bounds
(:class:`~pymtl_fp.engine.AddrTapBoundsRTL.AddrTapBoundsRTL`) shift by the stride with it.
"""

from pymtl3 import Component, InPort, OutPort, update


class ShiftStageRTL(Component):
    """One stage of :class:`ShiftRTL`: ``out = in_ << k`` (``left``; else ``>>``) where ``sel``, else
    ``in_``."""

    def construct(s, nbits=18, k=1, left=True):
        s.params = dict(nbits=nbits, k=k, left=left)
        s.in_ = InPort(nbits)
        s.sel = InPort()
        s.out = OutPort(nbits)
        s.left = left
        if left:
            @update
            def up_shift_left():
                if s.sel:
                    s.out @= s.in_ << k
                else:
                    s.out @= s.in_
        else:
            @update
            def up_shift_right():
                if s.sel:
                    s.out @= s.in_ >> k
                else:
                    s.out @= s.in_

    def line_trace(s):
        return f"{int(s.in_)}{'<<' if s.left else '>>'}{int(s.sel) * s.params['k']}={int(s.out)}"


class ShiftRTL(Component):
    """``out = (in_ << amt) if left else (in_ >> amt)`` on ``nbits`` bits (combinational)."""

    def construct(s, nbits=18, amt_bits=3, left=True):
        s.params = dict(nbits=nbits, amt_bits=amt_bits, left=left)
        if not 1 <= amt_bits <= 6 or nbits < 1:
            raise ValueError("ShiftRTL needs nbits >= 1 and 1 <= amt_bits <= 6")
        s.in_ = InPort(nbits)
        s.amt = InPort(amt_bits)
        s.out = OutPort(nbits)
        s.left = left
        s.stage = [ShiftStageRTL(nbits, 1 << b, left) for b in range(amt_bits)]  # stage b: by 2**b
        for b, st in enumerate(s.stage):
            st.in_ //= s.in_ if b == 0 else s.stage[b - 1].out
            st.sel //= s.amt[b]
        s.out //= s.stage[-1].out

    def line_trace(s):
        return f"{int(s.in_)}{'<<' if s.left else '>>'}{int(s.amt)}={int(s.out)}"
