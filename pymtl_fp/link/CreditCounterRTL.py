"""Credit counter (RTL) of the link's sender.

Holds the number of free entries of the receiver's buffer the sender may still fill.  Reset to
``credits``; ``consume`` (a new message starts on the channel) decrements it, ``ret`` (a credit
arrives on the return path) increments it; both in one cycle leave it unchanged.  ``avail`` is
``count != 0`` (from the register: a credit returned in cycle t can be spent from t+1).
Synthesizable; elaboration parameter: ``credits``.
"""

from pymtl3 import Bits, Component, InPort, OutPort, Wire, update, update_ff

from pymtl_fp.link.config import clog2


class CreditCounterRTL(Component):
    def construct(s, credits):
        if not (isinstance(credits, int) and credits >= 1):
            raise ValueError(f"CreditCounterRTL: credits must be an int >= 1, got {credits!r}")
        s.params = dict(credits=credits)
        nb = clog2(credits + 1)
        INIT = Bits(nb, credits)
        s.consume = InPort()
        s.ret = InPort()
        s.avail = OutPort()
        s.count = Wire(nb)

        @update
        def up_avail():
            s.avail @= s.count != 0

        @update_ff
        def up_count():
            if s.reset:
                s.count <<= INIT
            elif s.consume & ~s.ret:
                s.count <<= s.count - 1
            elif s.ret & ~s.consume:
                s.count <<= s.count + 1

    def line_trace(s):
        return f"cr{int(s.count):>3}"
