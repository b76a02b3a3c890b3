"""``pymtl-fp bench link``: measured bandwidth, latency and retransmissions of the link models.

Sweeps phit widths x channel latencies x credit counts at one level, with random faults at a
given per-flit rate (RTL only), and prints for each configuration:

* the achieved bandwidth (payload bits per cycle at the sink, steady state, source always valid,
  sink always ready) next to the analytical bound ``msg_bits * min(1/flits,
  min(credits, window)/round_trip)``, and the flits, faults and retransmissions of that run;
* the mean and max message latency (handshake on ``recv`` -> handshake on ``send``) in a second
  run at an offered load of ``--load`` x the bound (a saturating source would only measure how
  deep the sender's buffer is), next to the zero-load latency ``1 + flits + latency``.
  A second table
finds, per (phit, latency), the credit count below which bandwidth drops -- measured without
faults, next to the analytical value ``ceil(round_trip / flits)`` (round trip x message rate).
Figures only: nothing here passes or fails on time.
"""

from __future__ import annotations

import random
import time

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError
from pymtl_fp.levels import LEVELS

HELP = "link bandwidth / latency / retransmissions sweep and the credit knee, measured vs analytical"


#: the sweep's defaults, and --quick's (explicit options override either)
FULL = dict(phits="8,16,64", latencies="4,32", credits="2,8,32", messages=200)
QUICK = dict(phits="8,32", latencies="4", credits="2,8", messages=60)
MAX_MESSAGES = 100_000
MAX_SWEEP_VALUE = 4096


def _int_list(text: str, option: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",")]  # (an empty item is an error, not skipped)
    except ValueError:
        raise UserError(f"{option} {text}: expected a comma-separated list of integers") from None
    if not vals or any(not 1 <= v <= MAX_SWEEP_VALUE for v in vals):
        raise UserError(f"{option} {text}: expected integers in 1..{MAX_SWEEP_VALUE}")
    return vals


def add_arguments(parser):
    parser.add_argument("--level", choices=LEVELS, default="rtl",
                        help="model to measure (default rtl; faults need rtl)")
    parser.add_argument("--msg-bits", type=int, default=64, help="message width (default 64)")
    parser.add_argument("--phits", default=None, help="phit widths, bits/cycle (default 8,16,64)")
    parser.add_argument("--latencies", default=None, help="channel latencies, cycles (default 4,32)")
    parser.add_argument("--credit-latency", type=int, default=None,
                        help="return-path latency (default: equal to the channel latency)")
    parser.add_argument("--credits", default=None, help="credit counts to sweep (default 2,8,32)")
    parser.add_argument("--messages", type=int, default=None, help="messages per run (default 200)")
    parser.add_argument("--load", type=float, default=0.5,
                        help="offered load of the latency run, as a fraction of the bound (default 0.5)")
    parser.add_argument("--fault-rate", type=float, default=1e-3,
                        help="faults per flit at level rtl: 1/2 single-bit, 1/4 bursts, 1/4 lost flits "
                             "(default 1e-3; 0 for none)")
    parser.add_argument("--no-crc", action="store_true", help="links without CRC-32")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-knee", action="store_true", help="skip the credit-knee table")
    parser.add_argument("--quick", action="store_true",
                        help="a small sweep (phits 8,32; latency 4; credits 2,8; 60 messages)")


def _messages(cfg, n, seed):
    rng = random.Random(seed)
    return [rng.getrandbits(cfg.msg_bits) for _ in range(n)]


