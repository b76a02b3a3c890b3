"""Write port of one engine buffer (RTL, combinational): the compute unit's when it writes that
buffer this cycle, else the loader's.

Buffer ``buf`` (a :data:`pymtl_fp.engine.msgs` buffer id, ``lanes`` lanes of ``width`` bits)
takes EX's whole write (``ex_addr``, every lane's ``ex_wen``/``ex_wdata``) in a cycle with
``ex_we``; otherwise LD's: in a cycle with ``ld_we`` and target ``buf``, element ``ld_data`` to
word ``ld_addr``, lane ``ld_lane`` (the other lanes keep their contents).  The acceptance rule
(:class:`EngineAcceptRTL`) never lets LD and EX write one buffer at the same time.
"""

from pymtl3 import Component, InPort, OutPort, update

from pymtl_fp.engine import msgs


class EngineWritePortRTL(Component):
    def construct(s, buf=0, lanes=2, width=8, addr_bits=8):
        s.params = dict(buf=buf, lanes=lanes, width=width, addr_bits=addr_bits)
        s.buf_id = buf
        s.lanes = lanes
        BUF = buf
        s.ld_we = InPort()
        s.ld_tgt = InPort(3)
        s.ld_addr = InPort(addr_bits)
        s.ld_lane = InPort(16)
        s.ld_data = InPort(width)
        s.ex_we = InPort()
        s.ex_addr = InPort(addr_bits)
        s.ex_wen = [InPort() for _ in range(lanes)]
        s.ex_wdata = [InPort(width) for _ in range(lanes)]
        s.waddr = OutPort(addr_bits)
        s.wen = [OutPort() for _ in range(lanes)]
        s.wdata = [OutPort(width) for _ in range(lanes)]

        @update
        def up_write_port():
            if s.ex_we:
                s.waddr @= s.ex_addr
                for i in range(lanes):
                    s.wen[i] @= s.ex_wen[i]
                    s.wdata[i] @= s.ex_wdata[i]
            else:
                s.waddr @= s.ld_addr
                for i in range(lanes):
                    s.wen[i] @= s.ld_we & (s.ld_tgt == BUF) & (s.ld_lane == i)
                    s.wdata[i] @= s.ld_data

    def line_trace(s):
        lanes = "".join("w" if s.wen[i] else "." for i in range(s.lanes))
        return f"{msgs.BUF_NAMES[s.buf_id]}:{'X' if s.ex_we else 'L'}{int(s.waddr):>4}[{lanes}]"
