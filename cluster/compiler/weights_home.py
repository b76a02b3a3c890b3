"""FPDeep's weight balancing on the simulated cluster: a layer's weights kept by a neighbour node.

Where a node's weights do not fit its W buffer while a neighbour's W has room,
:func:`place_weights` gives whole layers of the node (its *remote* layers, largest first) a *home*:
the neighbour keeps their weights (W) and runs their ``update``; the node that computes with them
(the *user*) streams them over the link between the two, a chunk at a time, into two alternating
staging slots of its W (one where two do not fit), for every pass that reads them.  So the user's
W holds its own layers and two chunks; its G two chunks of the weight gradient.

Per image and remote layer (``K`` output, ``C`` input channels, ``KT``, ``CT`` tiles of the array
side ``P``), every command as the engine runs a split layer's piece, with its slice seed
(:func:`~pymtl_fp.numerics.slice_seed`), so the bits are those of the whole layer:

* forward: ``KT`` chunks, one output-channel tile each (its ``C*R*S`` weights: contiguous words),
  a ``fwd`` command per chunk writing that tile of the output;
* ``bwd_data``: ``CT`` chunks, one input-channel tile each (``KT`` runs of ``R*S`` words at the
  home, one dense ``(K, P, R, S)`` chunk at the user), a ``bwd_data`` per chunk writing that tile
  of ``dx``;
* weight gradient (over the batch at the step's end): one ``bwd_weight`` per output-channel tile
  into a G slot (its ``dy`` tile of every image read in planes of ``KT*Ho`` rows; ``db`` of a tile
  past the first by a second, one-channel command with its own seed, as a split piece's), sent to
  the home, which LOADs the tiles into its G and runs the engine's ``update`` with the user's seed.
  The tiles go last in the user's weight phase, and the home takes them after updating its own
  layers.  Biases stay with the user (its scalar unit updates them as before).

The link order.  The home's weight chunks share the link with what the home already sends the
user (activations on the forward link, gradients on the backward one), and the user LOADs
everything in its program's order.  :class:`HomePlan` reads the user's step (its link events,
recorded as it is compiled), and the home's code generator
(:meth:`~pymtl_fp.cluster.compiler.remote_weights.RemoteWeights.end_hosting`) places each chunk's STOREs
in the home's step as late as they may go: before the home's next send that the user LOADs after
the chunk, and before the home LOADs anything the user sends only after it has the chunk, so
neither node waits for the other forever.  A chunk with no such place is refused at compile time
(:class:`~pymtl_fp.cluster.config.ClusterError`);
:func:`check_links` then checks both ends of every such link element for element.

Limits (refused in one line): the mini-batch schedules (``1f1b``, ``gpipe``), whole layers (no
``--bands``), no replicas, user and home of one array side, remote layers whole on their node (not
split) and not tap-packed; a home keeps no remote layers of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.emit import LINKS
from pymtl_fp.cluster.compiler.partition import Item, layer_info
from pymtl_fp.cluster.compiler.schedule import PER_IMAGE
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.engine.msgs import tiles

#: ``--weight-home`` choices: ``auto`` (a neighbour keeps layers that do not fit), ``off``
WEIGHT_HOME = ("auto", "off")
#: the link ports between a user and its home: home -> user, and back (user -> home)
PORTS = {-1: ("fwd_out", "fwd_in", "bwd_out", "bwd_in"),   # home = user - 1
          +1: ("bwd_out", "bwd_in", "fwd_out", "fwd_in")}   # home = user + 1


def item_weight_words(net, part, P: int, it) -> int:
    """W words of item ``it`` on its node (a second holder keeps the whole layer)."""
    if it.pool:
        return 0
    f = layer_info(net, it.layer, it.layer in part.packed)
    per_kt = tiles(f["c"], P) * f["r"] * f["s"]
    k1 = f["k"] if it.k0 > 0 else it.k1
    return tiles(k1 - (0 if it.k0 > 0 else it.k0), P) * per_kt


def chunk_words(net, li: int, P: int) -> int:
    """Words of the larger of a remote layer's chunks: an output-channel tile's weights
    (``CT*R*S``) or an input-channel tile's (``KT*R*S``)."""
    f = layer_info(net, li)
    return max(tiles(f["c"], P), tiles(f["k"], P)) * f["r"] * f["s"]


