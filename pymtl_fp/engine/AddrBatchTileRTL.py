"""Batch-parallel tile bookkeeping (RTL) of :class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`.

A batch-parallel ``fwd`` (command field ``bp``) walks ``nt, kt, oh, ow | c, r, s``: its tile is
``P`` images (the array's columns) x ``P`` output channels (its rows) of one output pixel, and
its inner loop runs over every input channel ``c``.  This unit keeps, beside the counters:

* ``col = c % P``, the column of the weight word that holds channel ``c`` (a register that counts
  with loop level 4 and wraps at ``P``: no divider), and ``cl_last``, whether ``c`` is the last
  channel of its weight word (the weight address then moves on by ``r*s`` words);
* ``nlanes`` / ``nrows``, the real images and output channels of the current tile,
  ``min(P, n - nt*P)`` and ``min(P, k - kt*P)``: the write-back masks the rest.  ``nt*P`` and
  ``kt*P`` are registers that count up by ``P`` with loop levels 0 and 1 (no multiplier).

Combinational outputs of registers; no cycle of its own.
"""

from pymtl3 import Bits16, Component, InPort, OutPort, Wire, update, update_ff

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type


class AddrBatchTileRTL(Component):
    def construct(s, P=2):
        s.params = dict(P=P)
        Z16, ONE16, PM1, LP = Bits16(0), Bits16(1), Bits16(P - 1), Bits16(P)
        OP_FWD = msgs.OP_FWD

        s.cmd = InPort(cmd_type())
        # the address generator's step: start, advance, running; every level restarts (all_at);
        # levels 0, 1 and 4 count up (carry) and are at their limits (at)
        s.start, s.advance, s.running, s.all_at = InPort(), InPort(), InPort(), InPort()
        s.carry0, s.at0, s.carry1, s.at1, s.carry4, s.at4 = (InPort() for _ in range(6))
        s.bp = OutPort()  # the command is a batch-parallel fwd
        s.col = OutPort(8)
        s.cl_last = OutPort()
        s.nlanes, s.nrows = OutPort(16), OutPort(16)
        s.cl = Wire(16)
        s.n0, s.k0 = Wire(16), Wire(16)  # the tile's first image nt*P and output channel kt*P
        s.n_left, s.k_left = Wire(16), Wire(16)

        @update
        def up_batch_tile():
            s.bp @= (s.cmd.op == OP_FWD) & s.cmd.bp
            s.col @= s.cl[0:8]
            s.cl_last @= s.cl == PM1
            s.n_left @= s.cmd.n - s.n0
            s.k_left @= s.cmd.k - s.k0
            s.nlanes @= LP
            s.nrows @= LP
            if s.n_left < LP:
                s.nlanes @= s.n_left
            if s.k_left < LP:
                s.nrows @= s.k_left

        @update_ff
        def up_tile_counters():
            # cl = c % P: 0 where level 4 restarts, + 1 (wrapping at P) where it counts up; n0 and
            # k0: 0 where levels 0 and 1 restart, + P where they count up
            if s.reset | s.start | (s.advance & s.running & s.all_at):
                s.cl <<= Z16
                s.n0 <<= Z16
                s.k0 <<= Z16
            elif s.advance & s.running:
                if s.carry4 & s.at4:
                    s.cl <<= Z16
                elif s.carry4:
                    if s.cl == PM1:
                        s.cl <<= Z16
                    else:
                        s.cl <<= s.cl + ONE16
                if s.carry0 & ~s.at0:
                    s.n0 <<= s.n0 + LP
                if s.carry1 & s.at1:
                    s.k0 <<= Z16
                elif s.carry1:
                    s.k0 <<= s.k0 + LP

    def line_trace(s):
        return f"bt[c%P={int(s.cl)} {int(s.nlanes)}x{int(s.nrows)}]" if s.bp else "bt[.]"
