"""The code generator's part for layers whose weights a neighbour keeps (FPDeep's weight balancing,
placed by :mod:`~pymtl_fp.cluster.compiler.weights_home`), at the user and at the home.

The user runs a remote layer's commands as a split layer's pieces, a chunk of the weights at a
time from two staging slots in W (one where two do not fit): the forward pass per output-channel
tile, ``bwd_data`` per input-channel tile, the weight gradient per output-channel tile into a G
slot and on to the home.  The home LOADs its initial weights from the host, sends their chunks in
the user's order (:meth:`NodeRemoteWeights.end_hosting`), updates them from the gradient tiles
with the user's seed and sends them back to the host at the end.
"""

from __future__ import annotations

from pymtl_fp import timing
from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.buffers import BUF_ID
from pymtl_fp.cluster.compiler.emit import DST
from pymtl_fp.cluster.compiler.partition import _Shape
from pymtl_fp.cluster.compiler.weights_home import PORTS, chunk_words, link_moves
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.engine import program
from pymtl_fp.engine.msgs import pack_weight, tiles
from pymtl_fp.golden.train import tensor_id
from pymtl_fp.numerics import slice_seed


class NodeRemoteWeights:
    """Remote layers (user side) and layers kept for a neighbour (home side); mixed into the
    code generator, which sets ``remote`` (``{layer: home}``), ``hosted`` (``[(user, layer)]``)
    and ``home_plan`` (:class:`HomePlan` or None)."""

    stage_slots = 2
    home_plan = None

    # ---- the user -------------------------------------------------------------------------
    def is_remote(self, it) -> bool:
        return not it.pool and it.layer in self.remote

    def _ports(self, it):
        return PORTS[self.remote[it.layer] - self.j]  # (home out, user in, user back, home back)

    def _wstage(self, t: int) -> int:
        """Staging slot of chunk ``t`` in W (chunks alternate between the slots)."""
        words = max(chunk_words(self.net, li, self.P) for li in self.remote)
        return self.A.get("W", "wstage", self.stage_slots * words) + (t % self.stage_slots) * words

    def _gstage(self, t: int) -> int:
        """Staging slot of gradient tile ``t`` in G."""
        words = max(tiles(self.info(li)["c"], self.P) * self.info(li)["r"] * self.info(li)["s"] for li in self.remote)
        return self.A.get("G", "gstage", self.stage_slots * words) + (t % self.stage_slots) * words

    def _fetch(self, it, tag, words: int, t: int) -> int:
        """LOAD chunk ``t`` (``words`` weight words) from the home into its staging slot."""
        addr = self._wstage(t)
        with self.tagged((it.layer,) + tag):
            self.load("W", addr, words * self.P * self.P, self._ports(it)[1])
        return addr

    def remote_fwd(self, it, b, seed, off, bpiece, d0, dsel, **common):
        """Image b's forward pass of remote item ``it``: a ``fwd`` per output-channel tile, each
        after its chunk's LOAD; ``off``: the output's first element (the slice seed's offset)."""
        f, P = self.info(it.layer), self.P
        per_kt = tiles(f["c"], P) * f["r"] * f["s"]
        for t in range(tiles(f["k"], P)):
            k0, k1 = t * P, min(f["k"], (t + 1) * P)
            w = self._fetch(it, ("f", t), per_kt, t)
            self.compute("fwd", program.useful_macs("fwd", self.case(it, 1, k0, k1)),
                         **self.conv_fields(it, 1, k0, k1), **common,
                         seed=slice_seed(seed, off + k0 * f["ho"] * f["wo"]), a1=w, a2=bpiece + t,
                         d0=d0 + t * f["ho"] * f["wo"], dsel=dsel)

    def remote_bwd_data(self, it, b, seed, off, a0, a2, d0, dsel, **common):
        """Image b's ``bwd_data`` of remote item ``it``: one per input-channel tile of ``dx``."""
        f, P = self.info(it.layer), self.P
        K, C = f["k"], f["c"]
        rs = f["r"] * f["s"]
        for t in range(tiles(C, P)):
            c0, c1 = t * P, min(C, (t + 1) * P)
            w = self._fetch(it, ("b", t), tiles(K, P) * rs, t)
            case = dict(x=_Shape(1, c1 - c0, f["h"], f["w"]), w=_Shape(K, c1 - c0, f["r"], f["s"]), dy=None,
                        stride=f["stride"], pad=f["pad"])
            fields = dict(self.conv_fields(it, 1), c=c1 - c0, ct=1)
            hw = f["h"] * f["w"]
            self.compute("bwd_data", program.useful_macs("bwd_data", case), **fields, **common,
                         seed=slice_seed(seed, off + c0 * hw), a0=a0, a1=w, a2=a2 + t * hw, d0=d0 + t * hw,
                         dsel=dsel)

    def remote_gradient(self, it, seed):
        """Remote item ``it``'s weight gradient over the batch, one output-channel tile at a time
        into a G slot and on to the home (``db`` into the user's B, updated there as before)."""
        f, P, B = self.info(it.layer), self.P, self.B
        li, p = it.layer, f["p"]
        sh = self.shifts[self.net.layers[li].name]
        K, KT, CRS = f["k"], tiles(f["k"], P), f["c"] * f["r"] * f["s"]
        per_kt = tiles(f["c"], P) * f["r"] * f["s"]
        ho, wo = f["ho"], f["wo"]
        hop = KT * ho  # each image's dy: one tile read in planes of all KT tiles' rows
        db = self.A.get("B", f"db{li}", KT)
        dys = self.A.get("B", f"dbs{li}", 1)
        for t in range(KT):
            k0, k1 = t * P, min(K, (t + 1) * P)
            g = self._gstage(t)
            dy = self.dy_keep(it, 0) + t * ho * wo
            self.compute("bwd_weight", program.useful_macs("bwd_weight", self.case(it, B, k0, k1)),
                         **self.conv_fields(it, B, k0, k1), hop=hop,
                         shift=sh.wgrad, bshift=sh.bgrad, stoch=self.mode("grad_mode"),
                         seed=slice_seed(seed, k0 * CRS), tid=tensor_id(p, "DW"), btid=tensor_id(p, "DB"),
                         a0=self.x_addr(it, 0), a1=dy, d0=g, d1=db + t if t == 0 else dys)
            if t > 0:  # db with its own seed, as a split piece's
                self.db_own_seed(it, B, 0, k0, k1 - k0, dy, db + t, seed, hop=hop)
            with self.tagged((li, "g", t)):
                self.store("G", g, per_kt * P * P, self._ports(it)[2])

    # ---- the home -------------------------------------------------------------------------
    def _hosted_regions(self, li):
        f = self.info(li)
        words = tiles(f["k"], self.P) * tiles(f["c"], self.P) * f["r"] * f["s"]
        return self.A.get("W", f"hw{li}", words), self.A.get("G", f"hg{li}", words), words

    def hosted_initial(self, params):
        for _, li in self.hosted:
            w, _, _ = self._hosted_regions(li)
            self.host_load("W", w, pack_weight(params[self.net.layers[li].name]["w"], self.P).reshape(-1))

    def hosted_final(self):
        P = self.P
        for _, li in self.hosted:
            w, _, words = self._hosted_regions(li)
            self.store("W", w, words * P * P, ("host", ("w", li, 0, self.info(li)["k"])))

    def hosted_updates(self, seed):
        """Take each kept layer's weight gradient from its user (tile by tile) and update it."""
        P = self.P
        for u, li in self.hosted:
            f = self.info(li)
            w, g, _ = self._hosted_regions(li)
            per_kt = tiles(f["c"], P) * f["r"] * f["s"]
            back = PORTS[self.j - u][3]
            for t in range(tiles(f["k"], P)):
                with self.tagged((li, "g", t)):
                    self.load("G", g + t * per_kt, per_kt * P * P, back)
            self.layer = self.net.layers[li].name
            sh = self.shifts[self.layer]
            self.compute("update", 0, k=f["k"], c=f["c"], kt=tiles(f["k"], P), ct=tiles(f["c"], P), r=f["r"],
                         s=f["s"], shift=sh.update_w, stoch=self.mode("update_mode"), seed=slice_seed(seed, 0),
                         tid=tensor_id(f["p"], "UPDATE_W"), a0=w, a1=g, d0=w)

    def _chunk_stores(self, c) -> list:
        """The STOREs of one weight chunk towards the user: an output-channel tile (contiguous) or
        an input-channel tile (``KT`` runs of ``R*S`` words); counted like any STORE."""
        li, kind, t = c["tag"]
        f, P = self.info(li), self.P
        w, _, _ = self._hosted_regions(li)
        rs, CT = f["r"] * f["s"], tiles(f["c"], P)
        runs = [(w + t * CT * rs, CT * rs)] if kind == "f" else \
            [(w + (kt * CT + t) * rs, rs) for kt in range(tiles(f["k"], P))]
        out = []
        for addr, words in runs:
            n = words * P * P
            ins = isa.store(DST[self.home_plan.out], target=BUF_ID["W"], addr=addr, count=n, ovl=self.ovl)
            self.op_tags[id(ins)] = c["tag"]
            self._count_link(self.home_plan.out, n)
            self._io(timing.store_cycles(n, P * P, self.ecfg.stream_lanes))
            out.append(ins)
        return out

    def end_hosting(self) -> None:
        """At the end of the step body: on a home, place the weight chunks of its :class:`HomePlan`
        in it, each before the first of the home's instructions that must follow it (a send towards
        the user that the user LOADs after the chunk, or a LOAD of an element the user sends only
        once it has the chunk); then record a user's or a home's link events (``link_log``)."""
        start = self.loop_start
        plan = self.home_plan
        if plan is not None:
            body, new, moved = self.ops[start:], [], {}
            sent = recv = nxt = 0

            def flush(due):  # (the chunks due before the next instruction)
                nonlocal nxt
                while nxt < len(plan.chunks) and due(plan.chunks[nxt]):
                    c = plan.chunks[nxt]
                    if c["N"] > sent:
                        raise ClusterError(f"compiler: node {self.j} cannot send node {plan.user}'s weight chunk "
                                           f"{c['tag']} in the order both need (they would wait for each other)")
                    new.extend(self._chunk_stores(c))
                    nxt += 1

            for i, ins in enumerate(body):
                for kind, port, n in link_moves(ins):
                    if kind == "recv" and port == plan.back:
                        flush(lambda c, end=recv + n: c["E"] < end)
                        recv += n
                    elif kind == "send" and port == plan.out:
                        flush(lambda c, sent=sent: c["N"] <= sent)
                        if nxt < len(plan.chunks) and sent < plan.chunks[nxt]["N"] < sent + n:
                            raise ClusterError(f"compiler: node {plan.user} LOADs a weight chunk in the middle of a "
                                               "tensor")
                        sent += n
                moved[start + i] = start + len(new)
                new.append(ins)
            flush(lambda c: True)
            self.ops[start:] = new
            for table in (self.prog.notes, self.prog.useful_macs):  # (indexed by instruction)
                for k in sorted((k for k in table if k >= start), reverse=True):
                    table[moved[k]] = table.pop(k)
        if self.remote or plan is not None:  # (only a user's and a home's are read)
            self.link_log = [(kind, port, n, self.op_tags.get(id(ins)))
                             for ins in self.ops[start:] for kind, port, n in link_moves(ins)]
