"""Test bench of the router/DMA at any level: random node programs, a stand-in engine, link and host
sources and sinks with random stalls, and a per-cycle trace of every port and status output.

* :func:`random_program` draws a valid node program (:mod:`pymtl_fp.cluster.isa`): LOADs from the
  links, the host and the scratch FIFO, STOREs to any set of destinations, compute commands,
  MOVEs, REDUCEs, RELAYs, BIAS, GATHER, REQUANT, ADD, MASK, GAP and GAPB on what the scratch FIFO holds,
  NOPs, a loop, marks and done marks.
* :class:`EngineStub` answers the router's engine side: it accepts a command when its unit is idle
  (one command at a time, like the serial engine) and not stalled, takes a LOAD's elements on
  ``din``, produces a STORE's elements on ``dout`` (a pure function of the seed and the element
  count), and stays busy a command-dependent number of cycles after a compute command.  With
  ``lanes`` (E) elements per beat it takes and gives ``ceil(count / E)`` beats of random words.
* :func:`run_router` builds the bench around a router of a given level (``cl``, ``rtl``,
  ``verilator``), writes the program through the program bus while reset is high, runs until the
  router has halted and returns the per-cycle trace, so two levels can be compared cycle by cycle.

Every random choice (stalls, data) is a pure function of a seed and the cycle or element index,
so two routers in two benches see the same environment.
"""

from __future__ import annotations

import random

from pymtl3 import Component, InPort, OutPort, mk_bits, update, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.router_config import BOOT_EDGES
from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type
from pymtl_fp.sim import SimulationHang, stall_pattern
from pymtl_fp.sim_passes import default_passes
from pymtl_fp.tb.stream import StallSink, StallSource


def _data(seed: int, i: int, bits: int) -> int:
    return random.Random(seed * 1_000_003 + i).getrandbits(bits)


