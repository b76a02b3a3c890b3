"""The router/DMA of a node, register-transfer level (synthesizable): program memory, sequencer,
feeder, drainer, output buffers, scratch FIFO and scalar units.

::

    prog bus --> program memory + gather table
                      | pc
                 sequencer --cmd--> engine         fwd_in/bwd_in/host_in --> feeder --din--> engine
                      |                            engine --dout--> drainer --> out buffers --> fwd_out/
                 MOVE / REDUCE / RELAY (link [+ scratch] -> link / scratch) ----^           bwd_out/host_out
                 scalar units (BIAS, GATHER, REQUANT) <--> scratch FIFO <--> feeder / drainer

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
    mk_bits,
    trunc,
    update,
    update_ff,
    zext,
)
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.router_config import RouterConfig, declare_status_ports
from pymtl_fp.cluster.hw.RouterDrainRTL import RouterDrainRTL
from pymtl_fp.cluster.hw.RouterFeedRTL import RouterFeedRTL
from pymtl_fp.cluster.hw.RouterScratchRTL import RouterScratchRTL
from pymtl_fp.cluster.hw.RouterUnitRTL import RouterUnitRTL
from pymtl_fp.engine.msgs import cmd_type
from pymtl_fp.primitives.FifoRTL import FifoRTL

K_NOP, K_ENG, K_LOAD, K_STORE, K_MOVE, K_BIAS, K_GATHER, K_HALT, K_REDUCE, K_REQUANT, K_RELAY = (Bits4(k) for k in range(11))
S_COMPUTE, S_IO, S_STALL_IN, S_STALL_OUT, S_ENGINE, S_DONE = (Bits3(k) for k in range(6))
NPEND = 4  # done marks waiting for their moves
NPEND_1 = NPEND - 1


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
        BW = E * sb
        T = mk_bits(BW)
        NB = E.bit_length()
        NT = mk_bits(NB)
        NE = Bits24(E)
        ZSB = mk_bits(sb)(0)
        InstrT = isa.instr_type()
        PCB = isa.PC_BITS
        PCT = mk_bits(PCB)
        SCB = (cfg.scratch_depth).bit_length()  # scratch count width
        OCB = (cfg.out_beats).bit_length()
        OCT = mk_bits(OCB)
        TAB = max(1, (cfg.table_depth - 1).bit_length())
        TABT = mk_bits(TAB)
        PD = cfg.prog_depth
        PAT = mk_bits(max(1, (PD - 1).bit_length()))
        PD16 = Bits16(PD)
        TD16 = Bits16(cfg.table_depth)
        OUT_FULL = OCT(cfg.out_beats)
        W1 = Bits32(1)
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

        # ---- memories ----------------------------------------------------------------------
        s.prog = [Wire(InstrT) for _ in range(PD)]
        s.gtab = [Wire(32) for _ in range(cfg.table_depth)]
        s.ins = Wire(InstrT)

        @update_ff
        def up_prog_write():
            # writes beyond a memory are ignored (the loader checks program sizes beforehand)
            if s.prog_we & ~s.prog_sel & (s.prog_addr < PD16):
                s.prog[trunc(s.prog_addr, PAT)] <<= s.prog_data
            if s.prog_we & s.prog_sel & (s.prog_addr < TD16):
                s.gtab[trunc(s.prog_addr, TABT)] <<= s.tab_data

        # ---- units ---------------------------------------------------------------------------
        s.feed = RouterFeedRTL(sb, SCB, E)
        s.drain = RouterDrainRTL(sb, E)
        s.scratch = RouterScratchRTL(sb, cfg.scratch_depth, E)
        s.unit = RouterUnitRTL(sb, SCB, TAB)
        s.outs = [FifoRTL(BW, cfg.out_beats) for _ in range(3)]

        s.feed.din //= s.din
        s.drain.dout //= s.dout
        for j in range(E):
            s.feed.s_head[j] //= s.scratch.head[j]
        s.feed.s_count //= s.scratch.count
        s.unit.rdata0 //= s.scratch.rdata0
        s.unit.rdata1 //= s.scratch.rdata1
        s.unit.raddr0 //= s.scratch.raddr0
        s.unit.raddr1 //= s.scratch.raddr1
        s.unit.drop //= s.scratch.drop
        s.unit.drop_n //= s.scratch.drop_n
        for i, p in enumerate((s.fwd_in, s.bwd_in, s.host_in)):
            s.feed.in_val[i] //= p.val
            s.feed.in_msg[i] //= p.msg
        for i, p in enumerate((s.fwd_out, s.bwd_out, s.host_out)):
            p.msg //= s.outs[i].head

        # ---- sequencer -------------------------------------------------------------------------
        s.pc = Wire(PCB)
        s.iter = Wire(16)
        s.fresh = Wire()
        s.moved = Wire(24)
        s.last_compute = Wire()
        s.n_feed = Wire(32)
        s.n_drain = Wire(32)
        s.n_feed_done = Wire(32)
        s.n_drain_done = Wire(32)
        s.cycle = Wire(32)
        s.q_compute = Wire()
        s.q_io = Wire()
        s.q_unit = Wire()
        s.q_busy = Wire()
        s.p_id = [Wire(isa.DONE_BITS) for _ in range(NPEND)]
        s.p_nf = [Wire(32) for _ in range(NPEND)]
        s.p_nd = [Wire(32) for _ in range(NPEND)]
        s.p_cnt = Wire(3)
        s.cnt = [Wire(32) for _ in range(6)]
        s.sent = [Wire(32) for _ in range(3)]
        s.recv = [Wire(32) for _ in range(3)]
        s.err = Wire()

        s.kind = Wire(4)
        s.count = Wire(24)
        s.quiet = Wire()
        s.is_cmd = Wire()
        s.cmd_fire = Wire()
        s.mv = Wire()          # the current instruction is a MOVE / REDUCE that may move (quiet, room)
        s.stream = Wire()      # the current instruction is a MOVE or a REDUCE
        s.red = Wire()         # ... a REDUCE (adds the scratch FIFO's head)
        s.mv_val = Wire(BW)    # what it sends on
        s.mv_ln = Wire(24)     # elements in its next beat
        s.mv_need = Wire(24)   # elements a REDUCE needs in the scratch FIFO for it
        s.rl = Wire()          # a RELAY may move (quiet): its reduce on fwd_in, its broadcast on bwd_in
        s.rl_red_ok, s.rl_bc_ok = Wire(), Wire()
        s.rl_red, s.rl_bc = Wire(), Wire()   # ... fired at this edge
        s.rl_red_val = Wire(BW)
        s.rl_ln, s.rl_ln2 = Wire(24), Wire(24)  # elements in the next reduce / broadcast beat
        s.rl_done = Wire()     # both streams complete at this edge
        s.moved2 = Wire(24)    # a RELAY's broadcast elements (its reduce counts in moved)
        s.mv_room = Wire()
        s.mv_fire = Wire()     # an element moved from a link to a link at this edge
        s.mv_data = Wire(BW)
        s.mv_last = Wire()
        s.unit_start = Wire()
        s.retire = Wire()
        s.next_pc = Wire(PCB)
        s.jump = Wire()
        s.in_fire = [Wire() for _ in range(3)]
        s.out_fire = [Wire() for _ in range(3)]
        s.push_out = [Wire() for _ in range(3)]
        s.push_val = Wire(BW)
        s.sc_n = Wire(NB)      # elements pushed into the scratch FIFO at this edge
        # lane views of the beats (lane j: bits [j*sb, (j+1)*sb)) and the lanes computed here
        s.fwd_l, s.bwd_l, s.mvd_l, s.drn_l, s.unit_l, s.mv_val_l, s.rl_red_l = (
            [Wire(sb) for _ in range(E)] for _ in range(7))
        for j in range(E):
            lo, hi = j * sb, (j + 1) * sb
            s.fwd_l[j] //= s.fwd_in.msg[lo:hi]
            s.bwd_l[j] //= s.bwd_in.msg[lo:hi]
            s.mvd_l[j] //= s.mv_data[lo:hi]
            s.drn_l[j] //= s.drain.data[lo:hi]
            s.mv_val[lo:hi] //= s.mv_val_l[j]
            s.rl_red_val[lo:hi] //= s.rl_red_l[j]
        # a scalar unit appends one element (lane 0)
        if E > 1:
            @update
            def up_unit_lanes():
                s.unit_l[0] @= s.unit.push_data
                for j in range(1, E):
                    s.unit_l[j] @= ZSB
        else:
            s.unit_l[0] //= s.unit.push_data
        s.state = Wire(3)
        s.halted = Wire()
        s.p_ready = Wire()
        s.seed = Wire(32)

        @update
        def up_seq_decode():
            s.ins @= s.prog[trunc(s.pc, PAT)]
            s.kind @= s.ins.kind
            s.count @= s.ins.cmd.count
            s.quiet @= s.feed.idle & s.drain.idle
            s.is_cmd @= (s.kind == K_ENG) | (s.kind == K_LOAD) | (s.kind == K_STORE)
            if s.ins.seedstep:
                s.seed @= s.ins.cmd.seed + zext(s.iter, Bits32)
            else:
                s.seed @= s.ins.cmd.seed

        @update
        def up_seq_cmd():
            s.cmd.val @= s.is_cmd
            s.cmd.msg @= s.ins.cmd
            s.cmd.msg.seed @= s.seed
            s.cmd_fire @= s.cmd.val & s.cmd.rdy

        @update
        def up_seq_move():
            # room in every output buffer of dmask (the scratch FIFO: sized for the program)
            s.mv_room @= ~((((s.ins.dmask & Bits4(isa.DST_FWD_OUT)) != Bits4(0)) & (s.outs[0].count == OUT_FULL))
                           | (((s.ins.dmask & Bits4(isa.DST_BWD_OUT)) != Bits4(0)) & (s.outs[1].count == OUT_FULL))
                           | (((s.ins.dmask & Bits4(isa.DST_HOST)) != Bits4(0)) & (s.outs[2].count == OUT_FULL)))
            s.red @= s.kind == K_REDUCE
            s.stream @= (s.kind == K_MOVE) | s.red
            if s.count - s.moved < NE:
                s.mv_ln @= s.count - s.moved
            else:
                s.mv_ln @= NE
            if s.count - s.moved2 < NE:
                s.rl_ln2 @= s.count - s.moved2
            else:
                s.rl_ln2 @= NE
            s.rl_ln @= s.mv_ln  # (a RELAY's reduce counts in moved too)
            if s.red:
                s.mv_need @= s.mv_ln
            else:
                s.mv_need @= Bits24(0)
            s.mv @= s.stream & s.quiet & s.mv_room & (zext(s.scratch.count, Bits24) >= s.mv_need)
            s.rl @= (s.kind == K_RELAY) & s.quiet
            s.rl_red_ok @= (s.rl & (s.moved < s.count) & (zext(s.scratch.count, Bits24) >= s.rl_ln)
                            & (s.outs[0].count != OUT_FULL))
            s.rl_bc_ok @= s.rl & (s.moved2 < s.count) & (s.outs[1].count != OUT_FULL)
            s.fwd_in.rdy @= s.feed.feed_rdy[0] | (s.mv & (s.ins.src == Bits2(isa.SRC_FWD_IN))) | s.rl_red_ok
            s.bwd_in.rdy @= s.feed.feed_rdy[1] | (s.mv & (s.ins.src == Bits2(isa.SRC_BWD_IN))) | s.rl_bc_ok
            s.host_in.rdy @= s.feed.feed_rdy[2] | (s.mv & (s.ins.src == Bits2(isa.SRC_HOST)))
            s.in_fire[0] @= s.fwd_in.val & s.fwd_in.rdy
            s.in_fire[1] @= s.bwd_in.val & s.bwd_in.rdy
            s.in_fire[2] @= s.host_in.val & s.host_in.rdy
            s.mv_fire @= s.mv & (s.in_fire[0] | s.in_fire[1] | s.in_fire[2])
            if s.ins.src == Bits2(isa.SRC_FWD_IN):
                s.mv_data @= s.fwd_in.msg
            elif s.ins.src == Bits2(isa.SRC_BWD_IN):
                s.mv_data @= s.bwd_in.msg
            else:
                s.mv_data @= s.host_in.msg
            # the adder, lane by lane (modulo 2**stream_bits); lanes past the beat's elements zero
            for j in range(E):
                if s.mv_ln > j:
                    s.rl_red_l[j] @= s.fwd_l[j] + s.scratch.head[j]
                else:
                    s.rl_red_l[j] @= ZSB
                if s.red:
                    if s.mv_ln > j:
                        s.mv_val_l[j] @= s.mvd_l[j] + s.scratch.head[j]
                    else:
                        s.mv_val_l[j] @= ZSB
                else:
                    s.mv_val_l[j] @= s.mvd_l[j]
            s.mv_last @= s.mv_fire & (s.moved + s.mv_ln == s.count)
            s.rl_red @= s.rl_red_ok & s.fwd_in.val
            s.rl_bc @= s.rl_bc_ok & s.bwd_in.val
            s.rl_done @= (s.rl & ((s.moved == s.count) | (s.rl_red & (s.moved + s.rl_ln == s.count)))
                          & ((s.moved2 == s.count) | (s.rl_bc & (s.moved2 + s.rl_ln2 == s.count))))

        @update
        def up_seq_retire():
            s.unit_start @= (((s.kind == K_BIAS) | (s.kind == K_GATHER) | (s.kind == K_REQUANT)) & s.quiet
                             & ~s.unit.busy & ~s.reset)
            s.retire @= s.cmd_fire | s.mv_last | s.rl_done | s.unit.retire | (s.kind == K_NOP)
            s.jump @= s.ins.lend & (zext(s.iter, Bits16) + Bits16(1) < s.ins.lcount)
            if s.jump:
                s.next_pc @= s.ins.ltarget
            else:
                s.next_pc @= s.pc + PCT(1)
            s.feed.push @= s.cmd_fire & (s.kind == K_LOAD) & (s.count != Bits24(0))
            s.feed.push_src @= s.ins.src
            s.feed.push_n @= s.count
            s.drain.push @= s.cmd_fire & (s.kind == K_STORE) & (s.count != Bits24(0))
            s.drain.push_mask @= s.ins.dmask
            s.drain.push_n @= s.count

        @update
        def up_seq_unit():
            s.unit.start @= s.unit_start
            s.unit.is_bias @= s.kind == K_BIAS
            s.unit.is_requant @= s.kind == K_REQUANT
            s.unit.lanes @= s.ins.cmd.pk
            s.unit.glayout @= s.ins.cmd.target == BUF_G
            s.unit.ct @= s.ins.cmd.ct
            s.unit.c @= s.ins.cmd.c
            s.unit.r @= s.ins.cmd.r
            s.unit.sw @= s.ins.cmd.s
            s.unit.n @= s.count
            s.unit.k @= s.ins.cmd.k
            s.unit.shift @= s.ins.cmd.shift
            s.unit.lshift @= s.ins.cmd.bshift
            s.unit.stoch @= s.ins.cmd.stoch
            s.unit.seed @= s.seed
            s.unit.tid @= s.ins.cmd.tid
            s.unit.sat_bits @= s.ins.bits
            s.unit.tbase @= s.ins.tbase
            s.unit.tlen @= s.ins.tlen
            s.unit.t_data @= s.gtab[s.unit.t_addr]

        @update
        def up_seq_buffers():
            # output buffers: the drainer's deliveries or a MOVE's elements (never both at once)
            s.push_out[0] @= ((s.drain.deliver & ((s.drain.mask & Bits4(isa.DST_FWD_OUT)) != Bits4(0)))
                              | (s.mv_fire & ((s.ins.dmask & Bits4(isa.DST_FWD_OUT)) != Bits4(0))))
            s.push_out[1] @= ((s.drain.deliver & ((s.drain.mask & Bits4(isa.DST_BWD_OUT)) != Bits4(0)))
                              | (s.mv_fire & ((s.ins.dmask & Bits4(isa.DST_BWD_OUT)) != Bits4(0))))
            s.push_out[2] @= ((s.drain.deliver & ((s.drain.mask & Bits4(isa.DST_HOST)) != Bits4(0)))
                              | (s.mv_fire & ((s.ins.dmask & Bits4(isa.DST_HOST)) != Bits4(0))))
            if s.drain.deliver:
                s.push_val @= s.drain.data
            else:
                s.push_val @= s.mv_val
            s.outs[0].push @= s.push_out[0] | s.rl_red
            s.outs[1].push @= s.push_out[1] | s.rl_bc
            s.outs[2].push @= s.push_out[2]
            if s.rl_red:  # (a RELAY: the sum forward, the broadcast element back)
                s.outs[0].push_data @= s.rl_red_val
            else:
                s.outs[0].push_data @= s.push_val
            if s.rl_bc:
                s.outs[1].push_data @= s.bwd_in.msg
            else:
                s.outs[1].push_data @= s.push_val
            s.outs[2].push_data @= s.push_val
            s.fwd_out.val @= s.outs[0].count != OCT(0)
            s.bwd_out.val @= s.outs[1].count != OCT(0)
            s.host_out.val @= s.outs[2].count != OCT(0)
            s.out_fire[0] @= s.fwd_out.val & s.fwd_out.rdy
            s.out_fire[1] @= s.bwd_out.val & s.bwd_out.rdy
            s.out_fire[2] @= s.host_out.val & s.host_out.rdy
            s.outs[0].pop @= s.out_fire[0]
            s.outs[1].pop @= s.out_fire[1]
            s.outs[2].pop @= s.out_fire[2]
            s.drain.full[0] @= s.outs[0].count == OUT_FULL
            s.drain.full[1] @= s.outs[1].count == OUT_FULL
            s.drain.full[2] @= s.outs[2].count == OUT_FULL
            # the scratch FIFO: the drainer's, a unit's or a MOVE / REDUCE's elements in, the
            # feeder's or a REDUCE's out (never two of them at once)
            s.sc_n @= NT(0)
            if s.unit.push:
                s.sc_n @= NT(1)
            elif s.mv_fire:
                if (s.ins.dmask & Bits4(isa.DST_SCRATCH)) != Bits4(0):
                    s.sc_n @= s.mv_ln[0:NB]
            elif s.rl_bc:
                s.sc_n @= s.rl_ln2[0:NB]
            elif s.drain.deliver & ((s.drain.mask & Bits4(isa.DST_SCRATCH)) != Bits4(0)):
                s.sc_n @= s.drain.n
            s.scratch.push_n @= s.sc_n
            for j in range(E):
                if s.unit.push:
                    s.scratch.push_data[j] @= s.unit_l[j]
                elif s.mv_fire:
                    s.scratch.push_data[j] @= s.mv_val_l[j]
                elif s.rl_bc:
                    s.scratch.push_data[j] @= s.bwd_l[j]
                else:
                    s.scratch.push_data[j] @= s.drn_l[j]
            if s.mv_fire & s.red:
                s.scratch.pop_n @= s.mv_ln[0:NB]
            elif s.rl_red:
                s.scratch.pop_n @= s.rl_ln[0:NB]
            else:
                s.scratch.pop_n @= s.feed.s_pop_n

        @update
        def up_seq_status():
            s.halted @= ((s.kind == K_HALT) & s.feed.idle & s.drain.idle & ~s.unit.busy
                         & (s.outs[0].count == OCT(0)) & (s.outs[1].count == OCT(0))
                         & (s.outs[2].count == OCT(0)))
            # the state of this cycle, from the registers (see RouterCL)
            if s.q_unit | s.unit.busy:
                s.state @= S_IO
            elif (s.stream | (s.kind == K_RELAY)) & s.quiet:
                if s.mv_room:
                    s.state @= S_STALL_IN
                else:
                    s.state @= S_STALL_OUT
            elif s.q_compute | (s.last_compute & s.q_busy):
                s.state @= S_COMPUTE
            elif s.q_io:
                s.state @= S_IO
            elif s.feed.wait_in:
                s.state @= S_STALL_IN
            elif s.drain.blocked:
                s.state @= S_STALL_OUT
            elif (s.kind != K_HALT) | ~s.feed.idle | ~s.drain.idle:
                s.state @= S_ENGINE
            elif s.halted:
                s.state @= S_DONE
            else:
                s.state @= S_STALL_OUT
            s.st_state @= s.state
            s.st_mark_val @= s.fresh & (s.ins.mark != MARK0)
            s.st_mark_id @= s.ins.mark
            s.p_ready @= ((s.p_cnt != Bits3(0)) & (s.n_feed_done >= s.p_nf[0]) & (s.n_drain_done >= s.p_nd[0]))
            s.st_done_val @= s.p_ready
            s.st_done_id @= s.p_id[0]
            s.st_cycle @= s.cycle
            s.st_halted @= s.halted
            s.st_pc @= s.pc
            s.st_iter @= s.iter
            s.st_error @= (s.err | s.p_err | s.scratch.error | s.outs[0].error | s.outs[1].error | s.outs[2].error)
            for i in range(6):
                s.st_cnt[i] @= s.cnt[i]
            for i in range(3):
                s.st_sent[i] @= s.sent[i]
                s.st_recv[i] @= s.recv[i]
                s.st_out_peak[i] @= zext(s.outs[i].peak, Bits32)
            s.st_scratch_peak @= zext(s.scratch.peak, Bits32)

        @update_ff
        def up_seq_regs():
            if s.reset:
                s.pc <<= PCT(0)
                s.iter <<= Bits16(0)
                s.fresh <<= 1
                s.moved <<= Bits24(0)
                s.moved2 <<= Bits24(0)
                s.last_compute <<= 0
                s.n_feed <<= Bits32(0)
                s.n_drain <<= Bits32(0)
                s.n_feed_done <<= Bits32(0)
                s.n_drain_done <<= Bits32(0)
                s.cycle <<= Bits32(0)
                s.q_compute <<= 0
                s.q_io <<= 0
                s.q_unit <<= 0
                s.q_busy <<= 0
                s.err <<= 0
                for i in range(6):
                    s.cnt[i] <<= Bits32(0)
                for i in range(3):
                    s.sent[i] <<= Bits32(0)
                    s.recv[i] <<= Bits32(0)
            else:
                s.cycle <<= s.cycle + W1
                for i in range(6):
                    if s.state == Bits3(i):
                        s.cnt[i] <<= s.cnt[i] + W1
                for i in range(3):
                    if s.out_fire[i]:
                        s.sent[i] <<= s.sent[i] + W1
                    if s.in_fire[i]:
                        s.recv[i] <<= s.recv[i] + W1
                if s.retire:
                    s.pc <<= s.next_pc
                    if s.jump:
                        s.iter <<= s.iter + Bits16(1)
                s.fresh <<= s.retire
                if s.mv_fire:
                    if s.mv_last:
                        s.moved <<= Bits24(0)
                    else:
                        s.moved <<= s.moved + s.mv_ln
                if s.rl_done:
                    s.moved <<= Bits24(0)
                    s.moved2 <<= Bits24(0)
                else:
                    if s.rl_red:
                        s.moved <<= s.moved + s.rl_ln
                    if s.rl_bc:
                        s.moved2 <<= s.moved2 + s.rl_ln2
                if s.cmd_fire:
                    s.last_compute <<= s.kind == K_ENG
                if s.feed.push:
                    s.n_feed <<= s.n_feed + W1
                if s.drain.push:
                    s.n_drain <<= s.n_drain + W1
                if s.feed.done:
                    s.n_feed_done <<= s.n_feed_done + W1
                if s.drain.done:
                    s.n_drain_done <<= s.n_drain_done + W1
                s.q_compute <<= s.cmd_fire & (s.kind == K_ENG)
                s.q_io <<= (s.feed.din_fire | s.drain.deliver | s.in_fire[0] | s.in_fire[1] | s.in_fire[2])
                s.q_unit <<= s.unit_start | s.unit.busy
                s.q_busy <<= s.busy

        s.p_push = Wire()
        s.p_err = Wire()

        @update
        def up_pend_push():
            s.p_push @= s.fresh & (s.ins.done != Bits12(0))

        @update_ff
        def up_pend():
            if s.reset:
                s.p_cnt <<= Bits3(0)
                s.p_err <<= 0
            else:
                if s.p_ready:  # pop the head, then push behind what remains
                    for i in range(NPEND_1):
                        s.p_id[i] <<= s.p_id[i + 1]
                        s.p_nf[i] <<= s.p_nf[i + 1]
                        s.p_nd[i] <<= s.p_nd[i + 1]
                    if s.p_push:
                        for i in range(NPEND):
                            if s.p_cnt - Bits3(1) == Bits3(i):
                                s.p_id[i] <<= s.ins.done
                                s.p_nf[i] <<= s.n_feed
                                s.p_nd[i] <<= s.n_drain
                    else:
                        s.p_cnt <<= s.p_cnt - Bits3(1)
                elif s.p_push:
                    for i in range(NPEND):
                        if s.p_cnt == Bits3(i):
                            s.p_id[i] <<= s.ins.done
                            s.p_nf[i] <<= s.n_feed
                            s.p_nd[i] <<= s.n_drain
                    if s.p_cnt == Bits3(NPEND):
                        s.p_err <<= 1
                    else:
                        s.p_cnt <<= s.p_cnt + Bits3(1)

    def line_trace(s):
        return (f"pc{int(s.pc)}.{int(s.iter)} {s.feed.line_trace()} {s.drain.line_trace()} "
                f"{s.unit.line_trace()} s{int(s.scratch.count)}")
