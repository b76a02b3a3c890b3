"""Deserializer (RTL) of the link's receiver: flits -> frames, with framing checks.

A frame is ``flits`` flits with indices 0 .. flits-1 and one sequence number.  A flit with
index 0 always starts a new frame (``abandon`` pulses if a frame was left incomplete: a flit was
lost, but the new frame may well be its retransmission, so this alone does not call for a NAK);
any other flit must carry the next index and the frame's sequence number, else ``err`` pulses
and the receiver waits for the next index-0 flit.  The zero padding of the last flit (when
``msg_bits`` is not a multiple of ``phit_bits``) must be zero, else ``err``.  In the cycle the
last flit arrives, ``out_val`` is high with the assembled message (``out_msg``, flit 0 in the
lowest bits), its sequence number and the CRC field of the last flit; the receiver checks them
combinationally in that cycle.
Synthesizable; elaboration parameter: the :class:`~pymtl_fp.link.config.LinkConfig`.
"""

from pymtl3 import (
    Bits,
    Component,
    InPort,
    OutPort,
    Wire,
    concat,
    mk_bits,
    update,
    update_ff,
)


class DeserializerRTL(Component):
    def construct(s, cfg):
        s.params = cfg.elab_params()
        M, P, F, S, I = cfg.msg_bits, cfg.phit_bits, cfg.flits, cfg.seq_bits, cfg.idx_bits
        fields = cfg.flit_fields()
        RW = (F - 1) * P  # bits carried by flits 0 .. F-2
        LASTW = M - RW  # meaningful bits of the last flit, 1 .. P

        s.in_val = InPort()
        s.in_flit = InPort(cfg.flit_bits)
        s.out_val = OutPort()
        s.out_msg = OutPort(M)
        s.out_seq = OutPort(S)
        s.err = OutPort()
        s.abandon = OutPort()

        s.f_data = Wire(P)
        s.f_idx = Wire(I)
        s.f_seq = Wire(S)
        s.f_data //= s.in_flit[slice(*fields["data"])]
        s.f_idx //= s.in_flit[slice(*fields["idx"])]
        s.f_seq //= s.in_flit[slice(*fields["seq"])]
        if cfg.crc:
            s.out_crc = OutPort(32)
            s.out_crc //= s.in_flit[slice(*fields["crc"])]

        s.pad_ok = Wire()  # the last flit's padding is zero
        if LASTW < P:
            @update
            def up_pad():
                s.pad_ok @= s.f_data[LASTW:P] == 0
        else:
            s.pad_ok //= 1

        if F == 1:
            s.out_msg //= s.f_data[0:M]
            s.out_seq //= s.f_seq

            @update
            def up_des1():
                s.out_val @= s.in_val & (s.f_idx == 0) & s.pad_ok
                s.err @= s.in_val & ~((s.f_idx == 0) & s.pad_ok)
            s.abandon //= 0
            return

        LASTK = Bits(I, F - 1)
        IT = mk_bits(I)
        s.in_frame = Wire()
        s.k = Wire(I)
        s.fseq = Wire(S)
        s.store = Wire(RW)
        s.first = Wire()
        s.cont = Wire()
        s.last = Wire()
        s.out_seq //= s.fseq

        @update
        def up_des():
            s.first @= s.in_val & (s.f_idx == 0)
            s.cont @= s.in_val & s.in_frame & (s.f_idx == s.k) & (s.f_seq == s.fseq)
            s.last @= s.cont & (s.k == LASTK)
            s.abandon @= s.first & s.in_frame
            s.err @= (s.in_val & ~s.first & ~s.cont) | (s.last & ~s.pad_ok)
            s.out_val @= s.last & s.pad_ok
            s.out_msg @= concat(s.f_data[0:LASTW], s.store)

        if F == 2:
            @update_ff
            def up_store2():
                if s.first | (s.cont & ~s.last):
                    s.store <<= s.f_data
        else:
            @update_ff
            def up_store():
                if s.first | (s.cont & ~s.last):
                    s.store <<= concat(s.f_data, s.store[P:RW])

        @update_ff
        def up_frame():
            if s.reset:
                s.in_frame <<= 0
                s.k <<= 0
            elif s.first:
                s.in_frame <<= 1
                s.k <<= 1
            elif s.cont:
                if s.last:
                    s.in_frame <<= 0
                else:
                    s.k <<= s.k + IT(1)
            elif s.in_val:
                s.in_frame <<= 0
            if s.first:
                s.fseq <<= s.f_seq

    def line_trace(s):
        if not s.in_val:
            return " " * 6
        tag = "!" if s.err else ("F" if s.out_val else ("a" if s.abandon else "<"))
        return f"{tag}{int(s.f_seq):>2}.{int(s.f_idx):<2}"
