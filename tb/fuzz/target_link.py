"""Fuzz target ``link``: one FPGA-to-FPGA link between a stalling source and a stalling sink.

A case is drawn configuration first, small first (message and phit widths, latencies, credits,
window, CRC), then the message sequence, the stall probabilities and seed, and at ``rtl`` (with
CRC on) a fault plan for the forward channel (bit flips, bursts, lost flits).  Properties
(:func:`pymtl_fp.tb.link_harness.run_link`):

* every level delivers exactly the sent sequence (scoreboard: nothing lost, duplicated,
  reordered or corrupted), no message earlier than the level promises;
* ``rtl``/``verilator`` without faults: the receive buffer never overflows, no retransmission
  happens, and every handshake at both ends happens in the cycle ``LinkCL`` (the timing model)
  says -- the cycle-level spec of :mod:`pymtl_fp.link`.

``verilator`` draws from two fixed configurations (one Verilator build each per worker).
Mutation ``credit-off-by-one``: the sender's credit counter starts at ``credits + 1``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from pymtl_fp.levels import LEVELS
from pymtl_fp.tb.fuzz.mutate import Mutation
from pymtl_fp.tb.fuzz.targets import FuzzTarget

STALLS = (0.0, 0.2, 0.5, 0.8)


def _cfg(d):
    from pymtl_fp.link import LinkConfig

    return LinkConfig(**d)


@st.composite
def case_strategy(draw, level):
    if level == "verilator":
        cfg = draw(st.sampled_from([
            dict(msg_bits=16, phit_bits=8, latency=2, credits=4, credit_latency=2, crc=True, window=None),
            dict(msg_bits=24, phit_bits=5, latency=3, credits=2, credit_latency=1, crc=False, window=None),
        ]))
    else:
        msg_bits = draw(st.integers(1, 48))
        phit_bits = draw(st.integers(max(1, -(-msg_bits // 8)), 24))
        cfg = dict(msg_bits=msg_bits, phit_bits=phit_bits, latency=draw(st.integers(1, 8)),
                   credits=draw(st.integers(1, 10)), credit_latency=draw(st.integers(1, 8)),
                   crc=draw(st.booleans()), window=draw(st.sampled_from([None, 2, 4, 8, 16])))
    msgs = draw(st.lists(st.integers(0, 2 ** cfg["msg_bits"] - 1), min_size=1, max_size=30))
    case = dict(cfg=cfg, msgs=msgs, src_stall=draw(st.sampled_from(STALLS)),
                sink_stall=draw(st.sampled_from(STALLS)), seed=draw(st.integers(0, 2**16)), faults=None)
    if level == "rtl" and cfg["crc"] and draw(st.booleans()):
        case["faults"] = dict(seed=draw(st.integers(0, 2**16)),
                              bit_rate=draw(st.sampled_from([0.0, 0.01, 0.05])),
                              burst_rate=draw(st.sampled_from([0.0, 0.01])),
                              drop_rate=draw(st.sampled_from([0.0, 0.01, 0.03])))
    return case


def strategy(level):
    return case_strategy(level)


def limits(case):
    """A replayed link case: a link configuration the link accepts, messages that fit its width,
    stalls at most 0.95, fault rates at most 0.1."""
    from pymtl_fp.tb.fuzz import case_limits as cl
    from pymtl_fp.tb.link_faults import FaultPlan

    cfg = cl._get(case, "cfg", "")
    msg_bits = cl.integer(cfg, "msg_bits", 1, 64, "cfg")
    cl.integer(cfg, "phit_bits", 1, 64, "cfg")
    cl.integer(cfg, "latency", 1, 4096, "cfg")
    cl.integer(cfg, "credits", 1, 4096, "cfg")
    cl.integer(cfg, "credit_latency", 1, 4096, "cfg")
    try:
        _cfg(cfg)
    except (TypeError, ValueError) as exc:
        raise cl.CaseLimitError(f"cfg: {exc}") from None
    cl.integers(case, "msgs", 0, 2**msg_bits - 1)
    cl.number(case, "src_stall", 0.0, cl.MAX_STALL)
    cl.number(case, "sink_stall", 0.0, cl.MAX_STALL)
    cl.integer(case, "seed", 0, cl.SEED_MAX)
    faults = cl._get(case, "faults", "")
    if faults is not None:
        cl.integer(faults, "seed", 0, cl.SEED_MAX, "faults")
        for key in ("bit_rate", "burst_rate", "drop_rate"):
            if isinstance(faults, dict) and key in faults:
                cl.number(faults, key, 0.0, cl.MAX_FAULT_RATE, "faults")
        try:
            FaultPlan(**faults)
        except (TypeError, ValueError) as exc:
            raise cl.CaseLimitError(f"faults: {exc}") from None


def check(case, level, ctx):
    from pymtl_fp.tb.link_faults import FaultPlan
    from pymtl_fp.tb.link_harness import run_link

    cfg = _cfg(case["cfg"])
    faults = FaultPlan(**case["faults"]) if case.get("faults") else None
    kw = dict(src_stall=case["src_stall"], sink_stall=case["sink_stall"], seed=case["seed"])
    run = run_link(level, cfg, case["msgs"], faults=faults, **kw)
    run.scoreboard().assert_ok(f"{level} {cfg.describe()}")
    lat = run.latencies
    if level == "fl":
        assert min(lat) >= cfg.latency, f"fl delivered a message after {min(lat)} < latency {cfg.latency} cycles"
        return
    if level == "cl" or faults is not None:
        if faults is None:
            assert min(lat) >= cfg.zero_load_latency, f"{level}: latency {min(lat)} < {cfg.zero_load_latency}"
        return
    assert run.stats.get("overflow", 0) == 0, f"{level}: receive buffer overflowed: {run.stats}"
    assert run.stats.get("retransmissions", 0) == 0, f"{level}: retransmissions without faults: {run.stats}"
    cl = run_link("cl", cfg, case["msgs"], **kw)
    assert run.send_cycles == cl.send_cycles, (
        f"{level}: recv handshakes at {run.send_cycles}, the timing model (LinkCL) says {cl.send_cycles}")
    assert run.arrival_cycles == cl.arrival_cycles, (
        f"{level}: send handshakes at {run.arrival_cycles}, the timing model (LinkCL) says {cl.arrival_cycles}")


def coverage(case):
    c = case["cfg"]
    flits = -(-c["msg_bits"] // c["phit_bits"])
    f = case.get("faults")
    return (f"msg{c['msg_bits']}/phit{c['phit_bits']} F{flits} L{c['latency']} C{c['credits']} "
            f"W{c['window'] or 'auto'} crc{int(c['crc'])} stall{case['src_stall']}/{case['sink_stall']}"
            + (" faults" if f else ""))


MUTATIONS = {
    "credit-off-by-one": Mutation(
        name="credit-off-by-one",
        description=("the sender's credit counter resets to credits + 1 "
                     "(one more message than the receive buffer holds)"),
        module="pymtl_fp.link.CreditCounterRTL",
        replacements=(("nb = clog2(credits + 1)\n INIT = Bits(nb, credits)",
                       "nb = clog2(credits + 2)\n        INIT = Bits(nb, credits + 1)"),),
        patch=(("pymtl_fp.link.LinkTxRTL", "CreditCounterRTL", "CreditCounterRTL"),),
        levels=("rtl",),
    ),
}

TARGET = FuzzTarget(
    name="link",
    description="one link: exact delivery under stalls and faults; RTL cycle-exact with the timing model",
    levels=LEVELS,
    strategy=strategy,
    check=check,
    coverage=coverage,
    mutations=MUTATIONS,
    case_keys=("cfg", "msgs", "src_stall", "sink_stall", "seed", "faults"),
    limits=limits,
)
