"""Analytical FPGA resource model (Xilinx 7-series / UltraScale primitives): LUTs, FFs, DSPs, BRAMs.

A closed-form estimate from a unit's elaboration parameters, for design-space exploration and to
set beside a synthesis run (``pymtl-fp translate`` with Yosys ``synth_xilinx``).  It counts what
dominates, with simple, stated rules -- it is not a place-and-route result:

* **DSPs**: one DSP48 per MAC lane when the signed operands fit its ``25/27 x 18`` multiplier
  (``data_bits <= 18``), else ``ceil(a/17) * ceil(b/17)`` slices per lane; the lane's accumulator
  is counted in LUTs/FFs (conservative: the DSP's post-adder could absorb up to 48 bits).
* **Memories**: each SRAM instance (the RTL banks every buffer into one ``SramRTL`` per lane) maps
  to the cheapest block-RAM shape (RAMB18: 16Kx1, 8Kx2, 4Kx4, 2Kx9, 1Kx18, 512x36), or, when it
  is shallow (``depth <= 64``) or small (``< 1024`` bits), to distributed LUT RAM
  (``RAM64M``: 64 words x 3 bits of simple-dual-port RAM per 4 LUTs).  ``bram36`` is the number
  of 36Kb tiles (two RAMB18 per tile).
* **Registers**: accumulators, pipeline and stream registers, address counters: bit counts.
* **LUTs**: one LUT per adder/mux bit (6-input LUTs with carry chains), a per-lane requantizer
  (:func:`requant_luts`: three barrel shifters, an adder, saturation) and the stochastic hash (constant multiplies
  counted as DSPs: 3 per 32x32 low-half product, :data:`HASH_DSPS` per hash).

:func:`estimate` dispatches on the config type.  Every figure is an int; ``notes`` say which
rule produced what.
"""

from __future__ import annotations

import dataclasses
import math

#: RAMB18 shapes: (depth, width) in simple-dual-port use
BRAM18_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
LUTRAM_MAX_DEPTH = 64
LUTRAM_MAX_BITS = 1024
DSP_A, DSP_B = 25, 18  # signed multiplier operand widths of a DSP48E1 (27 x 18 on DSP48E2)
#: the stochastic-rounding hash: three 32x32 products kept modulo 2**32 (3 DSPs each: lo*lo,
#: lo*hi, hi*lo) and one 8x32 product (1 DSP)
HASH_DSPS = 3 * 3 + 1


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


def memory(width: int, depth: int, instances: int = 1) -> Resources:
    """``instances`` simple-dual-port memories of ``depth`` words x ``width`` bits (registered read)."""
    r = Resources()
    if depth <= LUTRAM_MAX_DEPTH or width * depth < LUTRAM_MAX_BITS:
        luts = math.ceil(depth / 64) * math.ceil(width / 3) * 4
        r.luts = r.lutram_luts = luts * instances
        r.ffs = width * instances  # the registered read port
        r.notes.append(f"{instances} x {depth}x{width} -> LUT RAM")
    else:
        per = min(math.ceil(width / w) * math.ceil(depth / d) for d, w in BRAM18_SHAPES)
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


def engine_resources(cfg) -> Resources:
    """Estimate for :class:`pymtl_fp.engine.config.EngineConfig`."""
    P, db, acc = cfg.P, cfg.data_bits, cfg.acc_bits
    lanes = P * P
    r = Resources()
    mac = Resources(dsps=lanes * multiplier_dsps(db, db),
                    luts=lanes * (acc + db)  # accumulator adder + operand select (fwd/transposed/outer)
                    + P * (P - 1) * acc,  # row adder trees (reduce mode)
                    ffs=lanes * acc)  # one accumulator per lane (outer mode needs all P*P)
    r.add(mac, f"MAC array {P}x{P} ({lanes} lanes, {db}-bit operands, {acc}-bit accumulators)")
    r.add(memory(db, cfg.act_depth, 3 * P), f"X, D, O buffers ({P} banks each)")
    r.add(memory(db, cfg.weight_depth, 2 * lanes), f"W, G buffers ({lanes} banks each)")
    r.add(memory(acc, cfg.bias_depth, P), f"B buffer ({P} banks)")
    requant = Resources(luts=P * requant_luts(acc, db), ffs=P * db)
    if cfg.stochastic:
        requant.dsps += P * HASH_DSPS
        requant.luts += P * 4 * 32  # xor-shift stages and the offset shift
    r.add(requant, f"requantizer bank ({P} lanes{', stochastic hash' if cfg.stochastic else ''})")
    addr_bits = 16
    ctrl = Resources(ffs=12 * addr_bits + 400 + 2 * cfg.stream_bits,  # loop counters, command, stream regs
                     luts=12 * addr_bits * 2 + 300 + 2 * cfg.stream_bits)
    r.add(ctrl, "control: address generator loop counters, command register, stream registers")
    return r


