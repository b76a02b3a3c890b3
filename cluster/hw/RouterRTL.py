"""The router/DMA of a node, register-transfer level (synthesizable): the sequencer, and the units
it drives -- program memory, feeder, drainer, mover, deliveries (output buffers), scratch FIFO,
scalar units, done marks and statistics.

::

    prog bus --> program memory + gather table
                      | pc
                 sequencer --cmd--> engine         fwd_in/bwd_in/host_in --> feeder --din--> engine
                      |                            engine --dout--> drainer --> out buffers --> fwd_out/
                 MOVE / REDUCE / RELAY (link [+ scratch] -> link / scratch) ----^           bwd_out/host_out
                 scalar units (BIAS, GATHER, REQUANT, ADD, MASK, GAP, GAPB) <--> scratch FIFO <--> feeder / drainer

It executes the node program ISA of :mod:`pymtl_fp.cluster.isa`, cycle for cycle as its twin
:class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL` (whose docstring gives the per-edge behaviour).  The
program and the gather table are written through the program bus (``prog_we``, ``prog_sel`` 0 =
program / 1 = table, ``prog_addr``, ``prog_data`` / ``tab_data``) while ``reset`` is high.

Status outputs (``st_*``): the state of the cycle (``st_state``, codes of
:data:`~pymtl_fp.cluster.hw.router_config.STATES`) and per-state cycle counters (``st_cnt``), a mark
(``st_mark_val``: the current instruction is fresh and has a mark; ``st_mark_id``) and a completed
done mark (``st_done_val``, ``st_done_id``), the cycle counter, the program's end
(``st_halted``: HALT reached, every move finished, every buffer drained), traffic counters and the
peak occupancy of the buffers, and ``st_error`` (a sticky overflow flag: a program the compiler
should have refused).  Elaboration parameters: :class:`~pymtl_fp.cluster.hw.router_config.RouterConfig`.

With ``pipelined_seq`` the instruction is a register (``ir``) loaded from the program memory's
synchronous read port, which always holds the instruction that follows the current one: when an
instruction retires, ``ir`` takes it and the memory reads the one after it (``fpc``: the loop's
start when that instruction ends a loop that runs again, else the next address), so the decode
starts from registers and no instruction takes a cycle more.  The memory's first two reads (address
0, then the instruction after it) happen at reset edges with the program bus idle (``bst``: 0 read
instruction 0, 1 load it, 2 running; a reset's first edge and every program write restart it); the
edges missing at the release of reset are spent before the first instruction (the current
instruction is then none: no command, no move, state ``engine``), as in
:class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`.  The output buffers then register their writes
(:class:`RouterDeliverWregRTL`), and so do the scratch FIFO's banks (``RouterScratchRTL``'s
``wreg``), so no path runs from the engine's ``dout`` into a buffer's or the scratch FIFO's memory;
their ports keep every cycle's values.

The units, each its own component: :class:`RouterProgMemRTL`, :class:`RouterFeedRTL`,
:class:`RouterDrainRTL`, :class:`RouterMoveRTL` (MOVE / REDUCE / RELAY), :class:`RouterDeliverRTL`
(output buffers, the scratch FIFO's inputs), :class:`RouterScratchRTL`, :class:`RouterUnitRTL`
(BIAS / GATHER / REQUANT; ADD / MASK / GAP / GAPB in its :class:`RouterUnitResRTL`),
:class:`RouterPendRTL` (done marks), :class:`RouterStatusRTL` (state
and counters); this file is the sequencer (decode, engine commands, retire, loops) and the wiring.
"""

from pymtl3 import (
    Bits2,
    Bits3,
    Bits4,
    Bits12,
    Bits16,
    Bits24,
    Bits32,
    Component,
    InPort,
    OutPort,
    Wire,
    connect,
    mk_bits,
    update,
    update_ff,
    zext,
)
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.router_config import STATES, RouterConfig, declare_status_ports
from pymtl_fp.cluster.hw.RouterDeliverRTL import RouterDeliverRTL, RouterDeliverWregRTL
from pymtl_fp.cluster.hw.RouterDrainRTL import RouterDrainRTL
from pymtl_fp.cluster.hw.RouterFeedRTL import RouterFeedRTL
from pymtl_fp.cluster.hw.RouterMoveRTL import RouterMoveRTL
from pymtl_fp.cluster.hw.RouterPendRTL import RouterPendRTL
from pymtl_fp.cluster.hw.RouterProgMemRTL import RouterProgMemRTL
from pymtl_fp.cluster.hw.RouterScratchRTL import RouterScratchRTL
from pymtl_fp.cluster.hw.RouterStatusRTL import RouterStatusRTL
from pymtl_fp.cluster.hw.RouterUnitRTL import RouterUnitRTL
from pymtl_fp.engine.msgs import cmd_type

