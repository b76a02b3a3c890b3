"""The host's side channels to the nodes (CL): initial weights out to each node's ``host_in``,
final weights back from its ``host_out`` (a PCIe or AXI path per board, outside the link chain).

:class:`HostSideCL` offers each node's queue of elements (the values its program LOADs from the
host, in program order) on ``to_node[j]`` whenever the queue is not empty, and takes every element
a node sends on ``from_node[j]`` at once (always ready), keeping them in ``received[j]``: the same
stream behaviour as the compiled test bench of a Verilated cluster, so cycle counts agree.  With
``lanes`` (``E``) elements per beat the queues go out, and arrive, in beats of ``E`` (every
tensor on a side channel is padded to the array side, which ``E`` divides).
"""

from __future__ import annotations

from collections import deque

from pymtl3 import Component, mk_bits, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.direct import QUIET_FOREVER
from pymtl_fp.engine.encoding import to_beats, unpack_beat


def side_beats(elements, lanes: int, bits: int) -> list:
    """Elements the host sends (images, loss gradients, a side channel's weights) as beats of
    ``lanes``, refused unless whole (every such tensor is padded to the array side)."""
    if len(elements) % lanes:
        raise ValueError(f"{len(elements)} elements are not a whole number of {lanes}-element beats")
    return to_beats(elements, lanes, bits)


class HostSideCL(Component):
    def construct(s, bits, queues, lanes=1):
        s.E = lanes
        T = mk_bits(lanes * bits)
        s.bits = bits
        s.T = T
        s.n = len(queues)
        s.queues = [side_beats(list(q), lanes, bits) for q in queues]
        s.to_node = [SendIfcRTL(T) for _ in range(s.n)]
        s.from_node = [RecvIfcRTL(T) for _ in range(s.n)]
        s._reset_state()

        @update_ff
        def up_host_side():
            if s.reset:
                s._reset_state()
            for j in range(s.n):
                if not s.reset:
                    if s.to_node[j].val & s.to_node[j].rdy:
                        s.pending[j].popleft()
                    if s.from_node[j].val & s.from_node[j].rdy:
                        s.received[j].extend(unpack_beat(int(s.from_node[j].msg), s.E, s.bits))
                q = s.pending[j]
                out = (1, q[0]) if q else (0, 0)
                if out != s.driven[j]:  # (ports written only when they change)
                    s.driven[j] = out
                    s.to_node[j].val <<= out[0]
                    s.to_node[j].msg <<= s.T(out[1])
                s.from_node[j].rdy <<= 1

    def _reset_state(s):
        s.driven = [None] * s.n
        s.pending = [deque(q) for q in s.queues]
        s.received = [[] for _ in range(s.n)]

    # ---- the direct protocol (pymtl_fp.direct) -------------------------------------------
    DIRECT_PORTS = (("to_node", "send"), ("from_node", "recv"))

    def direct_bind(s, ch):
        s._dc = [(ch[f"to_node[{j}]"], ch[f"from_node[{j}]"]) for j in range(s.n)]

    def direct_reset(s):
        s._reset_state()
        s.direct_drive()

    def direct_edge(s):
        for j, (to, frm) in enumerate(s._dc):
            if to.val and to.rdy:
                s.pending[j].popleft()
            if frm.val and frm.rdy:
                s.received[j].extend(unpack_beat(int(frm.msg), s.E, s.bits))

    def direct_drive(s):
        for j, (to, frm) in enumerate(s._dc):
            q = s.pending[j]
            to.val, to.msg = (1, q[0]) if q else (0, 0)
            frm.rdy = 1

    def direct_quiet(s):
        for to, frm in s._dc:
            if (to.val and to.rdy) or (frm.val and frm.rdy):
                return 0
        return QUIET_FOREVER

    def direct_skip(s, n):
        pass

    def line_trace(s):
        return " ".join(f"h{j}:{len(q)}" for j, q in enumerate(s.pending))