@dataclass
class Placement:
    """Where remote layers' weights live: ``homes[(user node, layer)] = home node``."""

    homes: dict = field(default_factory=dict)
    #: per user node, its staging slots in W and G: two (the next chunk's LOAD beside the current
    #: chunk's command) or one (where two do not fit)
    slots: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.homes)

    def remote(self, j: int) -> dict:
        """Node ``j``'s remote layers: ``{layer: home}``."""
        return {li: h for (u, li), h in self.homes.items() if u == j}

    def hosted(self, h: int) -> list:
        """The layers node ``h`` keeps for a neighbour: ``[(user, layer)]`` in layer order."""
        return sorted((u, li) for (u, li), hh in self.homes.items() if hh == h)

    def held_params(self, net, part) -> list:
        """Per node, the parameters it keeps (as :attr:`Partition.weights`: weights and biases),
        its remote layers' weights at their homes."""
        out = list(part.weights)
        for (u, li), h in self.homes.items():
            n = int(np.prod(net.conv_geometry(net.layers[li])["w_shape"]))
            out[u] -= n
            out[h] += n
        return out

    def describe(self, net) -> list:
        return [f"{net.layers[li].name}'s weights kept by node {h} for node {u}"
                for (u, li), h in sorted(self.homes.items())]


def _whole(net, li):
    return Item(li, 0, layer_info(net, li)["k"])


def place_weights(net, ccfg, part, *, schedule: str = "1f1b", mode: str = "auto") -> Placement:
    """FPDeep's weight balancing: for every node whose weights overflow its W, move its whole
    layers (largest first) to the neighbour with the most room left, until the node's own layers
    and two staging chunks fit; a node that cannot be made to fit keeps everything (the compiler
    then refuses the mapping as before).  ``mode`` ``off``: no placement."""
    if isinstance(mode, Placement):
        return check_placement(net, ccfg, part, mode, schedule)
    if mode not in WEIGHT_HOME:
        raise ClusterError(f"unknown --weight-home {mode!r}; choose one of {', '.join(WEIGHT_HOME)}")
    Ps = [e.P for e in ccfg.engines]
    depth = [e.weight_depth for e in ccfg.engines]
    need = [sum(item_weight_words(net, part, Ps[j], it) for it in items) for j, items in enumerate(part.nodes)]
    place = Placement()
    if mode == "off" or all(n <= d for n, d in zip(need, depth)) or schedule in PER_IMAGE:
        return place
    held = list(need)
    for u, items in enumerate(part.nodes):
        if held[u] <= depth[u]:
            continue
        cands = sorted((it for it in items if not it.pool and it.k0 == 0 and it.layer not in part.packed
                        and it.k1 == layer_info(net, it.layer)["k"]),
                       key=lambda it: -item_weight_words(net, part, Ps[u], it))
        moved, trial = [], {}
        for it in cands:
            chunk = max(chunk_words(net, li, Ps[u]) for li in moved + [it.layer])
            words = item_weight_words(net, part, Ps[u], it)
            users = {uu for uu, _ in place.homes}
            homes = [h for h in (u - 1, u + 1) if 0 <= h < part.n and Ps[h] == Ps[u] and h not in users
                     and u not in place.homes.values() and held[h] + words <= depth[h]
                     and {uu for uu, _ in place.hosted(h)} <= {u}]  # (a home keeps one user's layers)
            if not homes:
                continue
            h = max(homes, key=lambda h: depth[h] - held[h])
            moved.append(it.layer)
            trial[(u, it.layer)] = h
            held[h] += words
            held[u] -= words
            slots = next((k for k in (2, 1) if held[u] + k * chunk <= depth[u]), 0)
            if slots:
                place.homes.update(trial)
                place.slots[u] = slots
                held[u] += slots * chunk
                break
        else:  # no set of moves fits: undo them
            for (_, li), h in trial.items():
                w = item_weight_words(net, part, Ps[u], _whole(net, li))
                held[h] -= w
                held[u] += w
    return place