K_NOP, K_ENG, K_LOAD, K_STORE, K_MOVE, K_BIAS, K_GATHER, K_HALT, K_REDUCE, K_REQUANT, K_RELAY = (Bits4(k) for k in range(11))
K_ADD, K_GAP, K_GAPB, K_MASK = (Bits4(k) for k in isa.RES_KINDS)
NPEND = 4  # done marks waiting for their moves
K_NONE = Bits4(15)  # pipelined_seq: no instruction yet (the program memory's first reads)


class RouterRTL(Component):
    def construct(s, cfg: RouterConfig):
        if not isinstance(cfg, RouterConfig):
            raise TypeError(f"RouterRTL needs a RouterConfig, got {cfg!r}")
        for f in ("scratch_depth", "out_depth"):
            v = getattr(cfg, f)
            if v & (v - 1):
                raise ValueError(f"RouterRTL: {f}={v} must be a power of two")
        s.cfg = cfg
        s.params = cfg.params()
        sb = cfg.stream_bits
        E = cfg.stream_lanes  # elements per beat on every stream
        T = mk_bits(E * sb)
        InstrT = isa.instr_type()
        PCB = isa.PC_BITS
        PCT = mk_bits(PCB)
        SCB = (cfg.scratch_depth).bit_length()  # scratch count width
        TAB = max(1, (cfg.table_depth - 1).bit_length())
        MARK0 = mk_bits(isa.MARK_BITS)(0)
        BUF_G = Bits3(isa.encoding.BUF["G"])  # REQUANT: the G layout (else B's)

        # ---- ports (the same as RouterCL's) ----------------------------------------------
        s.cmd = SendIfcRTL(cmd_type())
        s.din = SendIfcRTL(T)
        s.dout = RecvIfcRTL(T)
        s.busy = InPort()
        s.fwd_in = RecvIfcRTL(T)
        s.bwd_in = RecvIfcRTL(T)
        s.host_in = RecvIfcRTL(T)
        s.fwd_out = SendIfcRTL(T)
        s.bwd_out = SendIfcRTL(T)
        s.host_out = SendIfcRTL(T)
        s.prog_we = InPort()
        s.prog_sel = InPort()
        s.prog_addr = InPort(16)
        s.prog_data = InPort(InstrT)
        s.tab_data = InPort(32)
        declare_status_ports(s, cfg, OutPort)

        # ---- units ---------------------------------------------------------------------------
        s.mem = RouterProgMemRTL(cfg.prog_depth, cfg.table_depth, fetch=cfg.pipelined_seq)
        s.feed = RouterFeedRTL(sb, SCB, E)
        s.drain = RouterDrainRTL(sb, E)
        s.move = RouterMoveRTL(sb, SCB, E, running=cfg.pipelined_seq)
        s.dlv = (RouterDeliverWregRTL if cfg.pipelined_seq else RouterDeliverRTL)(sb, E, cfg.out_beats)
        s.scratch = RouterScratchRTL(sb, cfg.scratch_depth, E, fast=cfg.pipelined_seq, wreg=cfg.pipelined_seq)
        s.unit = RouterUnitRTL(sb, SCB, TAB, cfg.pipelined_units, cfg.residual)
        s.pend = RouterPendRTL(NPEND)
        s.stat = RouterStatusRTL()

        # ---- sequencer -------------------------------------------------------------------------
        s.ins = Wire(InstrT)
        s.pc = Wire(PCB)
        s.iter = Wire(16)
        s.fresh = Wire()
        s.kind = Wire(4)
        s.count = Wire(24)
        s.quiet = Wire()
        s.is_cmd = Wire()
        s.cmd_fire = Wire()
        s.retire = Wire()
        s.next_pc = Wire(PCB)
        s.jump = Wire()
        s.halted = Wire()
        s.seed = Wire(32)
        s.unit_start = Wire()
        s.load_issue = Wire()   # a LOAD / STORE move issued at this edge
        s.store_issue = Wire()

        _wire_units(s, E)
        if cfg.pipelined_seq:
            _fetch(s, InstrT, PCT)

        @update
        def up_seq_decode():
            s.kind @= s.ins.kind
            s.count @= s.ins.cmd.count
            s.quiet @= s.feed.idle & s.drain.idle
            s.is_cmd @= (s.kind == K_ENG) | (s.kind == K_LOAD) | (s.kind == K_STORE)
            if s.ins.seedstep:
                s.seed @= s.ins.cmd.seed + zext(s.iter, Bits32)
            else:
                s.seed @= s.ins.cmd.seed
            s.cmd.val @= s.is_cmd
            s.cmd.msg @= s.ins.cmd
            s.cmd.msg.seed @= s.seed
            s.cmd_fire @= s.cmd.val & s.cmd.rdy

        @update
        def up_seq_kind():
            s.move.stream @= (s.kind == K_MOVE) | (s.kind == K_REDUCE)
            s.move.red @= s.kind == K_REDUCE
            s.move.relay @= s.kind == K_RELAY
            s.dlv.red @= s.kind == K_REDUCE
            s.unit.is_bias @= s.kind == K_BIAS
            s.unit.is_requant @= s.kind == K_REQUANT
            s.unit.is_add @= s.kind == K_ADD
            s.unit.is_mask @= s.kind == K_MASK
            s.unit.is_gap @= s.kind == K_GAP
            s.unit.is_gapb @= s.kind == K_GAPB
            s.unit.glayout @= s.ins.cmd.target == BUF_G

        @update
        def up_seq_retire():
            s.unit_start @= (((s.kind == K_BIAS) | (s.kind == K_GATHER) | (s.kind == K_REQUANT) | (s.kind == K_ADD)
                              | (s.kind == K_MASK) | (s.kind == K_GAP) | (s.kind == K_GAPB)) & s.quiet & ~s.unit.busy
                             & ~s.reset)
            s.retire @= s.cmd_fire | s.move.mv_last | s.move.rl_done | s.unit.retire | (s.kind == K_NOP)
            s.jump @= s.ins.lend & (zext(s.iter, Bits16) + Bits16(1) < s.ins.lcount)
            if s.jump:
                s.next_pc @= s.ins.ltarget
            else:
                s.next_pc @= s.pc + PCT(1)
            s.load_issue @= s.cmd_fire & (s.kind == K_LOAD) & (s.count != Bits24(0))
            s.store_issue @= s.cmd_fire & (s.kind == K_STORE) & (s.count != Bits24(0))

        @update
        def up_seq_stat():
            s.halted @= (s.kind == K_HALT) & s.feed.idle & s.drain.idle & ~s.unit.busy & s.dlv.out_empty
            s.stat.link_wait @= (s.move.stream | s.move.relay) & s.quiet
            s.stat.eng_cmd @= s.kind == K_ENG
            s.stat.io @= (s.feed.din_fire | s.drain.deliver | s.move.in_fire[0] | s.move.in_fire[1]
                          | s.move.in_fire[2])
            s.stat.active @= (s.kind != K_HALT) | ~s.feed.idle | ~s.drain.idle
            s.pend.push @= s.fresh & (s.ins.done != Bits12(0))

        @update
        def up_seq_status():
            s.st_mark_val @= s.fresh & (s.ins.mark != MARK0)
            s.st_error @= s.pend.error | s.scratch.error | s.dlv.out_error | s.feed.error
            for i in range(3):
                s.st_out_peak[i] @= zext(s.dlv.out_peak[i], Bits32)
            s.st_scratch_peak @= zext(s.scratch.peak, Bits32)

        if not cfg.pipelined_seq:
            @update_ff
            def up_seq_regs():
                if s.reset:
                    s.pc <<= PCT(0)
                    s.iter <<= Bits16(0)
                    s.fresh <<= 1
                else:
                    if s.retire:
                        s.pc <<= s.next_pc
                        if s.jump:
                            s.iter <<= s.iter + Bits16(1)
                    s.fresh <<= s.retire

    def line_trace(s):
        return (f"pc{int(s.pc)}.{int(s.iter)} {s.feed.line_trace()} {s.drain.line_trace()} "
                f"{s.unit.line_trace()} s{int(s.scratch.count)}")