def _bandwidth(level, cfg, n, seed, faults):
    """Saturated run: (run, scoreboard, payload bits/cycle in steady state)."""
    from pymtl_fp.tb.link_harness import run_link

    run = run_link(level, cfg, _messages(cfg, n, seed), seed=seed, faults=faults)
    sb = run.scoreboard()
    # steady state: skip the first quarter; a whole number of credit periods
    k = min(cfg.credits, cfg.window)
    skip = n // 4
    span = ((n - 1 - skip) // k) * k
    arr = run.arrival_cycles
    bw = cfg.msg_bits * span / (arr[skip + span] - arr[skip]) if span > 0 and sb.ok else float("nan")
    return run, sb, bw


def _latency(level, cfg, n, seed, faults, load):
    """Run at an offered load (Bernoulli source) of ``load`` x the bound: (ok, mean, max)."""
    from pymtl_fp.tb.link_harness import run_link

    offer = min(1.0, load * cfg.throughput_msgs)
    run = run_link(level, cfg, _messages(cfg, n, seed + 1), seed=seed + 1, faults=faults,
                   src_stall=min(0.999, 1.0 - offer))
    sb = run.scoreboard()
    mean_lat, max_lat = run.latency_summary() if sb.ok else (float("nan"), -1)
    return sb.ok, mean_lat, max_lat


def main(args) -> int:
    from pymtl_fp.link import LinkConfig, LinkConfigError
    from pymtl_fp.link.config import MAX_BITS
    from pymtl_fp.tb.link_faults import FaultPlan

    sweep = QUICK if args.quick else FULL  # --quick changes the defaults; options given explicitly win
    for name, value in sweep.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    phits = _int_list(args.phits, "--phits")
    lats = _int_list(args.latencies, "--latencies")
    credits = _int_list(args.credits, "--credits")
    validate.integer(args.msg_bits, "--msg-bits", 1, MAX_BITS)  # (before the table's header)
    validate.integer(args.messages, "--messages", 8, MAX_MESSAGES)
    validate.number(args.load, "--load", 0.0, 1.0, lo_open=True)
    validate.number(args.fault_rate, "--fault-rate", 0.0, 0.1)
    validate.integer(args.seed, "--seed", 0, 2**32 - 1)
    validate.integer(args.credit_latency, "--credit-latency", 1, MAX_SWEEP_VALUE)
    if args.fault_rate and args.level != "rtl":
        print(f"(--fault-rate ignored at level {args.level}: only the RTL models faults)")
    crc = not args.no_crc
    rate = args.fault_rate if args.level == "rtl" else 0.0
    faults = (FaultPlan(seed=args.seed, bit_rate=rate / 2, burst_rate=rate / 4, drop_rate=rate / 4)
              if rate else None)

    print(f"link bench: level {args.level}, {args.msg_bits}-bit messages, {args.messages} per run, "
          f"CRC {'on' if crc else 'off'}, faults {rate:g}/flit; sink always ready")
    print("bw: payload bits/cycle at the sink in steady state, source always valid; bound = analytical")
    print(f"latency (recv -> send handshake, cycles) at {args.load:g} x bound offered load; "
          "lat0 = zero-load latency 1+flits+L")
    head = (f"{'phit':>5} {'flits':>5} {'lat':>4} {'clat':>4} {'cred':>4} {'win':>4} "
            f"{'bw':>8} {'bound':>8} {'ratio':>6} {'lat0':>5} {'mean':>7} {'max':>5} "
            f"{'flits':>6} {'faults':>6} {'retx':>5} {'to':>3} {'ok':>3}")
    print(head)
    print("-" * len(head))
    t0 = time.perf_counter()
    try:
        for phit in phits:
            for lat in lats:
                clat = args.credit_latency or lat
                for c in credits:
                    cfg = LinkConfig(msg_bits=args.msg_bits, phit_bits=phit, latency=lat,
                                     credit_latency=clat, credits=c, crc=crc)
                    run, sb, bw = _bandwidth(args.level, cfg, args.messages, args.seed, faults)
                    ok2, mean_lat, max_lat = _latency(args.level, cfg, max(8, args.messages // 2),
                                                      args.seed, faults, args.load)
                    st = run.stats
                    fl = run.faults
                    hurt = fl.get("flipped", 0) + fl.get("dropped", 0) if fl else "-"
                    print(f"{phit:>5} {cfg.flits:>5} {lat:>4} {clat:>4} {c:>4} {cfg.window:>4} "
                          f"{bw:>8.2f} {cfg.throughput_bits:>8.2f} {bw / cfg.throughput_bits:>6.3f} "
                          f"{cfg.zero_load_latency:>5} {mean_lat:>7.1f} {max_lat:>5} "
                          f"{fl.get('flits', '-'):>6} {hurt:>6} "
                          f"{st.get('retransmissions', 0):>5} {st.get('timeouts', 0):>3} "
                          f"{'yes' if sb.ok and ok2 else 'NO':>3}")
        if not args.no_knee:
            print()
            print("credit knee (no faults): fewest credits with full bandwidth; analytical = "
                  "ceil(round_trip / flits)")
            head2 = (f"{'phit':>5} {'flits':>5} {'lat':>4} {'clat':>4} {'rtt':>4} "
                     f"{'rtt*rate':>8} {'analytic':>8} {'measured':>8} {'bw@knee-1':>9} {'bw@knee':>8}")
            print(head2)
            print("-" * len(head2))
            for phit in phits:
                for lat in lats:
                    clat = args.credit_latency or lat
                    probe = LinkConfig(msg_bits=args.msg_bits, phit_bits=phit, latency=lat,
                                       credit_latency=clat, credits=1, crc=crc)
                    analytic = probe.min_credits
                    peak = probe.peak_bits
                    measured, bw_below, bw_at = None, None, None
                    prev_bw = None
                    for c in range(max(1, analytic - 2), analytic + 3):
                        cfg = LinkConfig(msg_bits=args.msg_bits, phit_bits=phit, latency=lat,
                                         credit_latency=clat, credits=c, crc=crc)
                        n = max(args.messages, 8 * c + 16)
                        _, sb, bw = _bandwidth(args.level, cfg, n, args.seed, None)
                        if bw >= 0.99 * peak:
                            measured, bw_at = c, bw
                            bw_below = prev_bw if c > 1 else None
                            break
                        prev_bw = bw
                    below = f"{bw_below:.2f}" if bw_below is not None else "-"
                    at = f"{bw_at:.2f}" if bw_at is not None else "-"
                    print(f"{phit:>5} {probe.flits:>5} {lat:>4} {clat:>4} {probe.round_trip:>4} "
                          f"{probe.round_trip / probe.flits:>8.2f} {analytic:>8} "
                          f"{measured if measured is not None else '>' + str(analytic + 2):>8} "
                          f"{below:>9} {at:>8}")
    except LinkConfigError as exc:
        raise UserError(str(exc)) from None
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return 0
