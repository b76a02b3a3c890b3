"""The report of a cluster training run: cycles per step against the analytical bound, the
steady state with the pipeline full (per schedule), fill and drain, per-node state statistics and
MAC utilization, per-link traffic, energy; and its text form (``pymtl-fp train`` prints it)."""

from __future__ import annotations

import itertools

import numpy as np

from pymtl_fp.cluster.compiler.schedule import AUTO_SLACK, PER_IMAGE
from pymtl_fp.cluster.config import link_plan
from pymtl_fp.cluster.hw.node import router_config_for
from pymtl_fp.cluster.hw.router_config import STATES
from pymtl_fp.cluster.run.report_replicas import format_replicas, replicas_section
from pymtl_fp.cost.link import transfer_cycles
from pymtl_fp.engine.config import PIPELINES


def make_report(net, ccfg, part, cprog, host, routers, levels, link_level, cycles, steps, batch,
                t_build, t_sim, cpu_sim=None, rcfgs=None) -> dict:
    """The run's report; ``routers``: one :class:`~pymtl_fp.cluster.hw.observe.RouterLog` per node,
    ``host``: the :class:`~pymtl_fp.cluster.hw.host.HostModel`, ``rcfgs``: the routers' configs (for
    the energy model's resource counts; default ones if not given)."""
    clock = ccfg.clock.mhz * 1e6
    E = ccfg.lanes  # elements per link message (beat)
    link_rate = ccfg.link.throughput_msgs * E  # elements per cycle at full load
    # step boundaries: when every node has passed the step's mark
    marks = [dict(r.marks) for r in routers]
    # a step ends when its last node has finished its update; steps overlap (node 0 starts the
    # next forward pass while later nodes still run backward), so a step's cycles are the time
    # between consecutive step ends (the first: from the first node's start)
    step_start = [min(m[("step", s)] for m in marks) for s in range(steps)]
    step_end = [max(m[("step", s + 1)] if s + 1 < steps else m[("end", steps)] for m in marks)
                for s in range(steps)]
    step_cycles = [e - b for b, e in zip([step_start[0]] + step_end[:-1], step_end)]
    # modelled serial work per node and step (compute from the timing model + stream I/O)
    node_serial = [p.compute_cycles + p.io_cycles for p in cprog.nodes]
    node_compute = [p.compute_cycles for p in cprog.nodes]
    link_elems, skip_elems = [], []  # per link (forward j -> j+1, backward j+1 -> j), elements per step
    for j in range(ccfg.n - 1):
        for out, key in ((link_elems, "link_elems"), (skip_elems, "skip_elems")):
            f = getattr(cprog.nodes[j], key).get("fwd_out", 0)
            b = getattr(cprog.nodes[j + 1], key).get("bwd_out", 0)
            out.append({"link": f"node{j}<->node{j + 1}", "fwd": f, "bwd": b})
    host_fwd = cprog.host_in_elems * batch
    host_logits = cprog.logit_elems * batch
    plan = link_plan(ccfg.n, ccfg.topology)  # in report order

    def elems(carries):
        if carries == "images":
            return host_fwd
        if carries in ("logits", "grads"):
            return host_logits
        return link_elems[carries[1]][carries[0]]
    per_link = {name: elems(c) for name, _, c in plan}
    # (a residual net's skips crossing a cut, and their gradient shares: part of the link's elements)
    per_skip = {name: skip_elems[c[1]][c[0]] if isinstance(c, tuple) else 0 for name, _, c in plan}
    bound_compute = max(node_compute)
    bound_serial = max(node_serial)
    bound_link = max(transfer_cycles(v, E, ccfg.link_cfg(k).throughput_msgs) for k, v in per_link.items())
    # a serial node needs its compute and its stream I/O one after the other; an overlapping one
    # is bounded by its compute (or the link) only
    bound = max(bound_compute if cprog.overlap else bound_serial, bound_link)
    steady = step_cycles[-1] if steps > 1 else step_cycles[0]
    dir_links = {d: [(name, per_link[name]) for name, dd, _ in plan if dd == d] for d in ("fwd", "bwd")}
    # (replicas: each runs its own share; the pipeline's steady state does not apply)
    steady_state = None if cprog.replicas else _steady_state(ccfg, cprog, routers, dir_links, steps, batch)
    nodes = []
    for j, (r, p) in enumerate(zip(routers, cprog.nodes)):
        peak = ccfg.engines[j].macs_per_cycle
        nodes.append({
            "node": j, "level": levels[j], "engine": ccfg.engines[j].name or ccfg.engines[j].module_name(),
            "P": ccfg.engines[j].P,
            "items": part.describe()[j].split(": ", 1)[1],
            "work_model_cycles_per_image": round(part.work[j], 1),
            "macs": r.macs, "mac_utilization": r.macs / (peak * cycles) if cycles else 0.0,
            "cycles": dict(r.stats), "busy_fraction": {k: r.stats[k] / max(1, sum(r.stats.values()))
                                                       for k in STATES},
            "model_compute_cycles_per_step": p.compute_cycles, "model_io_cycles_per_step": p.io_cycles,
            "buffers": p.alloc.usage(), "router_scratch_max": r.scratch_max,
            "router_out_buffer_max": dict(r.outq_max),
            "step_cycles": _step_breakdown(r, steps),
            "weight_phase_cycles": _weight_phase(r, steps, batch),
            "first_active_cycle": min(c for (lab, c) in r.marks),
            "finished_cycle": r.done_cycle,
        })
    links = []
    for name, per_step in per_link.items():
        rate = E * ccfg.link_cfg(name).throughput_msgs  # elements per cycle
        links.append({"link": name, "elements_per_step": per_step, "latency": ccfg.link_cfg(name).latency,
                      "bandwidth_utilization": per_step * steps / (rate * cycles) if cycles else 0.0})
        if any(per_skip.values()):
            links[-1]["skip_elements_per_step"] = per_skip[name]
    fill = (host.logit_cycles[0] - step_start[0]) if host.logit_cycles else None
    # the last step's fill from node 0's start of it: no initial weight loads, nodes of the step
    # before may still be busy (as in every step of a long run)
    last = (steps - 1) * batch
    fill_last = (host.logit_cycles[last] - marks[0][("step", steps - 1)]
                 if steps > 1 and not cprog.replicas and len(host.logit_cycles) > last else None)
    return {
        "net": net.name, "nodes": ccfg.n, "topology": ccfg.topology, "levels": levels, "link_level": link_level,
        "link": {"msg_bits": ccfg.link.msg_bits, "phit_bits": ccfg.link.phit_bits,
                 "latency": ccfg.link.latency, "credits": ccfg.link.credits,
                 "elements_per_cycle": link_rate},
        "clock_mhz": ccfg.clock.mhz, "clock": ccfg.clock.to_dict(), "batch": batch, "steps": steps,
        "engine_pipelines": [p for p in PIPELINES if getattr(ccfg.engines[0], f"pipelined_{p}")],
        "partition": {"method": part.method, "cuts": part.cuts, "split_layers": part.split_layers(),
                      "nodes": part.describe(), "balance_max_over_mean": part.balance,
                      "weights_per_node": part.weights, "weight_balance_max_over_mean": part.weight_balance,
                      "tap_packed": [net.layers[li].name for li in sorted(part.packed)],
                      **_weight_homes(net, part, cprog)},
        "replicas": replicas_section(cprog, routers, steps),
        "pipelining": _passes(cprog) + f", {cprog.schedule} schedule; "
                      + _weight_gradients(cprog) + "; "
                      + ("engine commands overlap (LOAD/STORE beside compute)" if cprog.overlap
                         else "engine commands one at a time"),
        "overlap": cprog.overlap, "schedule": cprog.schedule, "wgrad": cprog.wgrad, "bands": cprog.bands,
        "bands_backward": cprog.bands_backward, "bands_all": cprog.bands_all,
        "cycles_total": cycles, "cycles_per_step": step_cycles,
        "images_per_s": batch * clock / steady if steady else 0.0,
        "bound": {"node_compute_cycles_per_step": bound_compute,
                  "node_serial_cycles_per_step": bound_serial,
                  "busiest_link_cycles_per_step": bound_link,
                  "cycles_per_step": bound,
                  "efficiency_vs_bound": bound / steady if steady else 0.0,
                  # FPDeep's bound: the slowest node's compute or the busiest link, per step
                  "compute_or_link_cycles_per_step": max(bound_compute, bound_link),
                  "efficiency_vs_compute_bound": max(bound_compute, bound_link) / steady if steady else 0.0,
                  "measured_cycles_per_image": steady / batch if batch else None,
                  "bound_cycles_per_image": bound / batch if batch else None},
        "steady_state": steady_state,
        "pipeline": {"fill_cycles_first_logits": fill, "fill_cycles_last_step": fill_last,
                     "drain_cycles": (step_end[-1] - max(host.logit_cycles)) if host.logit_cycles else None},
        "node": nodes, "links": links,
        "losses": list(host.losses),
        "energy": _energy(ccfg, cprog, routers, rcfgs, cycles, steps, batch),
        "wall_seconds": {"build": round(t_build, 2), "simulate": round(t_sim, 2)},
        "sim_cycles_per_second": cycles / t_sim if t_sim > 0 else None,
        "cpu_seconds": {"simulate": round(cpu_sim, 2)} if cpu_sim is not None else {},
        "sim_cycles_per_cpu_second": cycles / cpu_sim if cpu_sim else None,
    }


