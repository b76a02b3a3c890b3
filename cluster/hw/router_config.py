"""Elaboration parameters of a node's router/DMA (one frozen dataclass, validated, with presets).

Only what changes the hardware lives here: the stream word width and the depths of the program
memory, the gather table, the scratch FIFO and the output buffers towards the links and the host.
The program itself (:mod:`pymtl_fp.cluster.isa`) is runtime data, written through the program bus
while reset is high, so one build serves every program that fits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pymtl_fp.cluster import isa
from pymtl_fp.cost.latency import UNIT_PIPE_LATENCY, router_units_pipelined

#: the per-cycle states the router reports (``st_state`` codes 0..5)
STATES = ("compute", "io", "stall_in", "stall_out", "engine", "done")


class RouterConfigError(ValueError):
    pass


@dataclass(frozen=True)
class RouterConfig:
    """* ``stream_bits``: the width of one element (the engine's ``stream_bits``);
    * ``stream_lanes``: elements per beat on every stream (``E``, the engine's ``stream_lanes``; a
      power of two): links, the host side channel, ``din``/``dout`` and the output buffers move
      beats of ``E * stream_bits`` bits, the scratch FIFO takes and gives up to ``E`` elements an
      edge, its scalar units stay element by element;
    * ``prog_depth``: instructions the program memory holds (at most ``2**14``);
    * ``table_depth``: gather-table entries (runs of a relayout between array sides);
    * ``scratch_depth``: elements of the scratch FIFO (copies, bias updates, relayouts);
    * ``out_depth``: elements of each output buffer (towards ``fwd_out``, ``bwd_out``, the host):
      ``out_beats`` = ``out_depth / E`` beats of ``E`` elements.
    * ``pipelined_units``: BIAS and REQUANT requantize in a pipeline
      (:class:`~pymtl_fp.cluster.hw.RouterUnitPipeRTL.RouterUnitPipeRTL`; REQUANT's layout walk with running
      sums, :class:`~pymtl_fp.cluster.hw.RouterUnitWalkSumRTL.RouterUnitWalkSumRTL`), for a 200 MHz clock:
      each takes ``unit_latency`` cycles more.  A node's router has it when its engine has
      ``pipelined_requant`` (:func:`~pymtl_fp.cluster.hw.node.router_config_for`).
    * ``pipelined_seq``: the sequencer registers the instruction it reads from the program memory
      before decoding it (an instruction register, fed by the memory's synchronous read port, which
      prefetches the instruction after the current one, so no instruction takes a cycle more), for the
      same clock; a node's router has it by the same rule as ``pipelined_units``.  The program bus must
      then be idle for the last :data:`BOOT_EDGES` edges of reset (the memory's first two reads), else
      the router spends the missing edges after reset before its first instruction.
      With it the output buffers register their writes too (``RouterDeliverWregRTL``: a beat from
      the engine's ``dout`` or a link waits one edge in a register before it enters a buffer's memory,
      and the buffer's head reads that register while it holds the head), with no cycle more.
    * ``residual``: the residual unit (ADD, MASK, GAP, GAPB: :mod:`pymtl_fp.cluster.isa.residual`), for
      residual networks' adds and average pools; off by default (about 1.7k LUTs and 14 DSPs that a
      chain of conv/pool/fc layers does not use).  A router without it must not be given those kinds:
      the RTL retires one in a cycle, doing nothing, and the CL model refuses it.
    """

    stream_bits: int = 32
    stream_lanes: int = 1
    prog_depth: int = 1024
    table_depth: int = 256
    scratch_depth: int = 4096
    out_depth: int = 4096
    pipelined_units: bool = False
    pipelined_seq: bool = False
    residual: bool = False
    name: str = ""

    def __post_init__(self):
        for f, lo, hi in (("stream_bits", 8, 64), ("prog_depth", 2, 1 << isa.PC_BITS),
                          ("table_depth", 1, 1 << isa.TABLE_ADDR_BITS), ("scratch_depth", 2, 1 << 20),
                          ("out_depth", 2, 1 << 20)):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                raise RouterConfigError(f"RouterConfig.{f} must be an int in [{lo}, {hi}], got {v!r}")
        for f in _OPTIONAL:
            if not isinstance(getattr(self, f), bool):
                raise RouterConfigError(f"RouterConfig.{f} must be a bool, got {getattr(self, f)!r}")
        E = self.stream_lanes
        if not isinstance(E, int) or isinstance(E, bool) or E < 1 or E & (E - 1) or E > 16:
            raise RouterConfigError(f"RouterConfig.stream_lanes must be a power of two in [1, 16], got {E!r}")
        if 2 * E > self.scratch_depth:
            raise RouterConfigError(f"RouterConfig.scratch_depth={self.scratch_depth} must hold two beats of "
                                    f"stream_lanes={E}")
        if 2 * E > self.out_depth:
            raise RouterConfigError(f"RouterConfig.out_depth={self.out_depth} must hold two beats of "
                                    f"stream_lanes={E}")

    @property
    def instr_bits(self) -> int:
        """Bits of a program-memory word: the ISA's instruction (:data:`pymtl_fp.cluster.isa.INSTR_BITS`)."""
        return isa.INSTR_BITS

    @property
    def out_beats(self) -> int:
        """Beats each output buffer holds (``out_depth`` elements, ``E`` a beat)."""
        return max(2, self.out_depth // self.stream_lanes)

    @property
    def unit_latency(self) -> int:
        """Cycles a BIAS or REQUANT takes more than ``count + 2`` (0: the units without pipelines)."""
        return UNIT_PIPE_LATENCY if self.pipelined_units else 0

    def params(self) -> dict:
        """Every elaboration parameter (what the Verilog module name encodes; ``pipelined_units``,
        ``pipelined_seq`` and ``residual`` only when set, so the routers without them keep their names and
        builds)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "name" and (f.name not in _OPTIONAL or getattr(self, f.name))}

    def module_name(self) -> str:
        from pymtl_fp.verilate import module_name

        return module_name("RouterRTL", self.params())

    def replace(self, **changes) -> RouterConfig:
        return dataclasses.replace(self, **changes)


#: flags the module name encodes only when set
_OPTIONAL = ("pipelined_units", "pipelined_seq", "residual")

#: reset edges the program bus must leave idle at the end of reset for a router with ``pipelined_seq``
#: to run its first instruction at cycle 0 (its program memory's read of instruction 0, then of the next)
BOOT_EDGES = 2

PRESETS = {
    "small": RouterConfig(prog_depth=256, table_depth=64, scratch_depth=1024, out_depth=1024, name="small"),
    "cluster": RouterConfig(name="cluster"),
}


def status_ports(cfg: RouterConfig) -> list:
    """The router's status outputs, the same at every level and for every configuration (so nodes
    of different configurations share one interface): ``(name, bits, count)`` (``count`` None: one
    port; else a list of that many).  Codes and meanings: :mod:`pymtl_fp.cluster.hw.RouterRTL`."""
    return [
        ("st_state", 3, None), ("st_cnt", 32, len(STATES)), ("st_mark_val", 1, None),
        ("st_mark_id", isa.MARK_BITS, None), ("st_done_val", 1, None), ("st_done_id", isa.DONE_BITS, None),
        ("st_cycle", 32, None), ("st_halted", 1, None), ("st_pc", isa.PC_BITS, None), ("st_iter", 16, None),
        ("st_sent", 32, 3), ("st_recv", 32, 3), ("st_out_peak", 32, 3),
        ("st_scratch_peak", 32, None), ("st_error", 1, None),
    ]


def declare_status_ports(s, cfg: RouterConfig, Port) -> None:
    """Give component ``s`` the status ports (``Port``: ``OutPort``)."""
    for name, bits, count in status_ports(cfg):
        setattr(s, name, Port(bits) if count is None else [Port(bits) for _ in range(count)])


def preset(name: str) -> RouterConfig:
    if name not in PRESETS:
        raise RouterConfigError(f"unknown router preset {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name]


def router_config_for(ecfg, rcfg: RouterConfig | None = None) -> RouterConfig:
    """The router config of a node with engine ``ecfg``: element width and beat from the engine, and
    pipelined scalar units and sequencer when the engine pipelines its requantizer
    (``pipelined_requant``: the node's every requantizer for the same clock)."""
    rcfg = rcfg or RouterConfig()
    piped = router_units_pipelined(ecfg)
    want = (ecfg.stream_bits, ecfg.stream_lanes, piped, piped)
    if (rcfg.stream_bits, rcfg.stream_lanes, rcfg.pipelined_units, rcfg.pipelined_seq) == want:
        return rcfg
    return rcfg.replace(stream_bits=ecfg.stream_bits, stream_lanes=ecfg.stream_lanes,
                        pipelined_units=piped, pipelined_seq=piped)
