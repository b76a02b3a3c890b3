"""The streams of the cycle-level router (:class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`): what one clock
edge does with the elements that moved on ``din``, ``dout``, the link inputs and the host input, as Python
behaviour matching :class:`~pymtl_fp.cluster.hw.RouterFeedRTL.RouterFeedRTL`,
:class:`~pymtl_fp.cluster.hw.RouterDrainRTL.RouterDrainRTL` and the output buffers of
:class:`~pymtl_fp.cluster.hw.RouterRTL.RouterRTL`.

* the **feeder** (LOAD moves, in order) gives ``din`` beats from the skid FIFO (2 entries), filled from
  a link, the host or the scratch FIFO (one beat per edge);
* the **drainer** (STORE moves, in order) sends each ``dout`` beat to its destinations: link or host
  output buffers, the scratch FIFO;
* a **MOVE / REDUCE / RELAY** sends link or host input beats on to output buffers and/or the scratch
  FIFO, a REDUCE (and a RELAY's forward half) first adding the scratch FIFO's head (the adder).

A beat carries ``E = cfg.stream_lanes`` elements (lane ``j`` in bits ``[j*bits, (j+1)*bits)``); a move of
``n`` elements is ``ceil(n / E)`` beats, the last with the remaining elements.
"""

from __future__ import annotations

from pymtl_fp.cluster import isa
from pymtl_fp.engine.encoding import pack_beat, unpack_beat
from pymtl_fp.engine.msgs import from_word

#: destination bit -> output buffer (fwd_out, bwd_out, host_out)
DST_OUT = ((isa.DST_FWD_OUT, 0), (isa.DST_BWD_OUT, 1), (isa.DST_HOST, 2))


class RouterStreamsCL:
    """The streams' behaviour, mixed into :class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL` (its state:
    ``feed``, ``drain``, ``skid``, ``scratch``, ``outq``, ``moved``/``moved2``, the counters)."""

    # ---- beats ---------------------------------------------------------------------------------
    def _lanes(s, n, done) -> int:
        """Elements in the next beat of a move of ``n`` elements with ``done`` moved."""
        return min(s.E, n - done)

    def _elements(s, w, ln) -> list:
        """The first ``ln`` elements of beat ``w`` (signed)."""
        return unpack_beat(w, ln, s.bits)

    def _beat(s, elements) -> int:
        """A beat of these elements (at most E; surplus lanes zero)."""
        return pack_beat(elements, s.bits)

    def _reduce(s, w, ln) -> int:
        """The adder: beat ``w``'s first ``ln`` elements plus as many from the scratch FIFO's head
        (popped), each modulo ``2**stream_bits``; surplus lanes zero."""
        return s._beat([from_word(a + s.scratch.popleft(), s.bits) for a in s._elements(w, ln)])

    # ---- output buffers ------------------------------------------------------------------------
    def _push_out(s, dmask, w):
        for bit, i in DST_OUT:
            if dmask & bit:
                q = s.outq[i]
                q.append(w)
                if len(q) > s.outq_max[i]:
                    s.outq_max[i] = len(q)

    def _stream_room(s, dmask) -> bool:
        """Room for one more element in every output buffer of ``dmask`` (the scratch FIFO: the
        router's depth was sized for the program)."""
        return not any(dmask & bit and len(s.outq[i]) >= s.cfg.out_beats for bit, i in DST_OUT)

    def _dout_room(s) -> bool:
        return s._stream_room(s.drain[0][0])

    # ---- the handshakes of one edge --------------------------------------------------------------
    def _scratch_beat_ready(s, skid: int) -> bool:
        """The feeder's head move reads the scratch FIFO, which holds its next beat, and the skid FIFO
        (``skid`` entries) has room."""
        head = s.feed[0] if s.feed else None
        return (head is not None and head[0] == isa.SRC_SCRATCH and head[2] < head[1]
                and len(s.scratch) >= s._lanes(head[1], head[2]) and skid < 2)

    def _feed_from_scratch(s, head):
        """One beat of the feeder's head move ``head`` from the scratch FIFO into the skid FIFO."""
        ln = s._lanes(head[1], head[2])
        s.skid.append(s._beat([s.scratch.popleft() for _ in range(ln)]))
        head[2] += ln

    def _din_taken(s, cyc):
        """The engine took the skid FIFO's head: a beat of the feeder's head move."""
        s.skid.popleft()
        head = s.feed[0]
        head[3] += 1
        if head[3] == head[4]:
            s.feed.popleft()
            s.n_feed_done += 1
            if s.trace is not None:
                s.trace.append(("F", cyc))

    def _input_taken(s, src, w) -> bool:
        """Beat ``w`` taken from link or host input ``src``: the feeder's, or the current MOVE /
        REDUCE / RELAY's.  True when that instruction retires."""
        prog = s.prog
        if s.feed and s.feed[0][0] == src and s.feed[0][2] < s.feed[0][1]:
            s.skid.append(w)
            s.feed[0][2] += s._lanes(s.feed[0][1], s.feed[0][2])
        elif prog[s.pc].kind == isa.RELAY:  # the reduce forward, the broadcast back
            count = prog[s.pc].count
            if src == isa.SRC_FWD_IN:
                ln = s._lanes(count, s.moved)
                s._push_out(isa.DST_FWD_OUT, s._reduce(w, ln))
                s.moved += ln
            else:
                ln = s._lanes(count, s.moved2)
                s._push_out(isa.DST_BWD_OUT, w)
                s.scratch.extend(s._elements(w, ln))
                s.moved2 += ln
            if s.moved == s.moved2 == count:
                s.moved = s.moved2 = 0
                return True
        else:  # the current MOVE or REDUCE
            ins = prog[s.pc]
            ln = s._lanes(ins.count, s.moved)
            if ins.kind == isa.REDUCE:
                w = s._reduce(w, ln)
            s._push_out(ins.dmask, w)
            if ins.dmask & isa.DST_SCRATCH:
                s.scratch.extend(s._elements(w, ln))
            s.moved += ln
            if s.moved == ins.count:
                s.moved = 0
                return True
        return False

    def _dout_taken(s, w, cyc):
        """Beat ``w`` taken from the engine's ``dout``: to every destination of the drainer's head move."""
        head = s.drain[0]
        dm = head[0]
        ln = s._lanes(head[1], head[2])
        s._push_out(dm, w)
        if dm & isa.DST_SCRATCH:
            s.scratch.extend(s._elements(w, ln))
        head[2] += ln
        if head[2] == head[1]:
            s.drain.popleft()
            s.n_drain_done += 1
            if s.trace is not None:
                s.trace.append(("D", cyc))