def _passes(cprog) -> str:
    """How the run pipelines its passes (the report's ``pipelining``)."""
    if not cprog.bands:
        return "layer-level (per image, whole feature maps)"
    fwd = "every forward pass" if cprog.bands_all else "the fill's forward passes (the others whole layers)"
    bwd = "every backward pass too" if cprog.bands_backward else "layer-level backward passes"
    rows = f"{cprog.bands} row" + ("s" if cprog.bands > 1 else "")
    return f"row bands of {rows}: {fwd}, {bwd} (each band sent on at once)"


def _weight_homes(net, part, cprog) -> dict:
    """The layers whose weights a neighbour keeps (FPDeep's weight balancing), and the weights each
    node then holds (parameters, as ``weights_per_node``) with their balance."""
    place = cprog.placement
    if not place:
        return {"weight_home": []}
    held = place.held_params(net, part)
    return {"weight_home": place.describe(net), "weights_held_per_node": held,
            "weight_held_balance_max_over_mean": max(held) / (sum(held) / len(held))}


def _weight_gradients(cprog) -> str:
    """When the run computes its weight gradients (the report's ``pipelining``)."""
    if cprog.schedule in PER_IMAGE:
        return "weight gradients and updates after each image"
    if cprog.wgrad == "image":
        return "weight gradients per image, summed in B and rounded once at the step's end"
    if cprog.wgrad == "auto":
        return (f"weight gradients per image where it costs the engine at most {100 * (AUTO_SLACK - 1):.0f}% more "
                "(summed in B, rounded once at the step's end), over the batch for the rest")
    return "weight gradients over the batch"


