"""The direct-scheduler protocol (:mod:`pymtl_fp.direct`) of the cycle-level router
(:class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`): the same edge and outputs its PyMTL3 ``update_ff``
block runs, read from and written to the scheduler's channels, and the quiet spans the scheduler may skip
(a timed FL compute wait, or nothing moving at all).
"""

from __future__ import annotations

from pymtl_fp.cluster import isa
from pymtl_fp.direct import QUIET_FOREVER


class RouterDirectCL:
    """The direct protocol, mixed into :class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`."""

    DIRECT_PORTS = (("cmd", "send"), ("din", "send"), ("dout", "recv"), ("busy", "in"), ("fwd_in", "recv"),
                    ("bwd_in", "recv"), ("host_in", "recv"), ("fwd_out", "send"), ("bwd_out", "send"),
                    ("host_out", "send"))

    def direct_bind(s, ch):
        s._dc = tuple(ch[n] for n in ("cmd", "din", "dout", "fwd_in", "bwd_in", "host_in", "fwd_out", "bwd_out",
                                       "host_out"))
        s._dbusy = ch["busy"]

    def direct_reset(s):
        s._reset_state()
        s._direct_write(s._outputs(in_reset=True))

    def direct_edge(s):
        chs = s._dc
        dout, fin, bin_, hin = chs[2], chs[3], chs[4], chs[5]
        s._edge(tuple(bool(c.val and c.rdy) for c in chs), dout.msg, (fin.msg, bin_.msg, hin.msg),
                bool(s._dbusy.value))

    def direct_drive(s):
        s._direct_write(s._outputs())

    def _direct_write(s, o):
        cmd_val, cmd_msg, din, outs, dout_rdy, rdy, _ = o
        cmd, din_ch, dout, fin, bin_, hin, fout, bout, hout = s._dc
        cmd.val = cmd_val
        if cmd_val:
            cmd.msg = cmd_msg
        din_ch.val, din_ch.msg = din
        fout.val, fout.msg = outs[0]
        bout.val, bout.msg = outs[1]
        hout.val, hout.msg = outs[2]
        dout.rdy = dout_rdy
        fin.rdy, bin_.rdy, hin.rdy = rdy

    def direct_quiet(s):
        """Quiet while nothing moves and only a timed (FL) compute wait counts down (or nothing
        at all): no fresh instruction, no pending done mark ready, no scalar unit, no scratch
        feed, no handshake, no random stall, the engine's busy as last seen."""
        if (s.stall_gen is not None or s.fresh or s.unit_left or s.q_io or s.q_compute or s.q_unit
                or bool(s._dbusy.value) != s.q_busy):
            return 0
        for c in s._dc:
            if c.val and c.rdy:
                return 0
        if s.pending and s.n_feed_done >= s.pending[0][1] and s.n_drain_done >= s.pending[0][2]:
            return 0
        if s._kind() in isa.UNIT_KINDS + (isa.NOP,):
            return 0
        if s._scratch_beat_ready(len(s.skid)):
            return 0
        if s._state() != s.state:
            return 0
        return s.wait - 1 if s.wait > 0 else QUIET_FOREVER

    def direct_skip(s, n):
        s.cycle += n
        s.stats[s.state] += n
        if s.wait > 0:
            s.wait -= n
