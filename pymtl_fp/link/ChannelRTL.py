"""Channel pipeline (RTL): a fixed-latency, valid-qualified delay line of ``latency`` registers.

Models the physical path of one direction of a link (serdes, transceivers, cable) as
``latency`` pipeline stages: ``in_val``/``in_msg`` presented in cycle t appear at
``out_val``/``out_msg`` in cycle t + latency.  No back-pressure (a link's flow control is the
credit protocol around it).  Used for the forward flit channel and for the return path (credits,
ACK/NAK).  Two :class:`~pymtl_fp.primitives.DelayLineRTL.DelayLineRTL`: the valid bits, every
register reset, and the data, no register reset but the last (shift-register LUTs on an FPGA, the
last a flip-flop, so the logic behind the channel starts from a flip-flop's clock-to-output).
Synthesizable; elaboration parameters: ``nbits``, ``latency``.

Test benches may put a fault injector (:mod:`pymtl_fp.tb.link_faults`) in front of this component by
passing another channel type to :class:`~pymtl_fp.link.LinkRTL.LinkRTL`; this file stays
fault-free.
"""

from pymtl3 import Component, InPort, OutPort

from pymtl_fp.primitives.DelayLineRTL import delayed


class ChannelRTL(Component):
    def construct(s, nbits, latency):
        if not (isinstance(nbits, int) and 1 <= nbits <= 1023):
            raise ValueError(f"ChannelRTL: nbits must be an int in [1, 1023], got {nbits!r}")
        if not (isinstance(latency, int) and latency >= 1):
            raise ValueError(f"ChannelRTL: latency must be an int >= 1, got {latency!r}")
        s.params = dict(nbits=nbits, latency=latency)
        s.latency = latency
        s.in_val = InPort()
        s.in_msg = InPort(nbits)
        s.out_val = OutPort()
        s.out_msg = OutPort(nbits)

        # valid bits reset; data registers as DelayLineRTL keeps them without reset: shift-register LUTs
        # but the last, which is reset and so a flip-flop
        s.out_val //= delayed(s, "val", s.in_val, latency, valid=True)
        s.out_msg //= delayed(s, "msg", s.in_msg, latency)

    def occupancy(s) -> int:
        """Valid entries in flight (Python-side helper for traces and tests)."""
        return sum(int(stage[0]) for stage in s.val.r)

    def line_trace(s):
        return f"[{''.join('*' if stage[0] else '.' for stage in s.val.r)}]"
