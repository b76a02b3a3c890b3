"""The report section of a data-parallel or hybrid run (:mod:`pymtl_fp.cluster.compiler.replicas`): the
replica layout, each node's cycles per phase of the last step (its own view, between its program
marks: forward passes, backward passes, weight phase = raw ``bwd_weight``, all-reduces, rounding
and updates) and the all-reduce traffic per link port."""

from __future__ import annotations


def replicas_section(cprog, routers, steps: int) -> dict | None:
    rep = cprog.replicas
    if rep is None:
        return None
    s = steps - 1
    nodes = []
    for j, (r, prog) in enumerate(zip(routers, cprog.nodes)):
        m = dict(r.marks)
        end = m[("step", s + 1)] if s + 1 < steps else m[("end", steps)]
        start, bwd, wg = m[("step", s)], m[("bwd", s)], m[("wg", s)]
        nodes.append({"node": j, "replica": j // rep.size, "stage": j % rep.size,
                      "images": rep.shares[j // rep.size], "first_image": rep.first(j // rep.size),
                      "phase_cycles_last_step": {"fwd": bwd - start, "bwd": wg - bwd, "wg": end - wg},
                      "allreduce_elements_per_step": dict(prog.collective_elems)})
    return {"parallel": rep.parallel, "groups": rep.groups, "size": rep.size, "shares": list(rep.shares),
            "layout": rep.describe(), "nodes": nodes,
            "weight_phase_cycles_max": max(n["phase_cycles_last_step"]["wg"] for n in nodes)}


def format_replicas(sec: dict) -> list:
    lines = [f"replicas ({sec['layout']}); all-reduce: reduce over the fwd links, broadcast back over the bwd "
             f"links, of un-rounded sums, rounded once per replica",
             "node  replica stage images  fwd cycles  bwd cycles  weight phase  all-reduce elements out (fwd/bwd)"]
    for n in sec["nodes"]:
        p, a = n["phase_cycles_last_step"], n["allreduce_elements_per_step"]
        lines.append(f"{n['node']:>4}  {n['replica']:>7} {n['stage']:>5} {n['images']:>6}  {p['fwd']:>10}  {p['bwd']:>10}"
                     f"  {p['wg']:>12}  {a.get('fwd_out', 0)}/{a.get('bwd_out', 0)}")
    return lines
