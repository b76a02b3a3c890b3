"""B's compute-side ports with accumulation (RTL): a raw ``bwd_weight`` with the command field
``acc`` adds its un-rounded ``dw`` and ``db`` rows to the ones already in B.

Without ``acc`` the unit passes the write-back's B write request (:class:`EngineWritebackRTL`) and
EX's B read request (the step's address, a ``fwd`` bias) straight through.  With ``acc`` (while EX
runs such a command) a write-back request to B becomes a read of that word; the row and its
address wait one cycle in a register (``hold``), and the next cycle writes the row plus the word
read (wrapping at the accumulator width).  The raw drain writes one row a cycle to distinct words,
so a read never meets a pending write of the same word, and EX stays busy while a write is held
(:class:`EngineComputeCtrlRTL`'s ``acc_hold``): such a command takes one cycle more than without
``acc``.  The command's B ranges (:func:`pymtl_fp.engine.msgs.access_ranges`) include the read, so
no other unit uses B's read port meanwhile.
"""

from pymtl3 import Component, InPort, OutPort, Wire, update, update_ff

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type


class EngineRawAccRTL(Component):
    def construct(s, P=2, acc_bits=32, addr_bits=4):
        s.params = dict(P=P, acc_bits=acc_bits, addr_bits=addr_bits)
        AB, A = acc_bits, addr_bits
        OP_BWD_WEIGHT = msgs.OP_BWD_WEIGHT

        s.cmd = InPort(cmd_type())  # EX's command register
        s.ex_busy = InPort()
        # the write-back's B write request and EX's B read request
        s.wb_we, s.wb_addr = InPort(), InPort(A)
        s.wb_wen = [InPort() for _ in range(P)]
        s.wb_wdata = [InPort(AB) for _ in range(P)]
        s.ex_ren, s.ex_addr = InPort(), InPort(A)
        s.rdata = [InPort(AB) for _ in range(P)]  # B's read data (a cycle after the read)
        # B's compute-side write and read requests
        s.b_we, s.b_addr = OutPort(), OutPort(A)
        s.b_wen = [OutPort() for _ in range(P)]
        s.b_wdata = [OutPort(AB) for _ in range(P)]
        s.b_ren, s.b_raddr = OutPort(), OutPort(A)
        s.hold = OutPort()  # a row waits for its word: EX is not done

        s.on = Wire()
        s.h_addr = Wire(A)
        s.h_data = [Wire(AB) for _ in range(P)]

        @update
        def up_raw_acc_on():
            s.on @= (s.cmd.op == OP_BWD_WEIGHT) & s.cmd.raw & s.cmd.acc & s.ex_busy

        @update
        def up_raw_acc_ports():
            if s.on:
                s.b_ren @= s.wb_we
                s.b_raddr @= s.wb_addr
                s.b_we @= s.hold
                s.b_addr @= s.h_addr
                for i in range(P):
                    s.b_wen[i] @= s.hold
                    s.b_wdata[i] @= s.h_data[i] + s.rdata[i]
            else:
                s.b_ren @= s.ex_ren
                s.b_raddr @= s.ex_addr
                s.b_we @= s.wb_we
                s.b_addr @= s.wb_addr
                for i in range(P):
                    s.b_wen[i] @= s.wb_wen[i]
                    s.b_wdata[i] @= s.wb_wdata[i]

        @update_ff
        def up_raw_acc_hold():
            if s.reset:
                s.hold <<= 0
            else:
                s.hold <<= s.on & s.wb_we
            s.h_addr <<= s.wb_addr
            for i in range(P):
                s.h_data[i] <<= s.wb_wdata[i]

    def line_trace(s):
        return f"acc{'H' if s.hold else '.'}{int(s.h_addr) if s.hold else ''}"