def _fetch(s, InstrT, PCT):
    """The pipelined sequencer (``RouterConfig.pipelined_seq``): the instruction register ``ir`` (the
    current instruction, its kind ``K_NONE`` until the first is loaded), the program memory's
    synchronous read of the next one (at ``fpc``) and the registers ``pc``, ``iter``, ``fresh``."""
    PA = s.mem.raddr.get_type().nbits
    s.ir = Wire(InstrT)
    s.fpc = Wire(PCT.nbits)     # the address of the instruction the memory's read port holds
    s.bst = Wire(2)             # 0: read instruction 0, 1: load it, 2: running
    s.bst_next = Wire(2)
    s.rst_q = Wire()            # reset at the previous edge
    s.restart = Wire()          # a reset's first edge, or a program write in reset
    s.valid = Wire()
    s.kind_ir = Wire(4)
    s.jump_v = Wire()
    s.load = Wire()             # ir takes the memory's instruction at this edge
    s.it1 = Wire(16)            # 1 + the loop iteration after this edge
    s.njump = Wire()            # the loaded instruction will jump back
    s.fa = Wire(PCT.nbits)      # ... so the memory reads this address
    for name, _ in isa.HEADER_FIELDS:
        if name != "kind":
            connect(getattr(s.ins, name), getattr(s.ir, name))
    s.ins.cmd //= s.ir.cmd
    s.ins.kind //= s.kind_ir
    s.move.load //= s.load
    s.move.load_count //= s.mem.rdata.cmd.count
    B0, B1, B2 = Bits2(0), Bits2(1), Bits2(2)
    ONES = PCT((1 << PCT.nbits) - 1)

    @update
    def up_seq_fetch():
        s.valid @= s.bst == B2
        if s.valid:
            s.kind_ir @= s.ir.kind
        else:
            s.kind_ir @= K_NONE
        s.jump_v @= s.valid & s.jump
        s.restart @= s.reset & (~s.rst_q | (s.prog_we & ~s.prog_sel))
        if s.restart:
            s.bst_next @= B0
        elif s.bst == B2:
            s.bst_next @= B2
        else:
            s.bst_next @= s.bst + B1
        s.load @= (s.bst == B1) | (s.valid & s.retire & ~s.reset)
        if s.jump_v:
            s.it1 @= s.iter + Bits16(2)
        else:
            s.it1 @= s.iter + Bits16(1)
        # (the read of instruction 0: fpc is all ones after the restart, and no jump)
        s.njump @= s.mem.rdata.lend & (s.it1 < s.mem.rdata.lcount) & (s.bst != B0)
        if s.njump:
            s.fa @= s.mem.rdata.ltarget
        else:
            s.fa @= s.fpc + PCT(1)
        s.mem.raddr @= s.fa[0:PA]
        s.mem.ren @= (s.bst == B0) | s.load

    @update_ff
    def up_seq_fetch_regs():
        s.rst_q <<= s.reset
        s.bst <<= s.bst_next
        if s.restart:
            s.fpc <<= ONES
        elif (s.bst == B0) | s.load:
            s.fpc <<= s.fa
        if s.load:
            s.ir <<= s.mem.rdata
        if s.reset:
            s.pc <<= PCT(0)
            s.iter <<= Bits16(0)
        elif s.load & s.valid:  # (a retire; the first load leaves pc at 0)
            s.pc <<= s.next_pc  # (= fpc, the address of the instruction loaded)
            if s.jump_v:
                s.iter <<= s.iter + Bits16(1)
        s.fresh <<= (s.reset | s.load) & (s.bst_next == B2)