def check_placement(net, ccfg, part, place: Placement, schedule: str) -> Placement:
    """Refuse, in one line, a given placement the code generator cannot run."""
    Ps = [e.P for e in ccfg.engines]
    if place and schedule in PER_IMAGE:
        raise ClusterError(f"--schedule {schedule} updates after each image: weights kept by a neighbour need a "
                           "mini-batch schedule (1f1b, gpipe)")
    users = {u for u, _ in place.homes}
    for (u, li), h in place.homes.items():
        name = net.layers[li].name if 0 <= li < len(net.layers) else str(li)
        whole = [it for it in part.nodes[u] if it.layer == li] if 0 <= u < part.n else []
        if not whole or whole[0].pool or whole[0].k0 or whole[0].k1 != layer_info(net, li)["k"]:
            raise ClusterError(f"{name} is not a whole conv/fc layer of node {u}: only those can keep their weights "
                               "in a neighbour")
        if li in part.packed:
            raise ClusterError(f"{name} is tap-packed: its weights stay on its node")
        if h not in (u - 1, u + 1) or not 0 <= h < part.n or Ps[h] != Ps[u]:
            raise ClusterError(f"node {h} cannot keep {name}'s weights for node {u}: a home is a neighbour "
                               "of the same array side")
        if h in users or {uu for uu, _ in place.hosted(h)} != {u}:
            raise ClusterError(f"node {h} keeps {name}'s weights: a home keeps one node's layers and none of its "
                               "own elsewhere")
        place.slots.setdefault(u, 2)
    return place


# ---- the link order between a user and its home ------------------------------------------------

@dataclass
class HomePlan:
    """The weight chunks a home sends its user in one step, in the user's order, each with where
    it must go: after ``N`` of the home's other elements towards the user (what the user LOADs
    before it) and before the home LOADs element ``E`` of what the user sends back (the first the
    user sends after it).  The home's code generator places them
    (:meth:`~pymtl_fp.cluster.compiler.remote_weights.RemoteWeights.end_hosting`)."""

    user: int
    home: int
    chunks: list            #: dicts: tag, n (elements), N, E
    out: str                #: the home's port towards the user
    back: str               #: the home's port from the user

    @classmethod
    def from_log(cls, user: int, home: int, log: list):
        out, into, uback, back = PORTS[home - user]
        chunks, norm, sent_back = [], 0, 0
        for kind, port, n, tag in log:
            if kind == "recv" and port == into:
                if tag is None:
                    norm += n
                else:
                    chunks.append(dict(tag=tag, n=n, N=norm, E=sent_back))
            elif kind == "send" and port == uback:
                sent_back += n
        return cls(user, home, chunks, out, back)


def check_links(user_log: list, home_log: list, user: int, home: int) -> None:
    """Both ends of the links between a user and its home carry the same elements in the same
    order: the weight chunks (home -> user) and the gradient tiles (user -> home) at the same
    positions among the other elements, and as many elements in all."""
    out, into, uback, back = PORTS[home - user]

    def seq(log, kind, port):
        pos, marks = 0, []
        for k, p, n, tag in log:
            if k == kind and p == port:
                if tag is not None and marks and marks[-1][1] == tag and marks[-1][0] + marks[-1][2] == pos:
                    marks[-1] = (marks[-1][0], tag, marks[-1][2] + n)  # (a chunk sent in runs)
                elif tag is not None:
                    marks.append((pos, tag, n))
                pos += n
        return pos, marks

    for a, b, what in ((seq(home_log, "send", out), seq(user_log, "recv", into), f"{out} -> {into}"),
                       (seq(user_log, "send", uback), seq(home_log, "recv", back), f"{uback} -> {back}")):
        if a != b:
            raise ClusterError(f"compiler: the link between node {user} and its weights' home {home} carries "
                               f"different streams at its two ends ({what})")


def link_moves(ins) -> list:
    """What instruction ``ins`` takes from and gives to the links: ``[(recv | send, port, n)]``."""
    if ins.kind in (isa.LOAD, isa.MOVE, isa.REDUCE) and isa.SRC_NAMES[ins.src] in LINKS:
        got = [("recv", isa.SRC_NAMES[ins.src], ins.count)]
    elif ins.kind == isa.RELAY:
        got = [("recv", "fwd_in", ins.count), ("recv", "bwd_in", ins.count)]
    else:
        got = []
    if ins.kind in (isa.STORE, isa.MOVE, isa.REDUCE, isa.RELAY):
        got += [("send", name, ins.count) for bit, name in isa.DST_NAMES.items() if ins.dmask & bit and name in LINKS]
    return got
