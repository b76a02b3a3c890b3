"""Retransmission buffer with go-back-N control (RTL) of the link's sender.

Holds every message accepted from the sender's stream port until the receiver acknowledges it,
and decides which message the serializer sends next.  Messages get consecutive sequence numbers
modulo ``2 * window`` (``seq_bits = log2(window) + 1``); the buffer has ``window`` entries
(a power of two), indexed by the low bits of the sequence number.

Pointers (sequence numbers): ``base`` (oldest unacknowledged) <= ``tx`` (next to send) <= ``hi``
(next never sent) <= ``tail`` (next free), all modulo ``2 * window``.

* ``enq_rdy = tail - base < window``; an accepted message is readable from the next cycle.
* ``rd_val = tx != tail`` offers ``mem[tx]`` with sequence number ``tx``; ``rd_new = tx == hi``
  says it is a first transmission (which needs a credit; a retransmission reuses its credit).
  ``take`` (the serializer starts the frame) advances ``tx`` (and ``hi`` if new).
* ``ack_val, ack_seq`` (return path): ``ack_seq`` and everything before it arrived intact:
  ``base = ack_seq + 1`` (``tx`` follows if it was at ``base``).
* ``nak_val, nak_seq``: the receiver dropped a frame and expects ``nak_seq``: ``base = nak_seq``
  and rewind ``tx = base`` (go-back-N).
* Timeout: while frames are outstanding (``tx != base``) and no ACK arrives for ``timeout``
  cycles, rewind ``tx = base`` (covers a lost last frame, or a retransmission lost while a NAK
  was already pending).

Statistics (status registers, 32-bit, wrap): ``n_retx`` frames sent again, ``n_timeouts``.
Synthesizable; elaboration parameters: ``msg_bits``, ``window``, ``timeout``.
"""

from pymtl3 import Bits, Component, InPort, OutPort, Wire, mk_bits, update, update_ff

from pymtl_fp.link.config import clog2


class RetransmitBufferRTL(Component):
    def construct(s, msg_bits, window, timeout):
        if not (isinstance(window, int) and window >= 2 and window & (window - 1) == 0):
            raise ValueError(f"RetransmitBufferRTL: window must be a power of two >= 2, got {window!r}")
        if not (isinstance(timeout, int) and timeout >= 2):
            raise ValueError(f"RetransmitBufferRTL: timeout must be an int >= 2, got {timeout!r}")
        s.params = dict(msg_bits=msg_bits, window=window, timeout=timeout)
        IB = clog2(window)
        S = IB + 1
        TB = clog2(timeout + 1)
        WIN = Bits(S, window)
        TMAX = Bits(TB, timeout - 1)
        SeqT = mk_bits(S)

        s.enq_val = InPort()
        s.enq_rdy = OutPort()
        s.enq_msg = InPort(msg_bits)
        s.rd_val = OutPort()
        s.rd_msg = OutPort(msg_bits)
        s.rd_seq = OutPort(S)
        s.rd_new = OutPort()
        s.take = InPort()
        s.ack_val = InPort()
        s.ack_seq = InPort(S)
        s.nak_val = InPort()
        s.nak_seq = InPort(S)
        s.n_retx = OutPort(32)
        s.n_timeouts = OutPort(32)

        s.mem = [Wire(msg_bits) for _ in range(window)]
        s.base = Wire(S)
        s.tx = Wire(S)
        s.hi = Wire(S)
        s.tail = Wire(S)
        s.timer = Wire(TB)

        s.occ = Wire(S)
        s.enq_xfer = Wire()
        s.outstanding = Wire()
        s.fire = Wire()
        s.rewind = Wire()
        s.base_n = Wire(S)
        s.tx_t = Wire(S)
        s.tx_n = Wire(S)

        # outputs from registers only (kept apart from the next-state logic, which reads inputs)
        @update
        def up_outputs():
            s.occ @= s.tail - s.base
            s.enq_rdy @= s.occ < WIN
            s.rd_val @= s.tx != s.tail
            s.rd_new @= s.tx == s.hi
            s.rd_msg @= s.mem[s.tx[0:IB]]
            s.rd_seq @= s.tx
            s.outstanding @= s.tx != s.base

        @update
        def up_next():
            s.enq_xfer @= s.enq_val & s.enq_rdy
            s.fire @= s.outstanding & (s.timer == TMAX) & ~s.ack_val & ~s.nak_val
            s.rewind @= s.nak_val | s.fire
            if s.nak_val:
                s.base_n @= s.nak_seq
            elif s.ack_val:
                s.base_n @= s.ack_seq + SeqT(1)
            else:
                s.base_n @= s.base
            if s.take:
                s.tx_t @= s.tx + SeqT(1)
            else:
                s.tx_t @= s.tx
            if s.rewind | (s.ack_val & (s.tx_t == s.base)):
                s.tx_n @= s.base_n
            else:
                s.tx_n @= s.tx_t

        @update_ff
        def up_regs():
            if s.reset:
                s.base <<= 0
                s.tx <<= 0
                s.hi <<= 0
                s.tail <<= 0
                s.timer <<= 0
                s.n_retx <<= 0
                s.n_timeouts <<= 0
            else:
                s.base <<= s.base_n
                s.tx <<= s.tx_n
                if s.take & s.rd_new:
                    s.hi <<= s.hi + SeqT(1)
                if s.enq_xfer:
                    s.tail <<= s.tail + SeqT(1)
                if s.ack_val | s.rewind | ~s.outstanding:
                    s.timer <<= 0
                else:
                    s.timer <<= s.timer + 1
                if s.take & ~s.rd_new:
                    s.n_retx <<= s.n_retx + 1
                if s.fire:
                    s.n_timeouts <<= s.n_timeouts + 1
            if s.enq_xfer:
                s.mem[s.tail[0:IB]] <<= s.enq_msg

    def line_trace(s):
        return (f"b{int(s.base):>2}t{int(s.tx):>2}h{int(s.hi):>2}e{int(s.tail):>2}"
                f"{'R' if s.rewind else ' '}")
