"""A direct scheduler for cycle-level models: the same components, ticked without PyMTL3's
signals and schedule (CL and FL only; no RTL, no Verilator).

PyMTL3 simulates a design by writing every output into a signal object and running the
combinational schedule twice per tick; for a cluster of Python behavioural models that
machinery costs far more than the behaviour.  A component that implements the *direct
protocol* keeps its behaviour in plain Python methods that its own ``update_ff`` block also
calls, so the two ways of ticking it run the same code:

* ``DIRECT_PORTS``: ``((port name, kind), ...)`` with kind ``recv`` / ``send`` (a val/rdy stream
  interface; a list of interfaces is named ``name[i]``), ``in`` / ``out`` (a one-bit wire);
* ``direct_bind(ch)``: keep the :class:`Channel` / :class:`Wire` objects of those ports;
* ``direct_reset()``: the reset edge (state and the outputs in reset);
* ``direct_edge()``: one rising clock edge, reading the handshakes and messages on its channels
  (every component reads the values from before the edge: all edges run before any drive);
* ``direct_drive()``: write the registered outputs after the edge into the channels;
* ``direct_comb()`` (optional): combinational outputs of the current cycle (run after every
  drive, in component order, e.g. the engine's ``cmd.rdy``, a function of its registers and
  ``cmd.msg``);
* ``direct_quiet()`` -> int: for how many coming edges, with every input as it is
  now, the component would only count down (its outputs unchanged, no handshake); ``0``: not
  quiet; ``QUIET_FOREVER``: idle until an input changes;
* ``direct_skip(n)``: apply ``n`` such edges at once.

Quiet-cycle skipping: when every component is quiet, no output changes during the shortest of
their quiet spans, so no input does either; the scheduler then applies that many edges in one
step (``skip``).  The result is cycle-identical to ticking: the cluster tests compare whole
reports of both, and of the PyMTL3-scheduled run.

The connections are read from the elaborated PyMTL3 design (its nets), so the scheduler
needs no knowledge of the top's structure.  :class:`DirectSim` has ``sim_tick()`` (returning the
cycles it advanced) and ``line_trace()``, so :func:`pymtl_fp.sim.run_until` drives it like a
PyMTL3 simulator.
"""

from __future__ import annotations

QUIET_FOREVER = 1 << 62


class DirectError(RuntimeError):
    """The design cannot be ticked directly (a component without the protocol, a port whose
    driver is not a direct component)."""


class Channel:
    """A val/rdy stream between two direct components (plain Python values)."""

    __slots__ = ("msg", "name", "rdy", "val")

    def __init__(self, name):
        self.val, self.rdy, self.msg, self.name = 0, 0, 0, name

    def fire(self) -> bool:
        return bool(self.val and self.rdy)

    def __repr__(self):
        return f"{self.name}:{self.val}{self.rdy}"


class Wire:
    """A one-bit wire between two direct components."""

    __slots__ = ("name", "value")

    def __init__(self, name):
        self.value, self.name = 0, name


def _ports(comp):
    """(name, kind, val-or-wire signal, rdy signal or None) of each port of the protocol."""
    out = []
    for name, kind in comp.DIRECT_PORTS:
        obj = getattr(comp, name)
        items = [(f"{name}[{i}]", o) for i, o in enumerate(obj)] if isinstance(obj, list) else [(name, obj)]
        for nm, o in items:
            if kind in ("recv", "send"):
                out.append((nm, kind, o.val, o.rdy))
            else:
                out.append((nm, kind, o, None))
    return out


class DirectSim:
    """Tick an elaborated top whose every behavioural component has the direct protocol.

    ``ignore``: classes of components whose update blocks may be left out (e.g. a program-bus
    decoder that only matters for RTL nodes).  ``skip``: quiet-cycle skipping."""

    def __init__(self, top, *, ignore=(), skip=True):
        from pymtl3 import Component

        self.top = top
        self.skip = skip
        comps = sorted(top.get_all_object_filter(lambda o: isinstance(o, Component)), key=repr)
        self.comps = [c for c in comps if hasattr(c, "direct_edge")]
        for c in comps:
            if hasattr(c, "direct_edge") or isinstance(c, tuple(ignore)):
                continue
            if c.get_update_blocks():
                raise DirectError(f"{c.__class__.__name__} ({c}) has update blocks but no direct protocol")
        if not self.comps:
            raise DirectError("no component with the direct protocol")
        writer_of = {}
        for writer, readers in top.get_all_value_nets():
            for r in readers:
                writer_of[id(r)] = writer
        # channels are created at the driving end (send / out), found from the reading end
        by_driver = {}
        ports = {id(c): _ports(c) for c in self.comps}
        for c in self.comps:
            for nm, kind, sig, _ in ports[id(c)]:
                if kind == "send":
                    by_driver[id(sig)] = Channel(f"{c}.{nm}")
                elif kind == "out":
                    by_driver[id(sig)] = Wire(f"{c}.{nm}")
        for c in self.comps:
            ch = {}
            for nm, kind, sig, _ in ports[id(c)]:
                if kind in ("send", "out"):
                    ch[nm] = by_driver[id(sig)]
                    continue
                w = writer_of.get(id(sig))
                if w is None or id(w) not in by_driver:
                    raise DirectError(f"{c}.{nm}: its driver {w} is not a direct component's port")
                ch[nm] = by_driver[id(w)]
            c.direct_bind(ch)
        self.combs = [c for c in self.comps if hasattr(c, "direct_comb")]
        self.quiet = [c.direct_quiet for c in self.comps]
        self.cycle = 0
        self.skipped = 0  # cycles advanced by skipping whole quiet spans
        self.skips = 0  # (in so many spans)
        self.quiet_edges = 0  # edges of single quiet components skipped in ticked cycles

    def reset(self):
        """One reset edge (the state of every component, outputs in reset), then release."""
        for c in self.comps:
            c.direct_reset()
        for c in self.combs:
            c.direct_comb()

    def sim_tick(self) -> int:
        """Advance one cycle (a quiet component only counts down: its edge is skipped and its
        outputs stay), or, when every component is quiet, the whole quiet span; returns the
        cycles advanced."""
        comps = self.comps
        if not self.skip or self.cycle == 0:  # (the first edge after reset: every component)
            for c in comps:
                c.direct_edge()
            for c in comps:
                c.direct_drive()
        else:
            quiet = [q() for q in self.quiet]
            n = min(quiet)
            if n >= 2 and n < QUIET_FOREVER:
                for c in comps:
                    c.direct_skip(n)
                self.cycle += n
                self.skipped += n
                self.skips += 1
                return n
            active = [c for c, k in zip(comps, quiet) if not k]
            self.quiet_edges += len(comps) - len(active)
            for c, k in zip(comps, quiet):
                if k:
                    c.direct_skip(1)
                else:
                    c.direct_edge()
            for c in active:
                c.direct_drive()
        for c in self.combs:
            c.direct_comb()
        self.cycle += 1
        return 1

    def line_trace(self) -> str:
        return self.top.line_trace()
