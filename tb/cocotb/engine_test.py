"""The cocotb test module for the engine's ``<top>_axis`` wrapper: runs every job of the JSON file
named by ``PYMTL_FP_COCOTB_JOBS`` (a list of ``{"program", "out", "stall", "seed"}`` and optionally
``"lanes"``, the kit's ``STREAM_LANES``, default 1; the program
in the format of :mod:`.program_file`), each from reset, and writes the dout elements (one signed
decimal per line) to ``out`` and ``{"cycles": ...}`` to ``out + ".json"``.

Run by :func:`pymtl_fp.tb.cocotb.runner.run` (cocotb loads it inside the Verilator simulation).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
from cocotb.clock import Clock

from pymtl_fp.tb.cocotb import program_file
from pymtl_fp.tb.cocotb.engine_driver import EngineBench

JOBS_ENV = "PYMTL_FP_COCOTB_JOBS"


@cocotb.test()
async def engine_programs(dut):
    jobs = json.loads(Path(os.environ[JOBS_ENV]).read_text())
    Clock(dut.clk, 10, unit="ns").start()
    for job in jobs:
        cmds, din = program_file.read(job["program"])
        bench = EngineBench(dut, stall=job.get("stall", 0.0), seed=job.get("seed", 0), lanes=job.get("lanes", 1))
        dout, cycles = await bench.run(cmds, din)
        Path(job["out"]).write_text("".join(f"{v}\n" for v in dout))
        Path(job["out"] + ".json").write_text(json.dumps({"cycles": cycles, "dout": len(dout)}))
        dut._log.info("%s: %d cycles, %d dout elements (stall %.0f%%)", job["program"], cycles, len(dout),
                      100 * job.get("stall", 0.0))
