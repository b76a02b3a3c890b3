"""Read port of one engine buffer (RTL, combinational): the storer's while it streams that
buffer, else the compute unit's.

The buffers are not split between units: buffer ``buf`` (a :data:`pymtl_fp.engine.msgs` buffer
id) drives ``raddr``/``ren`` from ST (``st_addr``, ``st_rd``) while ST is busy with target
``buf``, otherwise from EX (``ex_addr``, ``ex_ren``).  The acceptance rule
(:class:`EngineAcceptRTL`) never lets both read one buffer at the same time.
"""

from pymtl3 import Component, InPort, OutPort, update

from pymtl_fp.engine import msgs


class EngineReadPortRTL(Component):
    def construct(s, buf=0, addr_bits=8):
        s.params = dict(buf=buf, addr_bits=addr_bits)
        s.buf_id = buf
        BUF = buf
        s.st_busy = InPort()
        s.st_tgt = InPort(3)
        s.st_rd = InPort()
        s.st_addr = InPort(addr_bits)
        s.ex_ren = InPort()
        s.ex_addr = InPort(addr_bits)
        s.raddr = OutPort(addr_bits)
        s.ren = OutPort()

        @update
        def up_read_port():
            if s.st_busy & (s.st_tgt == BUF):
                s.raddr @= s.st_addr
                s.ren @= s.st_rd
            else:
                s.raddr @= s.ex_addr
                s.ren @= s.ex_ren

    def line_trace(s):
        who = "S" if (s.st_busy and int(s.st_tgt) == s.buf_id) else "X"
        return f"{msgs.BUF_NAMES[s.buf_id]}:{who}{'R' if s.ren else ' '}{int(s.raddr):>4}"
