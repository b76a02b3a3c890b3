"""Serializer (RTL) of the link's sender: one message -> ``flits`` flits, one per cycle.

A frame starts in a cycle where the serializer is idle, a message is offered (``in_val``) and
``can_go`` (a credit, or a retransmission): ``take`` pulses, flit 0 goes out in that same cycle
and flits 1 .. flits-1 in the following cycles, so back-to-back frames leave the channel busy
every cycle.  The message is cut into ``phit_bits`` slices, lowest bits first; the last slice is
zero-padded.

Flit layout (a Bits of ``LinkConfig.flit_bits``, lowest bits first): ``data`` (phit_bits),
``idx`` (flit index in the frame), ``seq`` (the message's sequence number), and with CRC on
``crc`` (the message's CRC-32 on the last flit, 0 on the others).
Synthesizable; elaboration parameter: the :class:`~pymtl_fp.link.config.LinkConfig`.
"""

from pymtl3 import (
    Bits,
    Component,
    InPort,
    OutPort,
    Wire,
    mk_bits,
    update,
    update_ff,
    zext,
)


class SerializerRTL(Component):
    def construct(s, cfg):
        s.params = cfg.elab_params()
        M, P, F, S, I = cfg.msg_bits, cfg.phit_bits, cfg.flits, cfg.seq_bits, cfg.idx_bits
        fields = cfg.flit_fields()
        s.cfg = cfg

        s.in_val = InPort()
        s.in_msg = InPort(M)
        s.in_seq = InPort(S)
        s.can_go = InPort()
        s.take = OutPort()
        s.out_val = OutPort()
        s.out_flit = OutPort(cfg.flit_bits)
        if cfg.crc:
            s.in_crc = InPort(32)
            s.f_crc = Wire(32)
            s.out_flit[slice(*fields["crc"])] //= s.f_crc

        s.f_data = Wire(P)
        s.f_idx = Wire(I)
        s.f_seq = Wire(S)
        s.out_flit[slice(*fields["data"])] //= s.f_data
        s.out_flit[slice(*fields["idx"])] //= s.f_idx
        s.out_flit[slice(*fields["seq"])] //= s.f_seq

        s.first = Wire(P)  # flit 0 of the offered message
        if F == 1:
            if P > M:
                PT = mk_bits(P)

                @update
                def up_first():
                    s.first @= zext(s.in_msg, PT)
            else:
                s.first //= s.in_msg
        else:
            s.first //= s.in_msg[0:P]

        if F == 1:
            @update
            def up_ser1():
                s.take @= s.in_val & s.can_go
                s.out_val @= s.take
                s.f_data @= s.first
                s.f_idx @= 0
                s.f_seq @= s.in_seq

            if cfg.crc:
                @update
                def up_crc1():
                    s.f_crc @= s.in_crc
            return

        RW = (F - 1) * P  # bits after flit 0, zero-padded
        LASTK = Bits(I, F - 1)
        IT = mk_bits(I)
        s.busy = Wire()
        s.k = Wire(I)
        s.cur_seq = Wire(S)
        s.shreg = Wire(RW)
        s.rest = Wire(RW)
        if RW > M - P:
            RT = mk_bits(RW)

            @update
            def up_rest():
                s.rest @= zext(s.in_msg[P:M], RT)
        else:
            s.rest //= s.in_msg[P:M]

        @update
        def up_ser():
            s.take @= ~s.busy & s.in_val & s.can_go
            s.out_val @= s.take | s.busy
            if s.busy:
                s.f_data @= s.shreg[0:P]
                s.f_idx @= s.k
                s.f_seq @= s.cur_seq
            else:
                s.f_data @= s.first
                s.f_idx @= 0
                s.f_seq @= s.in_seq

        if cfg.crc:
            s.cur_crc = Wire(32)

            @update
            def up_crc():
                if s.busy & (s.k == LASTK):
                    s.f_crc @= s.cur_crc
                else:
                    s.f_crc @= 0

            @update_ff
            def up_crc_reg():
                if s.take:
                    s.cur_crc <<= s.in_crc

        if F == 2:
            @update_ff
            def up_shreg2():
                if s.take:
                    s.shreg <<= s.rest
        else:
            @update_ff
            def up_shreg():
                if s.take:
                    s.shreg <<= s.rest
                elif s.busy:
                    s.shreg <<= s.shreg >> P

        @update_ff
        def up_state():
            if s.reset:
                s.busy <<= 0
                s.k <<= 0
            elif s.take:
                s.busy <<= 1
                s.k <<= 1
            elif s.busy:
                if s.k == LASTK:
                    s.busy <<= 0
                s.k <<= s.k + IT(1)
            if s.take:
                s.cur_seq <<= s.in_seq

    def line_trace(s):
        if not s.out_val:
            return " " * 6
        return f"{'S' if s.take else '>'}{int(s.f_seq):>2}.{int(s.f_idx):<2}"