def _energy(ccfg, cprog, routers, rcfgs, cycles, steps, batch) -> dict:
    """The energy section (:mod:`pymtl_fp.energy`): each node's activity priced by the cluster's
    FPGA family."""
    from pymtl_fp.energy.activity import node_activity
    from pymtl_fp.energy.model import run_energy

    rcfgs = rcfgs or [router_config_for(e) for e in ccfg.engines]
    acts = [node_activity(j, ccfg.engines[j], cprog.nodes[j], routers[j], steps, cycles, ccfg.link.msg_bits,
                          ccfg.engines[j].beat_bits) for j in range(ccfg.n)]  # (a message is a beat)
    return run_energy(acts, list(ccfg.engines), list(rcfgs), ccfg.fpga_family, ccfg.clock.mhz, steps=steps,
                      images=steps * batch)


def _steady_state(ccfg, cprog, routers, dir_links, steps, batch) -> dict:
    """Throughput with the pipeline full, in the last step: the cycles between consecutive images
    leaving the pipeline (forward: node N-1 has sent image b's output; backward: node 0 has taken
    image b's gradient), median over the batch, against the compute-or-link bound.

    ``gpipe`` (all forward passes, then all backward passes): a phase's interval is bounded by the
    slowest node's compute for one image in that phase or the busiest link of that direction,
    and an image costs the forward plus the backward interval.  ``1f1b``: with the pipeline full
    every node runs one forward and one backward pass per image, so an image costs one interval
    (node N-1's forward completions, which alternate with its backward passes from the first
    image on), bounded by the slowest node's forward plus backward compute for one image or the
    busiest link.  ``cp`` is 1F1B with each image's update (phase ``upd``) after its backward pass.
    ``sgd`` (one image in the cluster at a time): bounded by the dependency chain of every node's
    backward pass, node 0's update and every node's forward pass (the link transfers come on top).
    Fill, drain and the per-step weight phase are excluded: they are in the step's cycles
    (``cycles_per_step``)."""
    n, s = ccfg.n, steps - 1
    marks = [dict(r.done_marks) for r in routers]
    out = {"schedule": cprog.schedule}
    for phase, j in (("fwd", n - 1), ("bwd", 0)):
        ts = [marks[j].get((phase, s, b)) for b in range(batch)]
        diffs = [b - a for a, b in itertools.pairwise(ts) if a is not None and b is not None]
        interval = float(np.median(diffs)) if diffs else None
        comp = max(p.phase_compute.get(phase, 0) for p in cprog.nodes) / batch
        link = max((transfer_cycles(elems / batch, ccfg.lanes, ccfg.link_cfg(name).throughput_msgs)
                    for name, elems in dir_links[phase]),
                   default=0.0)
        bound = max(comp, link)
        out[phase] = {"interval_cycles_per_image": interval, "bound_compute": comp, "bound_link": link,
                      "bound_cycles_per_image": bound,
                      "efficiency": bound / interval if interval else None,
                      "node": j, "completions": ts}
    fi, bi = out["fwd"]["interval_cycles_per_image"], out["bwd"]["interval_cycles_per_image"]
    per_node = [p.image_compute() / batch for p in cprog.nodes]
    if cprog.schedule == "gpipe":
        out["cycles_per_image"] = fi + bi if fi and bi else None
        link = out["fwd"]["bound_link"] + out["bwd"]["bound_link"]
    elif cprog.schedule == "sgd":  # one image at a time: every node's passes in series
        out["cycles_per_image"] = fi
        link = max(out["fwd"]["bound_link"], out["bwd"]["bound_link"])
        # the chain bwd(N-1)..bwd(0), node 0's update, fwd(0)..fwd(N-1): the other updates may hide
        per_node = [(sum(p.image_compute("fwd", "bwd") for p in cprog.nodes)
                     + cprog.nodes[0].image_compute("upd")) / batch]
    else:
        out["cycles_per_image"] = fi
        link = max(out["fwd"]["bound_link"], out["bwd"]["bound_link"])
    out["bound_compute"] = max(per_node)  #: the slowest node's forward + backward compute per image
    out["bound_link"] = link
    out["bound_cycles_per_image"] = max(max(per_node), link)
    out["efficiency"] = out["bound_cycles_per_image"] / out["cycles_per_image"] if out["cycles_per_image"] else None
    return out


