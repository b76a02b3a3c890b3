"""The link's CRC-32 against an independent implementation (zlib.crc32): the bit-serial
reference, the parallel matrix form, the CrcRTL hardware (PyMTL3 simulation), and the CRC field
the RTL link actually puts on the wire."""

import zlib

from hypothesis import given
from hypothesis import strategies as st
from pymtl3 import Bits, Component, DefaultPassGroup, mk_bits

from pymtl_fp.link import LinkConfig, LinkRTL
from pymtl_fp.link.crc import crc32_bits, crc32_by_matrix, link_crc
from pymtl_fp.link.CrcRTL import CrcRTL
from pymtl_fp.tb.stream import StallSink, StallSource


def zlib_crc(value, nbits):
    return zlib.crc32(value.to_bytes((nbits + 7) // 8, "little"))


def test_known_vector():
    # the classic check value of CRC-32/ISO-HDLC: crc32(b"123456789") = 0xCBF43926
    word = int.from_bytes(b"123456789", "little")
    assert crc32_bits(word, 72) == 0xCBF43926 == crc32_by_matrix(word, 72)


@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, 2**n - 1))))
def test_reference_and_matrix_match_zlib(nv):
    n, v = nv
    assert crc32_bits(v, n) == zlib_crc(v, n) == crc32_by_matrix(v, n)


def test_crc_rtl_matches_zlib():
    for n in (1, 9, 32, 45, 130):
        dut = CrcRTL(n)
        dut.elaborate()
        dut.apply(DefaultPassGroup())
        dut.sim_reset()
        import random
        rng = random.Random(n)
        for v in [0, 2**n - 1] + [rng.getrandbits(n) for _ in range(40)]:
            dut.in_ @= Bits(n, v)
            dut.sim_eval_combinational()
            assert int(dut.out) == zlib_crc(v, n), (n, hex(v))


class _Tap(Component):
    def construct(s, cfg, msgs):
        T = mk_bits(cfg.msg_bits)
        s.src = StallSource(T, [T(m) for m in msgs])
        s.dut = LinkRTL(T, cfg)
        s.sink = StallSink(T, len(msgs))
        s.src.send //= s.dut.recv
        s.dut.send //= s.sink.recv


def test_crc_on_the_wire_is_zlib_crc32_of_seq_and_message():
    cfg = LinkConfig(msg_bits=40, phit_bits=16, latency=2, credit_latency=2, credits=4)
    msgs = [(0x1234567890 * (i + 1)) % 2**40 for i in range(12)]
    top = _Tap(cfg, msgs)
    top.elaborate()
    top.apply(DefaultPassGroup())
    top.sim_reset()
    f = cfg.flit_fields()
    frames = []
    for _ in range(200):
        if top.dut.chan.in_val:
            flit = int(top.dut.chan.in_msg)
            fld = {k: (flit >> lo) & ((1 << (hi - lo)) - 1) for k, (lo, hi) in f.items()}
            if fld["idx"] == cfg.flits - 1:
                frames.append((fld["seq"], fld["crc"]))
        top.sim_tick()
        if top.sink.done():
            break
    assert len(frames) == len(msgs)
    for i, (seq, crc) in enumerate(frames):
        word = (seq << cfg.msg_bits) | msgs[i]
        assert seq == i % (2 * cfg.window)
        assert crc == zlib_crc(word, cfg.msg_bits + cfg.seq_bits)
        assert crc == link_crc(msgs[i], seq, cfg.msg_bits, cfg.seq_bits)
