"""The primitive sequences code-generation passes emit: node-program instructions
(:mod:`pymtl_fp.cluster.isa`) for LOADs, STOREs, copies, relayouts, compute commands, bias
updates, link pass-through, marks, and the host's side-channel data.

:class:`Emitter` keeps, besides the instruction list, what the rest of the system needs to
know about the program: the values the host streams to the node (``host_in``: initial weights,
in program order), the keys of what the node streams back (``host_out``: ``(key, elements)`` in
program order), the gather tables of its relayouts, the scratch FIFO's peak occupancy (the
router's ``scratch_depth`` must hold it), and per-step model figures (compute and stream I/O
cycles from the engine's timing model, useful MACs, elements per link).
"""

from __future__ import annotations

import contextlib

from pymtl_fp import timing
from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.buffers import BUF_ID
from pymtl_fp.cluster.compiler.dma import elems, relayout_indices
from pymtl_fp.cluster.compiler.program import Relayout
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.cost.latency import UNIT_OVERHEAD, router_unit_latency
from pymtl_fp.engine import encoding, msgs, program
from pymtl_fp.engine.msgs import tiles

SRC = {"fwd_in": isa.SRC_FWD_IN, "bwd_in": isa.SRC_BWD_IN, "scratch": isa.SRC_SCRATCH, "host": isa.SRC_HOST}
DST = {"fwd_out": isa.DST_FWD_OUT, "bwd_out": isa.DST_BWD_OUT, "scratch": isa.DST_SCRATCH}
LINKS = ("fwd_in", "bwd_in", "fwd_out", "bwd_out")

def _dsts(dst) -> tuple:
    """A stream's destination names (``dst``: one name or a tuple) and their ``dmask``."""
    dsts = dst if isinstance(dst, tuple) else (dst,)
    return dsts, sum(DST[d] for d in dsts)