class EngineStub(Component):
    """A stand-in engine for router tests (CL behaviour; see the module docstring)."""

    def construct(s, bits=32, seed=0, stall=0.0, lanes=1):
        s.lanes = lanes
        bits = lanes * bits  # one beat
        T = mk_bits(bits)
        s.cmd = RecvIfcRTL(cmd_type())
        s.din = RecvIfcRTL(T)
        s.dout = SendIfcRTL(T)
        s.busy = OutPort()
        s.bits, s.seed, s.stall = bits, seed, stall
        s.loaded = []    # elements taken on din
        s.commands = []  # (cycle, op, count)
        s._reset_state()

        @update
        def up_stub_rdy():
            s.cmd.rdy @= s.idle_q

        @update_ff
        def up_stub():
            if s.reset:
                s._reset_state()
                s.din.rdy <<= 0
                s.dout.val <<= 0
                s.busy <<= 0
                s.idle_q <<= 0
                return
            s.cycle += 1
            if s.din.val & s.din.rdy:
                s.loaded.append(int(s.din.msg))
                s.ld -= 1
            if s.dout.val & s.dout.rdy:
                s.st -= 1
                s.produced += 1
            if s.ex > 0:
                s.ex -= 1
            if s.cmd.val & s.cmd.rdy:
                f = msgs.cmd_fields(s.cmd.msg)
                s.commands.append((s.cycle, f["op"], f["count"], f["seed"]))
                if f["op"] == msgs.OP_LOAD:
                    s.ld = -(-f["count"] // s.lanes)
                elif f["op"] == msgs.OP_STORE:
                    s.st = -(-f["count"] // s.lanes)
                else:
                    s.ex = 1 + (f["seed"] + f["n"]) % 9
            stall = next(s.pat)
            idle = s.ld == 0 and s.st == 0 and s.ex == 0
            s.idle_q <<= int(idle and not stall)
            s.din.rdy <<= int(s.ld > 0 and not next(s.pat_in))
            ok = s.st > 0 and not next(s.pat_out)
            s.dout.val <<= int(ok)
            s.dout.msg <<= T(_data(s.seed, s.produced, s.bits))
            s.busy <<= int(not idle)

        s.idle_q = OutPort()

    def _reset_state(s):
        s.cycle = 0
        s.ld = s.st = s.ex = 0
        s.produced = 0
        s.pat = stall_pattern(s.seed, s.stall)
        s.pat_in = stall_pattern(s.seed + 1, s.stall)
        s.pat_out = stall_pattern(s.seed + 2, s.stall)

    def line_trace(s):
        return f"E{s.ld}/{s.st}/{s.ex}"


class RouterBench(Component):
    """A router of any level with its environment."""

    def construct(s, router, bits=32, seed=0, stall=0.0, n_in=4096, lanes=1, inputs=None):
        s.router = router
        s.engine = EngineStub(bits, seed, stall, lanes)
        bits = lanes * bits  # the links' and the host's beats
        T = mk_bits(bits)
        s.router.cmd //= s.engine.cmd
        s.router.din //= s.engine.din
        s.engine.dout //= s.router.dout
        s.router.busy //= s.engine.busy
        if inputs is None:  # (else: the beats of fwd_in, bwd_in and host_in, as unsigned ints)
            inputs = [[_data(seed + 10 + i, j, bits) for j in range(n_in)] for i in range(3)]
        s.srcs = [StallSource(T, [T(v) for v in inputs[i]], stall, seed + 20 + i) for i in range(3)]
        s.srcs[0].send //= s.router.fwd_in
        s.srcs[1].send //= s.router.bwd_in
        s.srcs[2].send //= s.router.host_in
        s.sinks = [StallSink(T, None, stall, seed + 30 + i) for i in range(3)]
        s.router.fwd_out //= s.sinks[0].recv
        s.router.bwd_out //= s.sinks[1].recv
        s.router.host_out //= s.sinks[2].recv
        s.prog_we = InPort()
        s.prog_sel = InPort()
        s.prog_addr = InPort(16)
        s.prog_data = InPort(isa.instr_type())
        s.tab_data = InPort(32)
        s.router.prog_we //= s.prog_we
        s.router.prog_sel //= s.prog_sel
        s.router.prog_addr //= s.prog_addr
        s.router.prog_data //= s.prog_data
        s.router.tab_data //= s.tab_data

    def line_trace(s):
        return f"{s.router.line_trace()} {s.engine.line_trace()}"


# ---- random programs ---------------------------------------------------------------------------

def random_program(rng: random.Random, n: int = 30, *, scratch_depth: int = 256, max_count: int = 12,
                   loop: bool = True, residual: bool = False) -> tuple[list, list]:
    """A valid random program of about ``n`` instructions and its gather table (with the residual
    unit's kinds when ``residual``: a router with ``RouterConfig.residual``)."""
    prog, table = [], []
    tally = 0  # elements the scratch FIFO will hold once every STORE/LOAD so far has moved
    mark_ids = iter(range(1, 200))
    done_ids = iter(range(1, 4000))

    def tagged(ins):
        if rng.random() < 0.2:
            ins = ins.with_(mark=next(mark_ids))
        if rng.random() < 0.25:
            ins = ins.with_(done=next(done_ids))
        return ins

    def eng():
        return isa.eng(op=rng.choice(list(msgs.OPS.values())), n=rng.randrange(8), seed=rng.getrandbits(32))

    def body_ops(k, scratch_ok):
        nonlocal tally
        out = []
        for _ in range(k):
            r = rng.random()
            c = rng.randint(0, max_count)
            if r < 0.2:
                out.append(isa.load(rng.choice([isa.SRC_FWD_IN, isa.SRC_BWD_IN, isa.SRC_HOST]), count=c, target=0))
            elif r < 0.4:
                mask = rng.choice([1, 2, 8, 3, 9, 10, 11])
                if scratch_ok and rng.random() < 0.4 and tally + c <= scratch_depth // 4:
                    mask |= isa.DST_SCRATCH
                    tally += c
                out.append(isa.store(mask, count=c, target=0))
            elif r < 0.55:
                ins = eng()
                out.append(ins.with_(seedstep=int(rng.random() < 0.5)))
            elif r < 0.65 and scratch_ok and tally > 0:
                take = rng.randint(1, tally)
                tally -= take
                out.append(isa.load(isa.SRC_SCRATCH, count=take, target=0))
            elif r < 0.75:
                src = rng.choice([isa.SRC_FWD_IN, isa.SRC_BWD_IN])
                dst = rng.choice([isa.DST_FWD_OUT, isa.DST_BWD_OUT])
                c = rng.randint(1, max_count)
                if scratch_ok and rng.random() < 0.25 and tally > 0 and 2 * tally <= scratch_depth // 2:
                    out.append(isa.relay(rng.randint(1, tally)))  # a middle member (pops n, pushes n)
                    continue
                if scratch_ok and rng.random() < 0.5 and tally > 0:  # an all-reduce hop
                    take = rng.randint(1, tally)
                    dst = rng.choice([dst, isa.DST_SCRATCH, dst | isa.DST_SCRATCH])
                    tally -= 0 if dst & isa.DST_SCRATCH else take
                    out.append(isa.reduce_(src, dst, take))
                    continue
                if scratch_ok and rng.random() < 0.3 and tally + c <= scratch_depth // 4:  # keep a copy
                    dst = rng.choice([isa.DST_SCRATCH, dst | isa.DST_SCRATCH])
                    tally += c
                out.append(isa.move(src, dst, c))
            elif r < 0.78 and scratch_ok and tally > 0:
                if rng.random() < 0.6:  # top the FIFO up to whole P x P words of a random P
                    P = rng.randint(2, 4)
                    want = P * P * rng.randint(1, 3)
                    if tally < want <= scratch_depth // 4:
                        out.append(isa.store(isa.DST_SCRATCH, count=want - tally, target=0))
                        tally = want
                req = _random_requant(rng, tally)
                if req is not None:
                    out.append(req)
            elif r < 0.81 and residual and scratch_ok and tally > 0:
                res = _random_residual(rng, tally, scratch_depth)
                if res is not None:
                    ins_list, tally = res
                    out.extend(ins_list)
            elif r < 0.82:
                out.append(isa.Instr(isa.NOP))
            elif scratch_ok and tally > 0 and tally % 2 == 0 and 3 * tally // 2 <= scratch_depth and r < 0.9:
                nb = tally // 2
                out.append(isa.bias(nb, rng.randint(0, nb), rng.randrange(-4, 8), rng.randrange(2), rng.getrandbits(32),
                                    rng.randrange(256), rng.randint(2, 32)))
                tally = nb
            elif scratch_ok and tally > 0:
                runs = []
                total = 0
                for _ in range(rng.randint(0, 4)):
                    if rng.random() < 0.3:
                        ln = rng.randint(1, 5)
                        runs.append((1, ln, 0))
                    else:
                        off = rng.randrange(tally)
                        ln = rng.randint(1, tally - off)
                        runs.append((0, ln, off))
                    total += ln
                if tally + total > scratch_depth:
                    continue
                base = len(table)
                table.extend(isa.run_word(*r_) for r_ in runs)
                out.append(isa.gather(tally, base, len(runs)))
                tally = total
            else:
                out.append(eng())
        return [tagged(i) for i in out]

    prog += body_ops(n // 3, True)
    if loop:
        body = body_ops(max(1, n // 3), False)
        start = len(prog)
        body[-1] = body[-1].with_(lend=1, lcount=rng.randint(1, 3), ltarget=start)
        prog += body
    prog += body_ops(n // 3, True)
    if tally:
        prog.append(isa.load(isa.SRC_SCRATCH, count=tally, target=0))
    prog.append(tagged(isa.Instr(isa.HALT)))
    return prog, table


def _random_requant(rng: random.Random, n: int):
    """A REQUANT of the scratch FIFO's ``n`` elements: a random tensor shape whose layout (G or B,
    on a random array side) holds exactly ``n`` elements, or None if none fits."""
    shifts = dict(shift=rng.randrange(0, 20), stoch=rng.randrange(2), seed=rng.getrandbits(32),
                  tid=rng.randrange(256), bits=rng.randint(2, 32))
    options = []
    for P in (4, 3, 2, 1):
        if n % (P * P) == 0:
            words = n // (P * P)
            dims = [1, 1, 1, 1]  # kt, ct, r, s: the words' factors, spread at random
            for f in _factors(words):
                dims[rng.randrange(4)] *= f
            kt, ct, r, s = dims
            k = rng.randint((kt - 1) * P + 1, kt * P)
            c = rng.randint((ct - 1) * P + 1, ct * P)
            options.append(("G", (k, c, r, s), P))
        if n % P == 0:
            kt = n // P
            options.append(("B", (rng.randint((kt - 1) * P + 1, kt * P), 1, 1, 1), P))
    if not options:
        return None
    layout, shape, P = options[0] if rng.random() < 0.6 else rng.choice(options)  # (large P first)
    return isa.requant(n, layout, shape, P, **shifts)


def _random_residual(rng: random.Random, n: int, depth: int):
    """An ADD, MASK, GAP or GAPB of the scratch FIFO's ``n`` elements (after a STORE topping the FIFO up to its
    operands' elements, if needed) and the elements it leaves, or None if none fits."""
    kind = rng.choice([isa.ADD, isa.MASK, isa.GAP, isa.GAPB])
    bits = rng.randint(2, 32)
    for _ in range(6):
        if kind == isa.ADD:
            ins = isa.add(-(-n // 2), bits, rng.random() < 0.5)
        elif kind == isa.MASK:
            ins = isa.mask(-(-n // 2), bits)
        else:
            shape = (rng.randint(1, 2), rng.randint(1, 6), rng.randint(1, 3), rng.randint(1, 3))
            rounding = dict(stoch=rng.randrange(2), seed=rng.getrandbits(32), tid=rng.randrange(256))
            if kind == isa.GAP:
                ins = isa.gap(shape, rng.randint(1, 4), bits, **rounding)
            else:
                ins = isa.gapb(shape, rng.randint(1, 4), bits, relu=rng.random() < 0.5, **rounding)
        want = isa.residual.inputs(ins)
        left = ins.count // ins.field("hw") if kind == isa.GAP else ins.count
        if n <= want <= depth // 4 and left <= depth // 4:
            top = [isa.store(isa.DST_SCRATCH, count=want - n, target=0)] if want > n else []
            return top + [ins], left
    return None


def _factors(n: int) -> list:
    out, d = [], 2
    while n > 1:
        while n % d == 0:
            out.append(d)
            n //= d
        d += 1
    return out


# ---- running ----------------------------------------------------------------------------------

def router_of(level: str, cfg):
    from pymtl_fp.cluster.hw.RouterCL import RouterCL
    from pymtl_fp.cluster.hw.RouterRTL import RouterRTL

    return RouterCL(cfg) if level == "cl" else RouterRTL(cfg)


STATUS = ("st_state", "st_mark_val", "st_mark_id", "st_done_val", "st_done_id")
COUNTERS = ("st_cnt", "st_cycle", "st_halted", "st_pc", "st_iter", "st_sent", "st_recv", "st_out_peak",
            "st_scratch_peak")


def run_router(level: str, cfg, prog, table, *, seed=0, stall=0.0, max_cycles=20_000, inputs=None,
               idle_edges=BOOT_EDGES) -> dict:
    """Run ``prog`` on a router of ``level`` in :class:`RouterBench`; return its per-cycle trace
    (every port's val/rdy and transferred message, and the status outputs the CL model has),
    what the sinks and the engine received, and the cycle the router halted.  ``inputs``: the beats
    the link inputs and the host send (three lists of unsigned ints; default: random words).  The
    program bus is idle for the last ``idle_edges`` edges of reset."""
    bench = RouterBench(router_of("rtl" if level == "verilator" else level, cfg), cfg.stream_bits, seed, stall,
                        lanes=cfg.stream_lanes, inputs=inputs)
    if level == "verilator":
        from pymtl_fp.verilate import translate_import_units

        bench.elaborate()
        bench = translate_import_units(bench, {bench.router: (cfg.module_name(), cfg.params())})
    else:
        bench.elaborate()
        bench.apply(default_passes(linetrace=False))
    InstrT = isa.instr_type()
    Word = mk_bits(isa.INSTR_BITS)
    bench.reset @= 1
    bench.sim_tick()
    for addr, ins in enumerate(prog):
        bench.prog_we @= 1
        bench.prog_sel @= 0
        bench.prog_addr @= addr
        bench.prog_data @= InstrT.from_bits(Word(isa.encode(ins)))
        bench.sim_tick()
    for addr, w in enumerate(table):
        bench.prog_we @= 1
        bench.prog_sel @= 1
        bench.prog_addr @= addr
        bench.tab_data @= w
        bench.sim_tick()
    bench.prog_we @= 0
    for _ in range(idle_edges):
        bench.sim_tick()
    bench.reset @= 0
    bench.sim_eval_combinational()
    r = bench.router
    ports = [("cmd", r.cmd), ("din", r.din), ("dout", r.dout), ("fwd_in", r.fwd_in), ("bwd_in", r.bwd_in),
             ("host_in", r.host_in), ("fwd_out", r.fwd_out), ("bwd_out", r.bwd_out), ("host_out", r.host_out)]
    trace = []
    halted = None
    for cycle in range(max_cycles):
        row = [cycle]
        for _, p in ports:
            v, y = int(p.val), int(p.rdy)
            row.append((v, y, int(p.msg.to_bits() if hasattr(p.msg, "to_bits") else p.msg) if v and y else None))
        st = [int(getattr(r, n)) for n in STATUS]
        row.append((st[0], st[1], st[2] if st[1] else 0, st[3], st[4] if st[3] else 0))
        row.append(tuple(int(x) for n in COUNTERS for x in (getattr(r, n) if isinstance(getattr(r, n), list)
                                                              else [getattr(r, n)])))
        trace.append(tuple(row))
        if level == "cl":
            done = r.is_done()
        else:
            done = bool(r.st_halted)
        if done and halted is None:
            halted = cycle
            break
        bench.sim_tick()
    else:
        raise SimulationHang(f"router {level} did not halt in {max_cycles} cycles: {r.line_trace()}")
    return dict(trace=trace, halted=halted, loaded=list(bench.engine.loaded),
                commands=list(bench.engine.commands),
                sent=[[int(m) for m in s.received] for s in bench.sinks])
