"""cocotb drivers for the emitted engine's AXI-Stream wrapper ``<top>_axis`` (cycle level, on the
Verilog): an AXI-Stream source for ``cmd`` and ``din``, a sink for ``dout``, each stalling with a
seeded probability, and :class:`EngineBench`, which resets the engine, runs one program (commands
packed by :func:`pymtl_fp.engine.encoding.pack`, din elements) and returns the dout elements.
With ``lanes`` (``E``, the kit's ``STREAM_LANES``) > 1, each LOAD's elements go out ``E`` per beat
and each STORE's beats are cut back to its ``count`` elements
(:func:`pymtl_fp.engine.encoding.stream_beats` / :func:`~pymtl_fp.engine.encoding.stream_elements`).

Protocol, as the emitted reference states it: one clock (rising edge), synchronous active-high
reset, a transfer when ``tvalid`` and ``tready`` are both high at a rising edge, ``cmd_tready``
combinational in ``cmd_tdata``/``cmd_tvalid``.  The bench therefore sets the inputs of a cycle
just after the rising edge and samples the handshakes in the read-only phase of the same cycle,
when the combinational outputs have settled.  The sources keep to the AXI-Stream rule that a
raised ``tvalid`` (and its data) stays until the transfer; the sink's ``tready`` may drop at any
cycle.  One coroutine drives all three streams so the run is reproducible from its seed.
"""

from __future__ import annotations

import random

from cocotb.triggers import ReadOnly, RisingEdge

from pymtl_fp.engine import encoding


class StreamSource:
    """Offers ``items`` on ``<name>_tdata/_tvalid``; before each new offer it waits a cycle with
    probability ``stall``."""

    def __init__(self, dut, name: str, items, stall: float, rng: random.Random):
        self.data, self.valid, self.ready = (getattr(dut, f"{name}_{s}") for s in ("tdata", "tvalid", "tready"))
        mask = (1 << len(self.data)) - 1
        self.items = [int(v) & mask for v in items]  # two's complement at the port's width
        self.stall, self.rng, self.sent, self.offering = stall, rng, 0, False

    def drive(self) -> None:
        if not self.offering and self.sent < len(self.items) and self.rng.random() >= self.stall:
            self.offering = True
            self.data.value = self.items[self.sent]
        self.valid.value = int(self.offering)

    def sample(self) -> None:
        if self.offering and self.ready.value == 1:
            self.sent += 1
            self.offering = False

    @property
    def done(self) -> bool:
        return self.sent == len(self.items)


class StreamSink:
    """Takes elements from ``<name>_tdata/_tvalid``; ``tready`` is low with probability ``stall``."""

    def __init__(self, dut, name: str, stall: float, rng: random.Random):
        self.data, self.valid, self.ready = (getattr(dut, f"{name}_{s}") for s in ("tdata", "tvalid", "tready"))
        self.stall, self.rng, self.items, self.accepting = stall, rng, [], False
        self.signed = True

    def drive(self) -> None:
        self.accepting = self.rng.random() >= self.stall
        self.ready.value = int(self.accepting)

    def sample(self) -> bool:
        """True when an element (a beat, with ``signed = False``) was taken this cycle."""
        if self.accepting and self.valid.value == 1:
            v = self.data.value
            self.items.append(v.to_signed() if self.signed else v.to_unsigned())
            return True
        return False


class EngineBench:
    """The engine behind its ``<top>_axis`` wrapper; the clock must already run on ``dut.clk``."""

    #: cycles dout must stay quiet, with all input taken and ``busy`` low, before a run ends
    QUIET = 64

    def __init__(self, dut, stall: float = 0.0, seed: int = 0, lanes: int = 1):
        if not 0.0 <= stall < 1.0:
            raise ValueError(f"stall must be in [0, 1), got {stall}")
        if lanes < 1 or len(dut.din_tdata) % lanes:
            raise ValueError(f"lanes={lanes} does not divide the {len(dut.din_tdata)}-bit din_tdata")
        self.dut, self.stall, self.seed, self.lanes = dut, stall, seed, lanes

    async def reset(self, cycles: int = 2) -> None:
        dut = self.dut
        await RisingEdge(dut.clk)  # out of a read-only phase a previous run may have ended in
        dut.reset.value = 1
        dut.cmd_tvalid.value = 0
        dut.din_tvalid.value = 0
        dut.dout_tready.value = 0
        for _ in range(cycles):
            await RisingEdge(dut.clk)
        dut.reset.value = 0

    async def run(self, cmds, din, max_cycles: int = 5_000_000) -> tuple:
        """Run one program from reset: ``cmds`` (field dicts), ``din`` (ints).  Returns
        ``(dout elements, cycles)``; raises ``TimeoutError`` naming what was left when the engine
        has not finished in ``max_cycles``."""
        rng = random.Random(self.seed)
        E, bits = self.lanes, len(self.dut.din_tdata) // self.lanes
        counts = {op: [int(c.get("count", 0)) for c in cmds if int(c.get("op", 0)) == encoding.OP[op]]
                  for op in ("load", "store")}
        if E > 1:
            din = encoding.stream_beats(counts["load"], list(din), E, bits)
        cmd = StreamSource(self.dut, "cmd", [encoding.pack(**c) for c in cmds], self.stall, random.Random(rng.random()))
        data = StreamSource(self.dut, "din", din, self.stall, random.Random(rng.random()))
        out = StreamSink(self.dut, "dout", self.stall, random.Random(rng.random()))
        out.signed = E == 1
        await self.reset()
        quiet = cycles = 0
        while quiet <= self.QUIET:
            if cycles >= max_cycles:
                raise TimeoutError(f"engine not done after {max_cycles} cycles: commands {cmd.sent}/"
                                   f"{len(cmd.items)}, din {data.sent}/{len(data.items)}, dout {len(out.items)}, "
                                   f"busy {self.dut.busy.value}")
            await RisingEdge(self.dut.clk)
            for port in (cmd, data, out):
                port.drive()
            await ReadOnly()
            cmd.sample()
            data.sample()
            took = out.sample()
            cycles += 1
            idle = cmd.done and data.done and self.dut.busy.value == 0
            quiet = quiet + 1 if idle and not took else 0
        if E > 1:
            return encoding.stream_elements(counts["store"], out.items, E, bits), cycles
        return out.items, cycles