class Emitter:
    """The instruction list of one node's program and the primitive sequences that append to it
    (``node``: the :class:`~pymtl_fp.cluster.compiler.geometry.NodeSpec`; ``prog``: the program whose
    ``ops`` it builds; ``alloc``: the buffer plan; ``ovl``: commands may overlap).  Its state: the
    marks waiting for an instruction, the scratch FIFO's occupancy, the gather tables, whether
    per-step figures are counted (``counting``), the ``phase`` and ``layer`` compute commands are
    counted and named under, the step loop (``in_loop``, ``loop_start``) and the tags of
    instructions that move a layer kept by a neighbour."""

    def __init__(self, node, prog, alloc, ovl):
        self.node, self.prog, self.alloc, self.ovl = node, prog, alloc, ovl
        self.P, self.j, self.ecfg = node.P, node.j, node.ecfg
        self.ops = prog.ops
        self.pend_mark = 0
        self.pend_done = 0
        self.scratch = 0       # elements the scratch FIFO holds once every move so far is done
        self.scratch_peak = 0
        self.tables = {}       # (kind, shape, pa, pb) -> (tbase, tlen)
        self.counting = True
        self.phase = "init"
        self.layer = ""        # the layer compute commands are named by (the trace's notes)
        self.in_loop = False
        self.loop_start = 0
        self.link = {}
        #: id(instruction) -> what it moves for a layer kept by a neighbour (a weight chunk or a
        #: gradient tile, :mod:`~pymtl_fp.cluster.compiler.weights_home`); the instructions being emitted get
        #: ``link_tag`` (None: untagged)
        self.op_tags = {}
        self.link_tag = None

    # ---- instructions with their marks -------------------------------------------------------
    def emit(self, ins: isa.Instr) -> None:
        if self.pend_mark or self.pend_done:
            ins = ins.with_(mark=self.pend_mark, done=self.pend_done)
            self.pend_mark = self.pend_done = 0
        self.ops.append(ins)
        if self.link_tag is not None:
            self.op_tags[id(ins)] = self.link_tag

    @contextlib.contextmanager
    def tagged(self, tag):
        """The instructions emitted inside get ``tag`` (:attr:`op_tags`)."""
        self.link_tag = tag
        try:
            yield
        finally:
            self.link_tag = None

    def mark(self, mid: int) -> None:
        """A mark on the next instruction (a NOP carries a previous one that found none)."""
        if self.pend_mark:
            self.emit(isa.Instr(isa.NOP))
        self.pend_mark = mid

    def done_mark(self, did: int) -> None:
        if self.pend_done:
            self.emit(isa.Instr(isa.NOP))
        self.pend_done = did

    def flush_marks(self) -> None:
        if self.pend_mark or self.pend_done:
            self.emit(isa.Instr(isa.NOP))

    def _scratch(self, delta: int, peak: int | None = None) -> None:
        self.scratch += delta
        self.scratch_peak = max(self.scratch_peak, self.scratch, peak or 0)
        if self.scratch < 0:
            raise ClusterError(f"node {self.j}: compiled a LOAD of more elements than the scratch FIFO holds")

    def count_io(self, n):
        if self.counting:
            self.prog.io_cycles += n

    def count_link(self, port, n):
        if self.counting and port in LINKS:
            self.link[port] = self.link.get(port, 0) + n

    # ---- primitive sequences -----------------------------------------------------------------
    def load(self, buf, addr, n, src):
        """LOAD ``n`` elements from ``src`` (``fwd_in``, ``bwd_in``, ``scratch`` or ``host``)."""
        self.emit(isa.load(SRC[src], target=BUF_ID[buf], addr=addr, count=n, ovl=self.ovl))
        self.count_io(timing.load_cycles(n, self.ecfg.stream_lanes))
        self.count_link(src, n)
        if src == "scratch":
            self._scratch(-n)

    def store(self, buf, addr, n, dst):
        """STORE ``n`` elements to ``dst``: ``fwd_out``, ``bwd_out``, ``scratch``, ``("host", key)``
        or a tuple of some of them (each gets every element)."""
        if buf == "O":  # O holds one result (two with overlap) at a time: its size is what is read back
            self.alloc.top["O"] = max(self.alloc.top["O"], addr + -(-n // self.P))
        dsts = dst if isinstance(dst, tuple) and dst[0] != "host" else (dst,)
        mask = 0
        for d in dsts:
            if isinstance(d, tuple):  # ("host", key)
                mask |= isa.DST_HOST
                self.prog.host_out.append((d[1], n))
            else:
                mask |= DST[d]
                self.count_link(d, n)
                if d == "scratch":
                    self._scratch(n)
        self.emit(isa.store(mask, target=BUF_ID[buf], addr=addr, count=n, ovl=self.ovl))
        self.count_io(timing.store_cycles(n, self.P * self.P if buf in ("W", "G") else self.P, self.ecfg.stream_lanes))

    def copy(self, sbuf, saddr, dbuf, daddr, n, also=None):
        """Copy through the DMA's scratch FIFO; ``also``: a link the elements are sent on too."""
        self.store(sbuf, saddr, n, ("scratch", also) if also else "scratch")
        self.load(dbuf, daddr, n, "scratch")

    def host_load(self, buf, addr, values):
        """LOAD ``values`` from the host side channel (the host streams them in program order); a
        count beyond the command's field is refused before the values are listed."""
        self.load(buf, addr, len(values), "host")
        self.prog.host_in.extend(int(v) for v in values)

    def move(self, src, dst, n):
        """Pass ``n`` elements from a link input to a link output and/or the scratch FIFO (``dst``:
        a name or a tuple of names): the board forwards them, keeping a copy."""
        dsts, mask = _dsts(dst)
        self.emit(isa.move(SRC[src], mask, n))
        self.count_link(src, n)
        for d in dsts:
            self.count_link(d, n)
            if d == "scratch":
                self._scratch(n)

    def reduce(self, src, dst, n):
        """An all-reduce hop: ``n`` elements of link input ``src`` plus the scratch FIFO's head, to
        ``dst`` (a link output and/or the scratch FIFO's tail)."""
        dsts, mask = _dsts(dst)
        self.emit(isa.reduce_(SRC[src], mask, n))
        self.count_link(src, n)
        for d in dsts:
            self.count_link(d, n)
        self._scratch(n * ("scratch" in dsts) - n, peak=self.scratch)
        self.count_io(timing.stream_beats(n, self.ecfg.stream_lanes))

    def relay(self, n):
        """An all-reduce's middle member: ``n`` elements of fwd_in plus the scratch FIFO's head to
        fwd_out, and ``n`` of bwd_in to bwd_out and the scratch FIFO's tail, at once."""
        self.emit(isa.relay(n))
        for port in ("fwd_in", "fwd_out", "bwd_in", "bwd_out"):
            self.count_link(port, n)
        self.count_io(timing.stream_beats(n, self.ecfg.stream_lanes))

    def requant(self, n, layout, shape, shift, stoch, seed, tid, bits):
        """The router's requantizer over the scratch FIFO's ``n`` un-rounded sums (``layout``: G or
        B, the tensor ``shape``)."""
        self.emit(isa.requant(n, layout, shape, self.P, shift, stoch, seed, tid, bits).with_(seedstep=int(self.in_loop)))
        self.count_io(n + UNIT_OVERHEAD + router_unit_latency(self.ecfg))  # (the node's router's units)
        self._scratch(0, peak=self.scratch + n)  # (the unit appends its n results before it drops its input)

    def residual(self, ins):
        """An ADD, MASK, GAP or GAPB of the router's residual unit
        (:mod:`~pymtl_fp.cluster.isa.residual`) over what the scratch FIFO holds: exactly its
        operands (the STOREs just before it), replaced by its result, which the next LOAD takes."""
        from pymtl_fp.cluster.isa import residual

        n_in = residual.inputs(ins)
        n_out = ins.count // residual.push_every(ins)
        if self.scratch != n_in:  # (a compiler bug: the unit would read other elements)
            raise ClusterError(f"node {self.j}: a residual instruction ({ins.describe()}) finds {self.scratch} "
                               f"elements in the scratch FIFO, not its {n_in} operands")
        self.emit(ins.with_(seedstep=int(self.in_loop)))
        self.count_io(ins.count + UNIT_OVERHEAD + router_unit_latency(self.ecfg))
        self._scratch(n_out - n_in, peak=self.scratch + n_out)  # (results appended before the operands drop)
        return n_out

    def load_from(self, buf, addr, src, shape, kind="act"):
        """LOAD a tensor of ``shape`` (activations ``(1, C, H, W)``, weights ``(K, C, R, S)``)
        arriving on link ``src`` into ``buf`` at ``addr`` in this node's layout; when the
        producer's ``P`` differs, staged raw in O, streamed to the scratch FIFO, gathered into this
        node's layout by the GATHER unit (:mod:`pymtl_fp.cluster.compiler.dma`) and LOADed from there."""
        pa, pb = self.node.src_P(src), self.P
        n_b = elems(kind, shape, pb)
        if pa == pb:
            self.load(buf, addr, n_b, src)
            return
        n_a = elems(kind, shape, pa)
        stage = self.alloc.get("O", f"stage:{kind}{tuple(shape)}", tiles(n_a, pb))
        self.load("O", stage, n_a, src)
        self.store("O", stage, n_a, "scratch")
        key = (kind, tuple(int(v) for v in shape), pa, pb)
        if key not in self.tables:
            words = [isa.run_word(*r) for r in isa.runs(relayout_indices(kind, shape, pa, pb))]
            self.tables[key] = (len(self.prog.table), len(words))
            self.prog.table.extend(words)
        tbase, tlen = self.tables[key]
        self.emit(isa.gather(n_a, tbase, tlen))
        self.prog.relayouts.append(Relayout(*key))
        self._scratch(n_b - n_a, peak=self.scratch + n_b)
        self.load(buf, addr, n_b, "scratch")

    def command_cycles(self, full: dict) -> int:
        """The engine's modelled cycles for the compute command of fields ``full`` (every field)."""
        return program.command_cycles(self.P, full, drain_rows=self.ecfg.drain_rows, wb_latency=self.ecfg.wb_latency)

    def compute(self, op, macs=0, packed=False, **fields):
        """A compute command; its rounding seed is relative to the step (``seedstep``) in the
        step loop.  ``macs``: its useful MACs; ``packed``: a tap-packed layer's (whose fields
        count the padding zeros of the packed input too: the energy model takes ``macs``)."""
        try:  # (the products count the plane rows hp / hop of maps kept in planes, where given)
            f = encoding.products(dict(encoding.whole_map(op, fields), op=msgs.OPS[op], ovl=self.ovl))
            full = {name: int(f.get(name, 0)) for name, _ in msgs.CMD_FIELDS}
            msgs.check_cmd(full, self.ecfg)
        except ValueError as e:  # a compiler bug, not the user's: say where
            raise ClusterError(f"node {self.j}: compiled an invalid {op} command: {e}") from e
        ins = isa.eng(**f).with_(seedstep=int(self.in_loop))
        cycles = self.command_cycles(full)
        self.prog.longest_command = max(self.prog.longest_command, cycles)
        self.prog.notes[len(self.ops)] = self.layer
        if packed:
            self.prog.useful_macs[len(self.ops)] = macs
        self.emit(ins)
        if self.counting:
            self.prog.compute_cycles += cycles
            self.prog.phase_compute[self.phase] = self.prog.phase_compute.get(self.phase, 0) + cycles
            self.prog.macs += macs

    def bias_update(self, n, k, shift, stoch, seed, tid, bits):
        """The scalar unit's bias SGD on ``[b, db]`` in the scratch FIFO (``n`` elements each)."""
        if not -63 <= shift <= 63:
            raise ClusterError(f"node {self.j}: the bias-update shift {shift} is outside -63..63")
        self.emit(isa.bias(n, k, shift, stoch, seed, tid, bits).with_(seedstep=int(self.in_loop)))
        self._scratch(-n, peak=self.scratch + n)
