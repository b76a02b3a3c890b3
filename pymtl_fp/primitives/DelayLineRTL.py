"""Delay line (RTL): ``lanes`` signals of ``nbits`` bits, each ``stages`` registers deep.

``out[i]`` is ``in_[i]`` of ``stages`` cycles before (``stages >= 1``).  With ``reset`` every
register clears on reset (for valid and enable bits); without it the registers before the last have
no reset, so that an FPGA flow can map them to shift-register LUTs (SRL16/SRLC32) instead of
flip-flops, and the last register (of two or more; a single register has no reset) clears on
reset: a flip-flop that no shift-register LUT absorbs, so
the line's output leaves a flip-flop (about 0.3 ns from the clock on a 7-series part) rather than a
shift-register LUT (1.5 ns), which the logic behind it would otherwise inherit.
:func:`delayed` puts one in a parent only where a delay is asked for.
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update_ff


class DelayLineRTL(Component):
    def construct(s, nbits=1, stages=1, lanes=1, reset=False):
        if stages < 1 or lanes < 1 or nbits < 1:
            raise ValueError(f"DelayLineRTL needs nbits, stages, lanes >= 1, got {nbits}, {stages}, {lanes}")
        s.params = dict(nbits=nbits, stages=stages, lanes=lanes, reset=reset)
        s.in_ = [InPort(nbits) for _ in range(lanes)]
        s.out = [OutPort(nbits) for _ in range(lanes)]
        s.r = [[Wire(nbits) for _ in range(lanes)] for _ in range(stages)]
        ZERO = mk_bits(nbits)(0)

        if reset:
            @update_ff
            def up_delay_reset():
                for i in range(lanes):
                    if s.reset:
                        s.r[0][i] <<= ZERO
                    else:
                        s.r[0][i] <<= s.in_[i]
                for k in range(1, stages):
                    for i in range(lanes):
                        if s.reset:
                            s.r[k][i] <<= ZERO
                        else:
                            s.r[k][i] <<= s.r[k - 1][i]
        elif stages == 1:
            @update_ff
            def up_delay():
                for i in range(lanes):
                    s.r[0][i] <<= s.in_[i]
        else:
            LAST = stages - 1

            @update_ff
            def up_delay_flop_out():
                for i in range(lanes):
                    s.r[0][i] <<= s.in_[i]
                for k in range(1, LAST):
                    for i in range(lanes):
                        s.r[k][i] <<= s.r[k - 1][i]
                for i in range(lanes):
                    if s.reset:
                        s.r[LAST][i] <<= ZERO
                    else:
                        s.r[LAST][i] <<= s.r[LAST - 1][i]

        for i in range(lanes):
            s.out[i] //= s.r[stages - 1][i]

    def line_trace(s):
        return "dl(" + ",".join(str(s.out[i]) for i in range(len(s.out))) + ")"


def delayed(parent, name: str, src, stages: int, valid: bool = False):
    """``src`` (a signal, or a list of signals of one width) ``stages`` cycles later, for wiring in
    ``parent``'s ``construct``: ``src`` itself when ``stages`` is 0, else the outputs of a
    :class:`DelayLineRTL` added to ``parent`` as ``name`` (with ``valid``, one that clears on
    reset)."""
    if not stages:
        return src
    sigs = src if isinstance(src, list) else [src]
    line = DelayLineRTL(sigs[0].get_type().nbits, stages, len(sigs), valid)
    setattr(parent, name, line)
    for i, sig in enumerate(sigs):
        line.in_[i] //= sig
    return line.out if isinstance(src, list) else line.out[0]
