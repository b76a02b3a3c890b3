"""The router's program memory and gather table (RTL), written through the program bus while reset
is high and read combinationally by the sequencer (``pc``, its low address bits, -> ``ins``) and the gather unit
(``t_addr`` -> ``t_data``).

Program bus: ``prog_we``, ``prog_sel`` (0 = program, 1 = table), ``prog_addr``, ``prog_data`` (an
instruction of :func:`~pymtl_fp.cluster.isa.instr_type`) / ``tab_data`` (a table word); writes
beyond a memory are ignored (the loader checks program sizes beforehand).  Elaboration
parameters: ``prog_depth`` (instructions), ``table_depth`` (table entries).
"""

from pymtl3 import Bits16, Component, InPort, OutPort, Wire, mk_bits, trunc, update, update_ff

from pymtl_fp.cluster import isa


class RouterProgMemRTL(Component):
    def construct(s, prog_depth=1024, table_depth=256):
        InstrT = isa.instr_type()
        PA = max(1, (prog_depth - 1).bit_length())
        PAT = mk_bits(PA)
        TAB = max(1, (table_depth - 1).bit_length())
        TABT = mk_bits(TAB)
        PD16 = Bits16(prog_depth)
        TD16 = Bits16(table_depth)
        s.params = dict(prog_depth=prog_depth, table_depth=table_depth)

        s.prog_we = InPort()
        s.prog_sel = InPort()
        s.prog_addr = InPort(16)
        s.prog_data = InPort(InstrT)
        s.tab_data = InPort(32)
        s.pc = InPort(PA)
        s.ins = OutPort(InstrT)
        s.t_addr = InPort(TAB)
        s.t_data = OutPort(32)

        s.prog = [Wire(InstrT) for _ in range(prog_depth)]
        s.gtab = [Wire(32) for _ in range(table_depth)]

        @update
        def up_progmem_read():
            s.ins @= s.prog[s.pc]
            s.t_data @= s.gtab[s.t_addr]

        @update_ff
        def up_progmem_write():
            if s.prog_we & ~s.prog_sel & (s.prog_addr < PD16):
                s.prog[trunc(s.prog_addr, PAT)] <<= s.prog_data
            if s.prog_we & s.prog_sel & (s.prog_addr < TD16):
                s.gtab[trunc(s.prog_addr, TABT)] <<= s.tab_data

    def line_trace(s):
        return f"{'w' if s.prog_we else ' '}{int(s.pc)}"
