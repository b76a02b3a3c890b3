"""FPGA-to-FPGA link, functional level: in order, after the configured latency, no bandwidth
limit.

``LinkFL(MsgType, cfg)`` has the ports of every link level (``recv`` in, ``send`` out, val/rdy).
It accepts a message every cycle (``recv.rdy`` is always high: unbounded buffering) and offers a
message accepted in cycle t on ``send`` from cycle ``t + cfg.latency`` on, in arrival order,
holding it while the sink is not ready.  Nothing is serialized, no credits, no errors: the model
of "what the link does" that the CL and RTL levels must refine (same sequence, later or equal
arrival).
"""

import copy
from collections import deque

from pymtl3 import Component, OutPort, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.link.LinkRTL import check_msg_type
from pymtl_fp.link.status import LinkStatus, status_dict


def declare_fault_free_ports(s, MsgType, cfg, who: str) -> None:
    """The link's ports (the same at every level) for a model without faults: status all zero."""
    check_msg_type(MsgType, cfg, who)
    s.cfg = cfg
    s.recv = RecvIfcRTL(MsgType)
    s.send = SendIfcRTL(MsgType)
    s.status = OutPort(LinkStatus)
    s.status //= LinkStatus()


class LinkFL(Component):
    def construct(s, MsgType, cfg):
        declare_fault_free_ports(s, MsgType, cfg, "LinkFL")
        s.queue = deque()  # (cycle it may leave, message)
        s.cycle = 0

        @update_ff
        def up_fl():
            if s.reset:
                s.queue = deque()
                s.cycle = 0
                s.recv.rdy <<= 1
                s.send.val <<= 0
                return
            c = s.cycle
            if s.recv.val & s.recv.rdy:
                s.queue.append((c + cfg.latency, copy.deepcopy(s.recv.msg)))
            if s.send.val & s.send.rdy:
                s.queue.popleft()
            s.cycle = c + 1
            s.recv.rdy <<= 1
            if s.queue and s.queue[0][0] <= c + 1:
                s.send.val <<= 1
                s.send.msg <<= s.queue[0][1]
            else:
                s.send.val <<= 0

    def stats(s) -> dict:
        return status_dict(s.status)

    def line_trace(s):
        return f"{s.recv}>({len(s.queue):>2})>{s.send}"
