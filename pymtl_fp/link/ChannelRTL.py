"""Channel pipeline (RTL): a fixed-latency, valid-qualified delay line of ``latency`` registers.

Models the physical path of one direction of a link (serdes, transceivers, cable) as
``latency`` pipeline stages: ``in_val``/``in_msg`` presented in cycle t appear at
``out_val``/``out_msg`` in cycle t + latency.  No back-pressure (a link's flow control is the
credit protocol around it).  Used for the forward flit channel and for the return path (credits,
ACK/NAK).  The valid bits and the last data register are reset; the other data registers are not
(they map to shift-register LUTs on an FPGA, and the reset last register stays a flip-flop, so
the logic behind the channel starts from a flip-flop's clock-to-output, not a shift-register
LUT's).  Synthesizable; elaboration parameters: ``nbits``, ``latency``.

Test benches may put a fault injector (:mod:`pymtl_fp.tb.link_faults`) in front of this component by
passing another channel type to :class:`~pymtl_fp.link.LinkRTL.LinkRTL`; this file stays
fault-free.
"""

from pymtl3 import Component, InPort, OutPort, Wire, b32, update_ff


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

        L = latency
        s.val_q = [Wire() for _ in range(L)]
        s.out_val //= s.val_q[L - 1]
        ZERO = b32(0)
        ONE = b32(1)

        @update_ff
        def up_valid():
            if s.reset:
                for i in range(ZERO, L):
                    s.val_q[i] <<= 0
            else:
                s.val_q[0] <<= s.in_val
                for i in range(ONE, L):
                    s.val_q[i] <<= s.val_q[i - 1]

        if L == 1:
            s.msg_q = [Wire(nbits)]
            s.out_msg //= s.msg_q[0]

            @update_ff
            def up_msg():
                s.msg_q[0] <<= s.in_msg
        else:
            LD = L - 1  # data registers without reset (shift-register LUTs), then the reset one
            s.msg_q = [Wire(nbits) for _ in range(LD)]
            s.msg_last_in = Wire(nbits)
            s.msg_out = Wire(nbits)
            s.msg_last_in //= s.msg_q[LD - 1]
            s.out_msg //= s.msg_out

            @update_ff
            def up_msg_shift():
                s.msg_q[0] <<= s.in_msg
                for i in range(ONE, LD):
                    s.msg_q[i] <<= s.msg_q[i - 1]

            @update_ff
            def up_msg_out():
                if s.reset:
                    s.msg_out <<= 0
                else:
                    s.msg_out <<= s.msg_last_in

    def occupancy(s) -> int:
        """Valid entries in flight (Python-side helper for traces and tests)."""
        return sum(int(v) for v in s.val_q)

    def line_trace(s):
        return f"[{''.join('*' if v else '.' for v in s.val_q)}]"
