"""The code-generation pass for layers whose weights a neighbour keeps (FPDeep's weight balancing,
placed by :mod:`~pymtl_fp.cluster.compiler.weights_home`), at the user and at the home.

The user runs a remote layer's commands as a split layer's pieces, a chunk of the weights at a
time from two staging slots in W (one where two do not fit): the forward pass per output-channel
tile, ``bwd_data`` per input-channel tile, the weight gradient per output-channel tile into a G
slot and on to the home.  The home LOADs its initial weights from the host, sends their chunks in
the user's order (:meth:`RemoteWeights.end_hosting`), updates them from the gradient tiles
with the user's seed and sends them back to the host at the end.
"""

from __future__ import annotations

from pymtl_fp import timing
from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.buffers import BUF_ID
from pymtl_fp.cluster.compiler.emit import DST
from pymtl_fp.cluster.compiler.partition import _Shape
from pymtl_fp.cluster.compiler.plan import Pass
from pymtl_fp.cluster.compiler.updates import Updates
from pymtl_fp.cluster.compiler.weights_home import PORTS, chunk_words, link_moves
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.engine import program
from pymtl_fp.engine.msgs import pack_weight, tiles
from pymtl_fp.golden.train import tensor_id
from pymtl_fp.numerics import slice_seed


class RemoteWeights(Pass):
    """Remote layers (user side) and layers kept for a neighbour (home side) of one node (the
    plan's ``home``: :class:`~pymtl_fp.cluster.compiler.plan.WeightHome`)."""

    # ---- the user -------------------------------------------------------------------------
    def _ports(self, it):
        return PORTS[self.home.remote[it.layer] - self.node.j]  # (home out, user in, user back, home back)

    def _wstage(self, t: int) -> int:
        """Staging slot of chunk ``t`` in W (chunks alternate between the slots)."""
        node = self.node
        words = max(chunk_words(node.net, li, node.P) for li in self.home.remote)
        return self.alloc.get("W", "wstage", self.home.stage_slots * words) + (t % self.home.stage_slots) * words

    def _gstage(self, t: int) -> int:
        """Staging slot of gradient tile ``t`` in G."""
        node = self.node
        words = max(tiles(node.info(li)["c"], node.P) * node.info(li)["r"] * node.info(li)["s"] for li in self.home.remote)
        return self.alloc.get("G", "gstage", self.home.stage_slots * words) + (t % self.home.stage_slots) * words

    def _fetch(self, it, tag, words: int, t: int) -> int:
        """LOAD chunk ``t`` (``words`` weight words) from the home into its staging slot."""
        node, em = self.node, self.em
        addr = self._wstage(t)
        with em.tagged((it.layer,) + tag):
            em.load("W", addr, words * node.P * node.P, self._ports(it)[1])
        return addr

    def remote_fwd(self, it, b, seed, off, bpiece, d0, dsel, **common):
        """Image b's forward pass of remote item ``it``: a ``fwd`` per output-channel tile, each
        after its chunk's LOAD; ``off``: the output's first element (the slice seed's offset)."""
        node = self.node
        f, P = node.info(it.layer), node.P
        per_kt = tiles(f["c"], P) * f["r"] * f["s"]
        for t in range(tiles(f["k"], P)):
            k0, k1 = t * P, min(f["k"], (t + 1) * P)
            w = self._fetch(it, ("f", t), per_kt, t)
            self.em.compute("fwd", program.useful_macs("fwd", node.case(it, 1, k0, k1)),
                            **node.conv_fields(it, 1, k0, k1), **common,
                            seed=slice_seed(seed, off + k0 * f["ho"] * f["wo"]), a1=w, a2=bpiece + t,
                            d0=d0 + t * f["ho"] * f["wo"], dsel=dsel)

    def remote_bwd_data(self, it, b, seed, off, a0, a2, d0, dsel, **common):
        """Image b's ``bwd_data`` of remote item ``it``: one per input-channel tile of ``dx``."""
        node = self.node
        f, P = node.info(it.layer), node.P
        K, C = f["k"], f["c"]
        rs = f["r"] * f["s"]
        for t in range(tiles(C, P)):
            c0, c1 = t * P, min(C, (t + 1) * P)
            w = self._fetch(it, ("b", t), tiles(K, P) * rs, t)
            case = dict(x=_Shape(1, c1 - c0, f["h"], f["w"]), w=_Shape(K, c1 - c0, f["r"], f["s"]), dy=None,
                        stride=f["stride"], pad=f["pad"])
            fields = dict(node.conv_fields(it, 1), c=c1 - c0, ct=1)
            hw = f["h"] * f["w"]
            self.em.compute("bwd_data", program.useful_macs("bwd_data", case), **fields, **common,
                            seed=slice_seed(seed, off + c0 * hw), a0=a0, a1=w, a2=a2 + t * hw, d0=d0 + t * hw,
                            dsel=dsel)

    def remote_gradient(self, it, seed):
        """Remote item ``it``'s weight gradient over the batch, one output-channel tile at a time
        into a G slot and on to the home (``db`` into the user's B, updated there as before)."""
        node, regions, em = self.node, self.regions, self.em
        f, P, B = node.info(it.layer), node.P, node.B
        li, p = it.layer, f["p"]
        sh = node.shifts[node.net.layers[li].name]
        K, KT, CRS = f["k"], tiles(f["k"], P), f["c"] * f["r"] * f["s"]
        per_kt = tiles(f["c"], P) * f["r"] * f["s"]
        ho, wo = f["ho"], f["wo"]
        hop = KT * ho  # each image's dy: one tile read in planes of all KT tiles' rows
        db = self.alloc.get("B", f"db{li}", KT)
        dys = self.alloc.get("B", f"dbs{li}", 1)
        for t in range(KT):
            k0, k1 = t * P, min(K, (t + 1) * P)
            g = self._gstage(t)
            dy = regions.dy_keep(it, 0) + t * ho * wo
            em.compute("bwd_weight", program.useful_macs("bwd_weight", node.case(it, B, k0, k1)),
                       **node.conv_fields(it, B, k0, k1), hop=hop,
                       shift=sh.wgrad, bshift=sh.bgrad, stoch=node.mode("grad_mode"),
                       seed=slice_seed(seed, k0 * CRS), tid=tensor_id(p, "DW"), btid=tensor_id(p, "DB"),
                       a0=regions.x_addr(it, 0), a1=dy, d0=g, d1=db + t if t == 0 else dys)
            if t > 0:  # db with its own seed, as a split piece's
                Updates(self.plan).db_own_seed(it, B, 0, k0, k1 - k0, dy, db + t, seed, hop=hop)
            with em.tagged((li, "g", t)):
                em.store("G", g, per_kt * P * P, self._ports(it)[2])

    # ---- the home -------------------------------------------------------------------------
    def _hosted_regions(self, li):
        node = self.node
        f = node.info(li)
        words = tiles(f["k"], node.P) * tiles(f["c"], node.P) * f["r"] * f["s"]
        return self.alloc.get("W", f"hw{li}", words), self.alloc.get("G", f"hg{li}", words), words

    def hosted_initial(self, params):
        node = self.node
        for _, li in self.home.hosted:
            w, _, _ = self._hosted_regions(li)
            self.em.host_load("W", w, pack_weight(params[node.net.layers[li].name]["w"], node.P).reshape(-1))

    def hosted_final(self):
        node = self.node
        P = node.P
        for _, li in self.home.hosted:
            w, _, words = self._hosted_regions(li)
            self.em.store("W", w, words * P * P, ("host", ("w", li, 0, node.info(li)["k"])))

    def hosted_updates(self, seed):
        """Take each kept layer's weight gradient from its user (tile by tile) and update it."""
        node, em = self.node, self.em
        P = node.P
        for u, li in self.home.hosted:
            f = node.info(li)
            w, g, _ = self._hosted_regions(li)
            per_kt = tiles(f["c"], P) * f["r"] * f["s"]
            back = PORTS[node.j - u][3]
            for t in range(tiles(f["k"], P)):
                with em.tagged((li, "g", t)):
                    em.load("G", g + t * per_kt, per_kt * P * P, back)
            em.layer = node.net.layers[li].name
            sh = node.shifts[em.layer]
            em.compute("update", 0, k=f["k"], c=f["c"], kt=tiles(f["k"], P), ct=tiles(f["c"], P), r=f["r"],
                       s=f["s"], shift=sh.update_w, stoch=node.mode("update_mode"), seed=slice_seed(seed, 0),
                       tid=tensor_id(f["p"], "UPDATE_W"), a0=w, a1=g, d0=w)

    def _chunk_stores(self, c) -> list:
        """The STOREs of one weight chunk towards the user: an output-channel tile (contiguous) or
        an input-channel tile (``KT`` runs of ``R*S`` words); counted like any STORE."""
        node, em = self.node, self.em
        li, kind, t = c["tag"]
        f, P = node.info(li), node.P
        w, _, _ = self._hosted_regions(li)
        rs, CT = f["r"] * f["s"], tiles(f["c"], P)
        runs = [(w + t * CT * rs, CT * rs)] if kind == "f" else \
            [(w + (kt * CT + t) * rs, rs) for kt in range(tiles(f["k"], P))]
        out = []
        for addr, words in runs:
            n = words * P * P
            ins = isa.store(DST[self.home.home_plan.out], target=BUF_ID["W"], addr=addr, count=n, ovl=self.opts.ovl)
            em.op_tags[id(ins)] = c["tag"]
            em.count_link(self.home.home_plan.out, n)
            em.count_io(timing.store_cycles(n, P * P, node.ecfg.stream_lanes))
            out.append(ins)
        return out

    def end_hosting(self) -> None:
        """At the end of the step body: on a home, place the weight chunks of its :class:`HomePlan`
        in it, each before the first of the home's instructions that must follow it (a send towards
        the user that the user LOADs after the chunk, or a LOAD of an element the user sends only
        once it has the chunk); then record a user's or a home's link events (``link_log``)."""
        em = self.em
        start = em.loop_start
        home_plan = self.home.home_plan
        if home_plan is not None:
            body, new, moved = em.ops[start:], [], {}
            sent = recv = nxt = 0

            def flush(due):  # (the chunks due before the next instruction)
                nonlocal nxt
                while nxt < len(home_plan.chunks) and due(home_plan.chunks[nxt]):
                    c = home_plan.chunks[nxt]
                    if c["N"] > sent:
                        raise ClusterError(f"compiler: node {self.node.j} cannot send node {home_plan.user}'s weight chunk "
                                           f"{c['tag']} in the order both need (they would wait for each other)")
                    new.extend(self._chunk_stores(c))
                    nxt += 1

            for i, ins in enumerate(body):
                for kind, port, n in link_moves(ins):
                    if kind == "recv" and port == home_plan.back:
                        flush(lambda c, end=recv + n: c["E"] < end)
                        recv += n
                    elif kind == "send" and port == home_plan.out:
                        flush(lambda c, sent=sent: c["N"] <= sent)
                        if nxt < len(home_plan.chunks) and sent < home_plan.chunks[nxt]["N"] < sent + n:
                            raise ClusterError(f"compiler: node {home_plan.user} LOADs a weight chunk in the middle of a "
                                               "tensor")
                        sent += n
                moved[start + i] = start + len(new)
                new.append(ins)
            flush(lambda c: True)
            em.ops[start:] = new
            for table in (self.prog.notes, self.prog.useful_macs):  # (indexed by instruction)
                for k in sorted((k for k in table if k >= start), reverse=True):
                    table[moved[k]] = table.pop(k)
        if self.home.remote or home_plan is not None:  # (only a user's and a home's are read)
            self.home.link_log = [(kind, port, n, em.op_tags.get(id(ins)))
                                  for ins in em.ops[start:] for kind, port, n in link_moves(ins)]
