"""The router's program memory and gather table (RTL), written through the program bus while reset
is high and read by the sequencer and the gather unit (``t_addr`` -> ``t_data``, combinational).

The sequencer reads the program either combinationally (``pc``, its low address bits, -> ``ins``) or,
with ``fetch`` (the router's instruction register, ``RouterConfig.pipelined_seq``), synchronously: at a
rising edge where ``ren`` is high, ``rdata`` takes the instruction at ``raddr`` (as it was before the
edge) and holds it until the next such edge -- a block RAM's read port, whose output the sequencer
registers before decoding it.

Program bus: ``prog_we``, ``prog_sel`` (0 = program, 1 = table), ``prog_addr``, ``prog_data`` (an
instruction of :func:`~pymtl_fp.cluster.isa.instr_type`) / ``tab_data`` (a table word); writes
beyond a memory are ignored (the loader checks program sizes beforehand).  Elaboration
parameters: ``prog_depth`` (instructions), ``table_depth`` (table entries), ``fetch`` (the synchronous read port).
"""

from pymtl3 import Bits17, Component, InPort, OutPort, Wire, mk_bits, trunc, update, update_ff, zext

from pymtl_fp.cluster import isa


class RouterProgMemRTL(Component):
    def construct(s, prog_depth=1024, table_depth=256, fetch=False):
        InstrT = isa.instr_type()
        PA = max(1, (prog_depth - 1).bit_length())
        PAT = mk_bits(PA)
        TAB = max(1, (table_depth - 1).bit_length())
        TABT = mk_bits(TAB)
        PD = Bits17(prog_depth)  # (17 bits: a depth of 2**16 is one past the bus's addresses)
        TD = Bits17(table_depth)
        s.params = dict(prog_depth=prog_depth, table_depth=table_depth)
        if fetch:
            s.params["fetch"] = True

        s.prog_we = InPort()
        s.prog_sel = InPort()
        s.prog_addr = InPort(16)
        s.prog_data = InPort(InstrT)
        s.tab_data = InPort(32)
        if fetch:
            s.ren = InPort()
            s.raddr = InPort(PA)
            s.rdata = OutPort(InstrT)
        else:
            s.pc = InPort(PA)
            s.ins = OutPort(InstrT)
        s.t_addr = InPort(TAB)
        s.t_data = OutPort(32)

        s.prog = [Wire(InstrT) for _ in range(prog_depth)]
        s.gtab = [Wire(32) for _ in range(table_depth)]

        @update
        def up_progmem_table():
            s.t_data @= s.gtab[s.t_addr]

        if fetch:
            @update_ff
            def up_progmem_fetch():
                if s.ren:
                    s.rdata <<= s.prog[s.raddr]
        else:
            @update
            def up_progmem_read():
                s.ins @= s.prog[s.pc]

        @update_ff
        def up_progmem_write():
            if s.prog_we & ~s.prog_sel & (zext(s.prog_addr, Bits17) < PD):
                s.prog[trunc(s.prog_addr, PAT)] <<= s.prog_data
            if s.prog_we & s.prog_sel & (zext(s.prog_addr, Bits17) < TD):
                s.gtab[trunc(s.prog_addr, TABT)] <<= s.tab_data

    def line_trace(s):
        a = s.raddr if hasattr(s, "raddr") else s.pc
        return f"{'w' if s.prog_we else ' '}{int(a)}"
