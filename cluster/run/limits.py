"""The two limits under which a simulated cluster run is stopped, derived from its compiled
programs: :func:`watchdog_limit` (cycles without progress: a deadlock) and :func:`cycle_cap` (cycles
in all: a livelock), with :func:`serial_work`, the modelled work of a step they rest on."""

from __future__ import annotations

from pymtl_fp.cluster.config import link_names

#: a link retransmits up to a window of flits for one fault (go-back-N): the cap's allowance per fault
RETRANSMIT_FLITS = 64


def watchdog_limit(ccfg, cprog, stall=None) -> int:
    """Cycles without progress after which a run is a deadlock, derived from the programs: a node
    may legitimately wait for its own longest engine command plus a neighbour's (which its input
    waits behind) and a few link round trips (with retransmission timeouts); random stalls stretch
    all of it."""
    longest = max(p.longest_command for p in cprog.nodes)
    links = max(ccfg.link_cfg(n).round_trip + ccfg.link_cfg(n).timeout for n in link_names(ccfg.n, ccfg.topology))
    limit = 2 * longest + 8 * links + 2000
    if stall and stall[0] > 0:
        limit = int(limit / (1.0 - min(stall[0], 0.95)))
    return max(limit, 20_000)


def serial_work(cprog) -> int:
    """Every node's modelled work of a step (compute, LOAD/STORE occupancy, link and skip elements)
    summed over the nodes: the cycles of a step if nothing overlapped."""
    return sum(p.compute_cycles + p.io_cycles + sum(p.link_elems.values()) + sum(p.skip_elems.values())
               for p in cprog.nodes)


def cycle_cap(cprog, steps: int, stall=None, faults: dict | None = None) -> int:
    """The most cycles a run of ``steps`` steps may take before it is stopped as a livelock (a
    deadlock stops earlier, at :func:`watchdog_limit` cycles without progress): four times
    :func:`serial_work` a step, stretched by random stalls as the watchdog is and by link faults
    (``faults``: ``drop``, ``burst``, ``flip`` in units of ``2**-16`` per flit, each fault allowed
    :data:`RETRANSMIT_FLITS` flits again), and at least 20 million cycles."""
    cap = 4 * serial_work(cprog) * steps
    if stall and stall[0] > 0:
        cap /= 1.0 - min(stall[0], 0.95)
    if faults:
        rate = sum(faults.get(k, 0) for k in ("drop", "burst", "flip")) / 2**16
        cap /= 1.0 - min(rate * RETRANSMIT_FLITS, 0.95)
    return max(20_000_000, int(cap))