def link_resources(cfg) -> Resources:
    """Estimate for :class:`pymtl_fp.link.config.LinkConfig` (one direction: both ends)."""
    r = Resources()
    m, f = cfg.msg_bits, cfg.flit_bits
    r.add(memory(m + cfg.seq_bits, cfg.window), f"retransmission buffer ({cfg.window} x {m} bits)")
    r.add(memory(m, cfg.credits), f"receive buffer ({cfg.credits} credits x {m} bits)")
    ser = Resources(luts=cfg.phit_bits * max(1, math.ceil(cfg.flits / 4)), ffs=m + cfg.idx_bits)
    r.add(ser, f"serializer ({cfg.flits} flits of {cfg.phit_bits} bits)")
    r.add(Resources(luts=cfg.phit_bits, ffs=m + cfg.idx_bits), "deserializer")
    if cfg.crc:
        crc_in = m + cfg.seq_bits
        crc = Resources(luts=2 * 32 * math.ceil(crc_in / 2 / 5), ffs=2 * 32)
        r.add(crc, f"CRC-32 generator and checker over {crc_in} bits")
    chan = Resources(luts=f * math.ceil(cfg.latency / 32) + (3 + cfg.seq_bits) * math.ceil(cfg.credit_latency / 32),
                     ffs=2 * (f + 3 + cfg.seq_bits))
    r.add(chan, f"channel model: {cfg.latency}-cycle delay line of {f} bits as SRL32 shift registers "
                "(stands for the transceivers)")
    cnt = math.ceil(math.log2(max(2, cfg.credits + 1)))
    r.add(Resources(luts=6 * cnt + 4 * cfg.seq_bits + 2 * math.ceil(math.log2(cfg.timeout + 1)),
                    ffs=2 * cnt + 4 * cfg.seq_bits + math.ceil(math.log2(cfg.timeout + 1))),
          "credit counter, sequence numbers, retransmission timer")
    return r


INSTR_BITS = 489  #: the node program ISA's instruction word (pymtl_fp.cluster.isa.INSTR_BITS; checked by a test)


def router_resources(cfg) -> Resources:
    """Estimate for a router/DMA (``pymtl_fp.cluster.router_config.RouterConfig``): program memory
    and gather table (asynchronous reads: LUT RAM), output buffers and scratch FIFO (as written
    with asynchronous reads they map to LUT RAM too; a block-RAM version needs a registered read),
    the scalar unit's requantizer and hash, the sequencer's registers and counters."""
    sb = cfg.stream_bits
    r = Resources()

    def lutram(width, depth):
        luts = math.ceil(depth / 64) * math.ceil(width / 3) * 4
        return Resources(luts=luts, lutram_luts=luts)
    r.add(lutram(INSTR_BITS, cfg.prog_depth), f"program memory ({cfg.prog_depth} x {INSTR_BITS} bits)")
    r.add(lutram(32, cfg.table_depth), f"gather table ({cfg.table_depth} x 32 bits)")
    r.add(lutram(sb, 3 * cfg.out_depth), f"3 output buffers ({cfg.out_depth} x {sb} bits each)")
    r.add(lutram(sb, cfg.scratch_depth), f"scratch FIFO ({cfg.scratch_depth} x {sb} bits)")
    r.add(requant_resources(sb, sb), "bias unit: requantizer and hash")
    r.add(Resources(luts=4 * 66 + 2 * 32, ffs=300), "bias unit: 66-bit subtract and saturation, unit registers")
    r.add(Resources(ffs=32 * 20 + 4 * 76 + 2 * sb + 200, luts=32 * 12 + 800),
          "sequencer, feeder, drainer: counters, queues, skid FIFO, status counters")
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
