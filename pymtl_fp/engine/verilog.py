"""Verilog of the engine: translation, ``verilator --lint-only -Wall`` and the engine's waivers.

:data:`ENGINE_WAIVERS` = the shared :data:`pymtl_fp.lint.PYMTL3_WAIVERS` plus four narrow
message-matched waivers, each with its reason; every other warning fails
(``tests/test_engine_verilog.py``).
"""

from __future__ import annotations

from pathlib import Path

from pymtl_fp.lint import PYMTL3_WAIVERS, lint, translate_verilog

ENGINE_WAIVERS = {
    **PYMTL3_WAIVERS,
    ("WIDTHEXPAND", "Operator ASSIGN expects 32 bits on the Assign RHS, but Assign RHS's CONST '1'h0' generates 1 bits."): (
        "PyMTL3 translates every `for i in range(n)` of an update block as "
        "`for (int unsigned i = 1'd0; ...)`: the 1-bit literal initialising a 32-bit loop "
        "variable is PyMTL3's output, not our logic (only this exact message is waived)"
    ),
    ("UNUSEDSIGNAL", "Bits of signal are not used: '*addr*'[31:*]"): (
        "buffer addresses are computed on 32 bits (exact for any runtime shape) and truncated to "
        "each buffer's address width; the case validation guarantees they fit, so the high bits "
        "are unused by design"
    ),
    ("UNUSEDSIGNAL", "Bits of signal are not used: 'cmd'*"): (
        "each unit receives the whole command (the offered one, or EX's command register) and decodes "
        "only its own fields: the address generator geometry and addresses, the range unit no "
        "rounding fields, the loader/storer target/addr/count, the drain the op code, the write-back "
        "the op, rounding and stride fields; only ports named cmd are waived"
    ),
    ("UNUSEDSIGNAL", "Bits of signal are not used: 'cmd_in'*"): (
        "the address generator's tap bounds (AddrTapRegsRTL, --pipeline taps) take the command "
        "its next start starts (EX's command register's input) and read only its op and geometry "
        "fields; only ports named cmd_in are waived"
    ),
}


def translate(cfg, out_dir) -> Path:
    """Translate the engine of ``cfg`` to ``out_dir/<cfg.module_name()>.v``."""
    from pymtl_fp.engine.EngineRTL import EngineRTL

    return translate_verilog(EngineRTL(cfg), cfg.module_name(), out_dir)


def lint_engine(cfg, out_dir):
    """Translate and lint; returns a :class:`pymtl_fp.lint.LintResult`."""
    return lint(translate(cfg, out_dir), cfg.module_name(), ENGINE_WAIVERS)