def _weight_phase(router, steps: int, batch: int) -> int:
    """The node's cycles from the completion of its last backward pass (or its weight phase's mark,
    if later) to the end of its last step: the weight gradients over the batch, the update, the
    biases, the weight exchanges of its split layers.  (The router passes the mark as soon as it
    has issued the backward pass's last command, which may wait for a neighbour's gradient.)"""
    m = dict(router.marks)
    start = max(m[("wg", steps - 1)], dict(router.done_marks).get(("bwd", steps - 1, batch - 1), 0))
    return m[("end", steps)] - start


def _step_breakdown(router, steps: int) -> list:
    """Per step, the node's cycles in each state (between the program marks of consecutive
    steps: a node's own view of the step) and ``busy`` = compute + io + engine."""
    at = dict(router.mark_stats)
    out = []
    for s in range(steps):
        a, b = at[("step", s)], at[("step", s + 1)] if s + 1 < steps else at[("end", steps)]
        d = {k: b[k] - a[k] for k in STATES}
        d["busy"] = d["compute"] + d["io"] + d["engine"]
        out.append(d)
    return out


def format_report(rep: dict) -> str:
    lines = [(f"cluster: {rep['nodes']} nodes ({rep.get('topology', 'chain')}), levels {','.join(rep['levels'])}, "
              f"links {rep['link_level']} "
              f"({rep['link']['msg_bits']}-bit messages, {rep['link']['elements_per_cycle']:.2f} elements/cycle, "
              f"latency {rep['link']['latency']}); batch {rep['batch']}, {rep['steps']} steps; {rep['pipelining']}"
              + (f"; engine pipelines: {', '.join(rep['engine_pipelines'])}" if rep.get("engine_pipelines") else "")),
             (f"partition ({rep['partition']['method']}, balance max/mean = "
              f"{rep['partition']['balance_max_over_mean']:.3f}, weights max/mean = "
              f"{rep['partition']['weight_balance_max_over_mean']:.3f}, split layers: "
              f"{', '.join(rep['partition']['split_layers']) or 'none'}; tap-packed: "
              f"{', '.join(rep['partition'].get('tap_packed', [])) or 'none'}):")]
    lines += [f"  {x}" for x in rep["partition"]["nodes"]]
    if rep["partition"].get("weight_home"):
        lines.append(f"  weight balancing: {'; '.join(rep['partition']['weight_home'])}, streamed in chunks for every "
                     f"pass; weights held per node {rep['partition']['weights_held_per_node']}, max/mean = "
                     f"{rep['partition']['weight_held_balance_max_over_mean']:.3f}")
    b = rep["bound"]
    steady = rep["cycles_per_step"][-1]
    cps = rep["cycles_per_step"]
    cps_text = str(cps) if len(cps) <= 8 else f"[{cps[0]}, {cps[1]}, ..., {cps[-1]}] ({len(cps)} steps)"
    lines.append(f"cycles per step: {cps_text} (total {rep['cycles_total']}); "
                 f"{rep['images_per_s']:.0f} images/s at {rep['clock_mhz']:.1f} MHz")
    lines.append(f"clock: {rep['clock']['text']}")
    lines.append(f"analytical bound per step: slowest node compute {b['node_compute_cycles_per_step']}, "
                 f"slowest node compute+stream I/O one after the other {b['node_serial_cycles_per_step']}, busiest link "
                 f"{b['busiest_link_cycles_per_step']:.0f} -> bound {b['cycles_per_step']:.0f}; measured {steady}: "
                 f"{100 * b['efficiency_vs_bound']:.1f}% of the bound "
                 f"({100 * b['efficiency_vs_compute_bound']:.1f}% of the compute-or-link bound "
                 f"{b['compute_or_link_cycles_per_step']:.0f}); per image {b['measured_cycles_per_image']:.0f} "
                 f"cycles measured, {b['bound_cycles_per_image']:.0f} bound")
    ss = rep.get("steady_state")
    if ss and ss.get("cycles_per_image"):
        f, bw = ss["fwd"], ss["bwd"]
        if ss["schedule"] == "gpipe":
            how = (f"forward {f['interval_cycles_per_image']:.0f} + backward "
                   f"{bw['interval_cycles_per_image']:.0f} = ")
        elif ss["schedule"] == "sgd":
            how = "every node's passes one after the other: "
        else:
            how = "one forward and one backward pass per node" + (" and its update" if ss["schedule"] == "cp" else "")
            how += ": "
        sched = ss["schedule"]
        flow = "one image at a time" if sched == "sgd" else "pipeline full"
        wg = "per-image updates included" if sched in PER_IMAGE else "weight phase excluded"
        comp = "the passes and node 0's update in series" if sched == "sgd" else "slowest node's compute"
        lines.append(f"steady state ({sched}, {flow}, last step; {wg}): "
                     f"{how}{ss['cycles_per_image']:.0f} cycles/image; bound {ss['bound_cycles_per_image']:.0f} "
                     f"({comp} {ss['bound_compute']:.0f}, busiest link {ss['bound_link']:.0f}): "
                     f"{100 * ss['efficiency']:.1f}% of the bound")
    if rep.get("replicas"):
        lines += format_replicas(rep["replicas"])
    p = rep["pipeline"]
    lines.append(f"pipeline: first logits after {p['fill_cycles_first_logits']} cycles (fill"
                 + (f"; the last step's: {p['fill_cycles_last_step']} from node 0's start of it"
                    if p.get("fill_cycles_last_step") is not None else "")
                 + f"), {p['drain_cycles']} cycles from the last logits to the end (backward drain + update)")
    lines.append("node  level      P  MAC util  compute     io  stall_in stall_out  engine   done  X/D/W/B words used")
    for n in rep["node"]:
        f = n["busy_fraction"]
        bu = n["buffers"]
        lines.append(f"{n['node']:>4}  {n['level']:<9} {n.get('P', '?'):>2} {100 * n['mac_utilization']:8.1f}% "
                     f"{100 * f['compute']:6.1f}% {100 * f['io']:5.1f}% {100 * f['stall_in']:8.1f}% "
                     f"{100 * f['stall_out']:8.1f}% {100 * f['engine']:6.1f}% {100 * f['done']:5.1f}%  "
                     f"{bu['X']['used']}/{bu['D']['used']}/{bu['W']['used']}/{bu['B']['used']}")
    lines.append("link                 elements/step  bandwidth utilization")
    for lk in rep["links"]:
        skip = f"  ({lk['skip_elements_per_step']} of residual skips)" if lk.get("skip_elements_per_step") else ""
        lines.append(f"  {lk['link']:<18} {lk['elements_per_step']:>12}  {100 * lk['bandwidth_utilization']:6.1f}%"
                     + skip)
    if rep.get("link_status"):
        ls = rep["link_status"]
        tot = {k: sum(d.get(k, 0) for d in ls) for k in ("dropped", "flipped", "retransmissions", "crc_errors",
                                                           "frame_errors", "naks", "timeouts")}
        if rep.get("faults"):
            lines.append(f"link faults injected: {tot['dropped']} flits lost, {tot['flipped']} corrupted; the links "
                         f"detected {tot['crc_errors']} CRC and {tot['frame_errors']} framing errors, sent "
                         f"{tot['naks']} NAKs, timed out {tot['timeouts']} times and retransmitted "
                         f"{tot['retransmissions']} frames")
    if rep.get("energy"):
        from pymtl_fp.energy.model import format_energy

        lines += format_energy(rep["energy"], rep["steps"])
    if rep.get("losses"):
        if len(rep["losses"]) > 8:
            lo = rep["losses"]
            lines.append(f"losses per step: {lo[0]:.4f} (first), ..., {lo[-1]:.4f} (last of {len(lo)}); "
                         f"mean of the last 10: {sum(lo[-10:]) / len(lo[-10:]):.4f}")
        else:
            lines.append("losses per step: " + ", ".join(f"{x:.4f}" for x in rep["losses"]))
    sim = rep.get("simulator", "PyMTL3")
    rate = rep.get("sim_cycles_per_second")
    cpu_rate = rep.get("sim_cycles_per_cpu_second")
    ws = rep.get("wall_seconds", {})
    cpu = rep.get("cpu_seconds", {}).get("simulate")
    lines.append(f"simulated by {sim}: build {ws.get('build', 0):.1f} s, simulation {ws.get('simulate', 0):.2f} s"
                 + (f" ({rate:,.0f} cycles/s)" if rate else "")
                 + (f", {cpu:.2f} s of CPU ({cpu_rate:,.0f} cycles per CPU second)" if cpu and cpu_rate else ""))
    return "\n".join(lines)
