"""FPGA-to-FPGA link, cycle level: serialization, latency, credits and back-pressure, cycle by
cycle, without gate-level detail.

``LinkCL(MsgType, cfg)`` has the ports of every link level and implements, with queues and
time stamps instead of registers, exactly the fault-free cycle behaviour specified in
:mod:`pymtl_fp.link` (the same as :class:`~pymtl_fp.link.LinkRTL.LinkRTL`): every message
handshakes, leaves the serializer and arrives at the sink in the same cycle at both levels.
It has no CRC, sequence numbers or retransmission (without faults the RTL never retransmits).
"""

import copy
from collections import deque

from pymtl3 import Component, update_ff

from pymtl_fp.direct import QUIET_FOREVER
from pymtl_fp.link.LinkFL import declare_fault_free_ports
from pymtl_fp.link.status import status_dict


class LinkCL(Component):
    def construct(s, MsgType, cfg):
        declare_fault_free_ports(s, MsgType, cfg, "LinkCL")
        s.F, s.L, s.Lr, s.W = cfg.flits, cfg.latency, cfg.credit_latency, cfg.window
        W = s.W
        s.tracing = False  # record transfers (cluster/run/trace.py) from the next reset on
        s._reset_state()

        @update_ff
        def up_cl():
            if s.reset:
                s._reset_state()
                s.recv.rdy <<= 1
                s.send.val <<= 0
                return
            fire = s.recv.val & s.recv.rdy
            s._edge(fire, copy.deepcopy(s.recv.msg) if fire else None, s.send.val & s.send.rdy)
            s.recv.rdy <<= 1 if s.occupancy < W else 0
            if s.rxq:
                s.send.val <<= 1
                s.send.msg <<= s.rxq[0]
            else:
                s.send.val <<= 0

    # ---- one clock edge (shared by the PyMTL3 block and the direct scheduler) ---------------
    def _edge(s, recv_fire, msg, send_fire):
        """``msg``: the message taken at this edge (``recv_fire``), owned by the link."""
        c = s.cycle
        # serializer: may start a frame in cycle c (state at the start of c)
        if c >= s.ser_free and s.unsent and s.unsent[0][0] < c and s.credits > 0:
            _, m = s.unsent.popleft()
            s.ser_free = c + s.F
            s.credits -= 1
            s.frame_starts += 1
            s.in_flight.append((c + s.F - 1 + s.L, m))  # cycle its last flit arrives
        # handshakes of cycle c
        if recv_fire:
            s.unsent.append((c, msg))
            s.occupancy += 1
            if s.trace is not None:
                s.trace[0].append(c)
        if send_fire:
            s.rxq.popleft()
            s.credit_returns.append(c + s.Lr)
        # last flits arriving in cycle c: into the receive buffer, ACK onto the return path
        while s.in_flight and s.in_flight[0][0] == c:
            s.rxq.append(s.in_flight.popleft()[1])
            s.ack_returns.append(c + s.Lr)
            if s.trace is not None:
                s.trace[1].append(c)
        # return path arrivals in cycle c (effective from c+1)
        while s.credit_returns and s.credit_returns[0] == c:
            s.credit_returns.popleft()
            s.credits += 1
        while s.ack_returns and s.ack_returns[0] == c:
            s.ack_returns.popleft()
            s.occupancy -= 1
        s.cycle = c + 1

    # ---- the direct protocol (pymtl_fp.direct) -------------------------------------------
    DIRECT_PORTS = (("recv", "recv"), ("send", "send"))

    def direct_bind(s, ch):
        s._dc = (ch["recv"], ch["send"])

    def direct_reset(s):
        s._reset_state()
        recv, send = s._dc
        recv.rdy, send.val = 1, 0

    def direct_edge(s):
        recv, send = s._dc
        fire = recv.val and recv.rdy
        s._edge(fire, recv.msg, send.val and send.rdy)  # (direct messages are immutable ints)

    def direct_drive(s):
        recv, send = s._dc
        recv.rdy = 1 if s.occupancy < s.W else 0
        if s.rxq:
            send.val, send.msg = 1, s.rxq[0]
        else:
            send.val = 0

    def direct_quiet(s):
        recv, send = s._dc
        if (recv.val and recv.rdy) or (send.val and send.rdy):
            return 0
        nxt = QUIET_FOREVER
        if s.in_flight:
            nxt = s.in_flight[0][0]
        if s.credit_returns and s.credit_returns[0] < nxt:
            nxt = s.credit_returns[0]
        if s.ack_returns and s.ack_returns[0] < nxt:
            nxt = s.ack_returns[0]
        if s.unsent and s.credits > 0:
            nxt = min(nxt, max(s.ser_free, s.unsent[0][0] + 1))
        return QUIET_FOREVER if nxt == QUIET_FOREVER else max(0, nxt - s.cycle)

    def direct_skip(s, n):
        s.cycle += n

    def _reset_state(s):
        s.cycle = 0
        s.unsent = deque()  # (handshake cycle, message) accepted, not yet serialized
        s.occupancy = 0  # retransmission-buffer entries in use (accepted, not yet ACKed)
        s.credits = s.cfg.credits
        s.ser_free = 0  # first cycle the serializer may start a frame
        s.in_flight = deque()  # (cycle the last flit arrives, message)
        s.rxq = deque()  # receive buffer
        s.credit_returns = deque()  # cycles credits arrive back at the sender
        s.ack_returns = deque()  # cycles ACKs arrive back at the sender
        s.frame_starts = 0
        #: timeline (tracing): the cycles messages were taken, the cycles they arrived
        s.trace = ([], []) if s.tracing else None

    def stats(s) -> dict:
        return status_dict(s.status)

    def line_trace(s):
        return (f"{s.recv}>u{len(s.unsent):>2} cr{s.credits:>3} f{len(s.in_flight):>2}"
                f" q{len(s.rxq):>2}>{s.send}")