def _wire_units(s, E):
    """The connections between the router's ports, its units and the sequencer's signals."""
    for name in ("prog_we", "prog_sel", "prog_addr", "prog_data", "tab_data"):
        connect(getattr(s.mem, name), getattr(s, name))
    s.unit.t_addr //= s.mem.t_addr
    s.unit.t_data //= s.mem.t_data
    s.feed.din //= s.din
    s.drain.dout //= s.dout
    for j in range(E):
        s.feed.s_head[j] //= s.scratch.head[j]
        s.move.s_head[j] //= s.scratch.head[j]
        s.scratch.push_data[j] //= s.dlv.sc_push_data[j]
    s.feed.s_count //= s.scratch.count
    s.move.s_count //= s.scratch.count
    s.scratch.push_n //= s.dlv.sc_push_n
    s.scratch.pop_n //= s.dlv.sc_pop_n
    s.unit.rdata0 //= s.scratch.rdata0
    s.unit.rdata1 //= s.scratch.rdata1
    s.unit.raddr0 //= s.scratch.raddr0
    s.unit.raddr1 //= s.scratch.raddr1
    s.unit.drop //= s.scratch.drop
    s.unit.drop_n //= s.scratch.drop_n
    for i, p in enumerate((s.fwd_in, s.bwd_in, s.host_in)):
        s.feed.in_val[i] //= p.val
        s.feed.in_msg[i] //= p.msg
        s.move.in_val[i] //= p.val
        s.move.in_msg[i] //= p.msg
        s.move.feed_rdy[i] //= s.feed.feed_rdy[i]
        p.rdy //= s.move.in_rdy[i]
        s.stat.in_fire[i] //= s.move.in_fire[i]
    for i, p in enumerate((s.fwd_out, s.bwd_out, s.host_out)):
        p //= s.dlv.out[i]
        s.move.out_full[i] //= s.dlv.out_full[i]
        s.drain.full[i] //= s.dlv.out_full[i]
        s.stat.out_fire[i] //= s.dlv.out_fire[i]
    # the deliveries: the drainer's, the mover's and a scalar unit's beats; the feeder's pops
    s.dlv.deliver //= s.drain.deliver
    s.dlv.mask //= s.drain.mask
    s.dlv.data //= s.drain.data
    s.dlv.n //= s.drain.n
    for name in ("mv_fire", "mv_val", "rl_red", "rl_red_val", "rl_bc"):
        connect(getattr(s.dlv, name), getattr(s.move, name))
    s.dlv.mv_n //= s.move.mv_n
    s.dlv.rl_n2 //= s.move.rl_n2
    s.dlv.bwd_msg //= s.bwd_in.msg
    s.dlv.unit_push //= s.unit.push
    s.dlv.unit_data //= s.unit.push_data
    s.dlv.feed_pop_n //= s.feed.s_pop_n

    # the sequencer's instruction fields, its status outputs
    s.unit.lanes //= s.ins.cmd.pk
    s.unit.ct //= s.ins.cmd.ct
    s.unit.c //= s.ins.cmd.c
    s.unit.r //= s.ins.cmd.r
    s.unit.sw //= s.ins.cmd.s
    s.unit.n //= s.count
    s.unit.k //= s.ins.cmd.k
    if s.cfg.pipelined_units:
        s.unit.rs //= s.ins.cmd.rs
        s.unit.crs //= s.ins.cmd.crs
    s.unit.shift //= s.ins.cmd.shift
    s.unit.lshift //= s.ins.cmd.bshift
    s.unit.stoch //= s.ins.cmd.stoch
    s.unit.seed //= s.seed
    s.unit.tid //= s.ins.cmd.tid
    s.unit.sat_bits //= s.ins.bits
    if s.cfg.residual:  # the residual unit's fields (isa.residual)
        s.unit.relu //= s.ins.cmd.relu
        s.unit.area //= s.ins.cmd.hw
        s.unit.chw //= s.ins.cmd.chw
        s.unit.m //= s.ins.cmd.rs
        s.unit.dyn //= s.ins.cmd.crs
    s.unit.tbase //= s.ins.tbase
    s.unit.tlen //= s.ins.tlen
    s.st_state //= s.stat.state
    s.st_mark_id //= s.ins.mark
    s.st_done_val //= s.pend.done_val
    s.st_done_id //= s.pend.done_id
    s.st_cycle //= s.stat.cycle
    s.st_halted //= s.halted
    s.st_pc //= s.pc
    s.st_iter //= s.iter
    s.feed.push_src //= s.ins.src
    s.feed.push_n //= s.count
    s.drain.push_mask //= s.ins.dmask
    s.drain.push_n //= s.count
    s.move.quiet //= s.quiet
    if not s.cfg.pipelined_seq:  # (else the elements left, loaded with the instruction: _fetch)
        s.move.count //= s.count
    s.move.src //= s.ins.src
    s.move.dmask //= s.ins.dmask
    s.dlv.dmask //= s.ins.dmask
    if not s.cfg.pipelined_seq:  # (else the instruction register, _fetch)
        s.ins //= s.mem.ins
        s.mem.pc //= s.pc[0:s.mem.pc.get_type().nbits]
    s.stat.unit_busy //= s.unit.busy
    s.unit.start //= s.unit_start
    s.stat.unit_start //= s.unit_start
    s.stat.mv_room //= s.move.mv_room
    s.stat.cmd_fire //= s.cmd_fire
    s.stat.busy //= s.busy
    s.stat.wait_in //= s.feed.wait_in
    s.stat.blocked //= s.drain.blocked
    s.stat.halted //= s.halted
    s.pend.push_id //= s.ins.done
    s.feed.push //= s.load_issue
    s.pend.feed_push //= s.load_issue
    s.drain.push //= s.store_issue
    s.pend.drain_push //= s.store_issue
    s.pend.feed_done //= s.feed.done
    s.pend.drain_done //= s.drain.done
    for i in range(len(STATES)):
        s.st_cnt[i] //= s.stat.cnt[i]
    for i in range(3):
        s.st_sent[i] //= s.stat.sent[i]
        s.st_recv[i] //= s.stat.recv[i]
