"""Elaboration parameters of the engine (one frozen dataclass, validated, with named presets).

Only things that change the hardware live here: the MAC array size, word widths, on-chip buffer
depths, the ``bwd_weight`` drain's rows per cycle, the stream word width and whether stochastic
rounding is built.  Layer shapes, strides, padding, shifts, rounding mode and buffer addresses
are **runtime** command fields (:mod:`pymtl_fp.engine.msgs`), so one build serves every layer
that fits its buffers.

Restriction (documented, checked here): the array is square, ``rows == cols``.  ``bwd_data``
uses the same weight tile transposed, which a square array does with a wiring change only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pymtl_fp.cost.latency import PIPELINE_LATENCY
from pymtl_fp.verilate import module_name

#: largest MAC array side the engine is built with
MAX_ARRAY_SIDE = 32
#: deepest buffer (act, weight, bias) in words: the 16-bit address fields of the engine's commands
MAX_BUFFER_DEPTH = 65536
#: the buffer depths of a cluster node's engine unless given (``cluster.config.engine_for_net``,
#: ``pymtl-fp train --engine cluster``)
CLUSTER_DEPTHS = {"act_depth": 2048, "weight_depth": 512, "bias_depth": 64}


@dataclass(frozen=True)
class EngineConfig:
    """One engine build.

    * ``rows`` x ``cols``: MAC array (output-channel lanes x input-channel lanes); ``P = rows``.
    * ``act_bits``, ``weight_bits``, ``grad_bits``: signed word widths of activations, weights
      and gradients (results are saturated to them); ``acc_bits``: the exact accumulator.
    * ``act_depth``: words (of ``P`` elements) in each activation buffer (X, D, O);
      ``weight_depth``: words (of ``P*P`` elements) in each weight buffer (W, G);
      ``bias_depth``: words (of ``P`` accumulator-wide elements) of the bias buffer.
    * ``drain_rows`` (``DR``, divides ``P``): ``dw`` rows the ``bwd_weight`` drain writes back per
      cycle (``P / DR`` cycles per tile, one more for a ``db`` row); the requantizer bank has
      ``DR * P`` lanes (:class:`~pymtl_fp.engine.RequantBankRTL.RequantBankRTL`).  ``DR > 1`` pays
      off when a tile accumulates over fewer than ``P`` steps (fully connected layers at a small
      batch), where the drain, not the array, sets the pace (:func:`pymtl_fp.timing.bwd_weight_cycles`).
    * ``stream_bits``: width of one stream element (sign-extended); must hold an accumulator
      value (biases are loaded in accumulator units).
    * ``stream_lanes`` (``E``): elements per ``din``/``dout`` beat; ``din``/``dout`` are
      ``E * stream_bits`` wide, lane ``i`` of a beat in bits ``[i*stream_bits, (i+1)*stream_bits)``.
      ``E`` divides ``P`` (``1 <= E <= P``), so a beat never crosses a buffer word (X, D, O, B
      words have ``P`` lanes, W and G words ``P*P``).  The presets and the cluster use ``E = 1``.
    * ``stochastic``: build the stochastic-rounding hash (else only ``nearest`` is accepted).
    * ``pipelined_requant``: requantize in a pipeline of
      :data:`~pymtl_fp.primitives.RequantPipeRTL.LATENCY` stages
      (:class:`~pymtl_fp.primitives.RequantPipeRTL.RequantPipeRTL`, its hash's products split to
      fit one DSP48 each) instead of in one combinational path (``rq_latency``).
    * ``pipelined_mac``: the MAC array with registered operands, products and row sums
      (:class:`~pymtl_fp.engine.MacArrayPipeRTL.MacArrayPipeRTL`), its results
      :data:`~pymtl_fp.engine.MacArrayPipeRTL.LATENCY` cycles later (``mac_latency``).
    * ``dsp_mac`` (needs ``pipelined_mac``): the pipelined MAC array accumulating in the DSP blocks
      (:class:`~pymtl_fp.engine.MacArrayDspRTL.MacArrayDspRTL`: each lane's operand, product and
      accumulator registers and its adder are one DSP48E1's; reduce mode sums a row's ``P``
      accumulators when it reads them), the same results in the same cycles as
      ``MacArrayPipeRTL`` with fewer LUTs and far fewer FFs (docs/verilog.md).
    * ``registered_taps``: the address generator's tap bounds in registers
      (:class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRegRTL`, ``--pipeline ...,taps``): the same outputs
      in the same cycles, the tap arithmetic off the path from the loop counters to the nest's end
      flags (the engine's longest routed path on an ECP5; docs/verilog.md), for about 1.75k LUTs more.
    * ``pipelined_addr``: a register stage between the address generator and the buffers
      (:class:`~pymtl_fp.engine.EngineStepAddrRTL.EngineStepAddrRTL`; ``addr_latency``).
      With any of them, EX writes its results ``wb_latency = addr_latency + mac_latency +
      rq_latency`` cycles later and every compute command takes that many cycles more.
    * ``pipelined_cmd``: a command register in front of the acceptance
      (:class:`~pymtl_fp.engine.EngineAcceptRTL.EngineAcceptRTL`, ``cmd_latency``): ``cmd.rdy``
      depends on registers only, and a command starts ``cmd_latency`` cycles after its handshake
      at the earliest (the next one's handshake is in the cycle it starts, so a stream of
      commands offered back to back is one cycle longer in all).  With all four the engine is built for
      a 200 MHz clock (docs/verilog.md, "Four pipelines for 200 MHz").
    """

    rows: int = 2
    cols: int = 2
    act_bits: int = 8
    weight_bits: int = 8
    grad_bits: int = 8
    acc_bits: int = 32
    act_depth: int = 256
    weight_depth: int = 64
    bias_depth: int = 16
    drain_rows: int = 1
    stream_bits: int = 32
    stream_lanes: int = 1
    stochastic: bool = True
    pipelined_requant: bool = False
    pipelined_mac: bool = False
    pipelined_addr: bool = False
    pipelined_cmd: bool = False
    dsp_mac: bool = False
    registered_taps: bool = False
    name: str = ""

    def __post_init__(self):
        for f in ("rows", "cols", "act_bits", "weight_bits", "grad_bits", "acc_bits", "act_depth",
                  "weight_depth", "bias_depth", "drain_rows", "stream_bits", "stream_lanes"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"EngineConfig.{f} must be an int, got {v!r}")
        for f in ("stochastic", "pipelined_requant", "pipelined_mac", "pipelined_addr", "pipelined_cmd", "dsp_mac",
                  "registered_taps"):
            if not isinstance(getattr(self, f), bool):
                raise TypeError(f"EngineConfig.{f} must be a bool, got {getattr(self, f)!r}")
        if self.dsp_mac and not self.pipelined_mac:
            raise ValueError("dsp_mac needs pipelined_mac: the DSP48's input, product and accumulator registers are "
                             "the MAC pipeline's stages")
        if not 1 <= self.rows <= MAX_ARRAY_SIDE or not 1 <= self.cols <= MAX_ARRAY_SIDE:
            raise ValueError(f"array must be 1..{MAX_ARRAY_SIDE} x 1..{MAX_ARRAY_SIDE}, got {self.rows}x{self.cols}")
        if self.rows != self.cols:
            raise ValueError(
                f"the engine needs a square MAC array (rows == cols; bwd_data reads the weight "
                f"tile transposed), got {self.rows}x{self.cols}")
        for f in ("act_bits", "weight_bits", "grad_bits"):
            if not 2 <= getattr(self, f) <= 24:
                raise ValueError(f"EngineConfig.{f} must be in 2..24, got {getattr(self, f)}")
        if not 2 * self.data_bits + 2 <= self.acc_bits <= 64:
            raise ValueError(
                f"acc_bits must be in 2*data_bits+2 = {2 * self.data_bits + 2}..64, got {self.acc_bits}")
        if not self.acc_bits <= self.stream_bits <= 64:
            raise ValueError(f"stream_bits must be in acc_bits..64 = {self.acc_bits}..64, "
                             f"got {self.stream_bits}")
        for f, label, sym, why in (("stream_lanes", "stream_lanes (E)", "E", ", so a beat never crosses a buffer word"),
                                   ("drain_rows", "drain_rows", "DR", "")):
            v = getattr(self, f)
            if not 1 <= v <= self.rows or self.rows % v:
                raise ValueError(f"{label} must divide the array side P = {self.rows} (1 <= {sym} <= P{why}), "
                                 f"got {v}")
        for f in ("act_depth", "weight_depth", "bias_depth"):
            if not 2 <= getattr(self, f) <= MAX_BUFFER_DEPTH:
                raise ValueError(f"EngineConfig.{f} must be in 2..{MAX_BUFFER_DEPTH}, got {getattr(self, f)}")

    # ---- derived ---------------------------------------------------------------------------
    @property
    def P(self) -> int:
        """Lanes per side of the (square) array."""
        return self.rows

    @property
    def macs_per_cycle(self) -> int:
        return self.rows * self.cols

    @property
    def E(self) -> int:
        """Elements per ``din``/``dout`` beat (``stream_lanes``)."""
        return self.stream_lanes

    @property
    def beat_bits(self) -> int:
        """Width of ``din``/``dout``: ``stream_lanes * stream_bits``."""
        return self.stream_lanes * self.stream_bits

    @property
    def data_bits(self) -> int:
        """Width of a buffer element (the widest of activations, weights, gradients)."""
        return max(self.act_bits, self.weight_bits, self.grad_bits)

    @property
    def mac_latency(self) -> int:
        """Cycles the MAC array's results follow stage B (0: combinational)."""
        return PIPELINE_LATENCY["mac"] if self.pipelined_mac else 0

    @property
    def rq_latency(self) -> int:
        """Cycles the requantized values follow the requantizer's inputs (0: combinational)."""
        return PIPELINE_LATENCY["requant"] if self.pipelined_requant else 0

    @property
    def addr_latency(self) -> int:
        """Cycles between the address generator and the buffers' reads (0: the same cycle)."""
        return PIPELINE_LATENCY["addr"] if self.pipelined_addr else 0

    @property
    def cmd_latency(self) -> int:
        """Cycles from a command's handshake to its start at the earliest (0: the same cycle)."""
        return PIPELINE_LATENCY["cmd"] if self.pipelined_cmd else 0

    @property
    def wb_latency(self) -> int:
        """Cycles every compute command takes more than without pipelines (its writes follow its
        steps by that much more)."""
        return self.addr_latency + self.mac_latency + self.rq_latency

    def params(self) -> dict:
        """Every elaboration parameter (the ``name`` label excluded)."""
        d = dataclasses.asdict(self)
        d.pop("name")
        return d

    def module_name(self) -> str:
        """The Verilog top-module name, encoding every elaboration parameter (short keys, so
        that the name stays readable and under :func:`module_name`'s hashing length)."""
        short = dict(r=self.rows, c=self.cols, a=self.act_bits, w=self.weight_bits, g=self.grad_bits,
                     acc=self.acc_bits, ad=self.act_depth, wd=self.weight_depth, bd=self.bias_depth,
                     dr=self.drain_rows, sb=self.stream_bits, sto=self.stochastic)
        if self.stream_lanes != 1:  # E = 1 keeps the names (and Verilator builds) it always had
            short["e"] = self.stream_lanes
        if self.pipelined_requant:  # likewise
            short["rqp"] = 1
        if self.pipelined_mac:
            short["mcp"] = 1
        if self.dsp_mac:
            short["dsp"] = 1
        if self.pipelined_addr:
            short["adp"] = 1
        if self.pipelined_cmd:
            short["cdp"] = 1
        if self.registered_taps:
            short["rtp"] = 1
        return module_name("EngineRTL", short)

    def replace(self, **changes) -> EngineConfig:
        return dataclasses.replace(self, **changes)


#: the pipelines an engine can be built with (EngineConfig.pipelined_<name>)
PIPELINES = tuple(PIPELINE_LATENCY)
#: ``--pipeline`` parts that choose a pipeline's structure, not a pipeline: their EngineConfig fields
#: (``dsp``: the MAC pipeline accumulating in the DSP blocks, ``dsp_mac``; the same cycles as ``mac``;
#: ``taps``: the address generator's tap bounds in registers, ``registered_taps``; no cycle more)
STRUCTURES = {"dsp": {"pipelined_mac": True, "dsp_mac": True}, "taps": {"registered_taps": True}}
#: the EngineConfig fields of an engine without any pipeline (``--pipeline none``)
NO_PIPELINES = {**{f"pipelined_{p}": False for p in PIPELINES}, "dsp_mac": False, "registered_taps": False}
#: the pipelines of the presets and of a cluster node's engine (:func:`pymtl_fp.cluster.config.engine_for_net`):
#: all four (the node's path 4.99 ns pre-route against 31.5 ns without, docs/verilog.md); the MAC array
#: in fabric (``dsp`` is not in the default: docs/verilog.md, "The presets' pipelines")
DEFAULT_PIPELINES = {**NO_PIPELINES, **{f"pipelined_{p}": True for p in PIPELINES}}


def pipeline_fields(text: str) -> dict:
    """A ``--pipeline`` option (``requant,mac``, ``all``, ``all,dsp``, ``none``, ...) as EngineConfig
    fields, every pipeline field given (the parts named on, the others off: ``requant,mac`` builds
    those two whatever the preset's default); ValueError (one line) for anything else."""
    parts = [p.strip() for p in str(text).split(",")]
    known = (*PIPELINES, *STRUCTURES)
    if parts == ["none"]:
        return dict(NO_PIPELINES)
    if "all" in parts and all(p == "all" or p in STRUCTURES for p in parts) and parts.count("all") == 1:
        parts = [p for p in parts if p != "all"] + list(PIPELINES)
    if not parts or any(p not in known for p in parts):
        raise ValueError(f"--pipeline {text!r}: choose from {', '.join(known)} (comma-separated), all "
                         f"(with a structure: all,dsp or all,taps) or none")
    fields = dict(NO_PIPELINES)
    fields.update({f"pipelined_{p}": True for p in parts if p in PIPELINES})
    for p in parts:
        fields.update(STRUCTURES.get(p, {}))
    return fields


PRESETS = {
    "tiny": EngineConfig(rows=2, cols=2, act_depth=256, weight_depth=128, bias_depth=16, name="tiny",
                         **DEFAULT_PIPELINES),
    "small": EngineConfig(rows=4, cols=4, act_depth=512, weight_depth=64, bias_depth=16, name="small",
                          **DEFAULT_PIPELINES),
    "medium": EngineConfig(rows=8, cols=8, act_depth=1024, weight_depth=64, bias_depth=16, name="medium",
                           **DEFAULT_PIPELINES),
}


def preset(name: str) -> EngineConfig:
    """A named preset (``tiny`` 2x2, ``small`` 4x4, ``medium`` 8x8), with :data:`DEFAULT_PIPELINES`."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown engine preset {name!r}; choose one of {', '.join(PRESETS)}") from None
