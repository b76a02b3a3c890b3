"""PyMTL3's clock edge, flipping only the flip-flops written since the last edge (RTL in Python).

PyMTL3 3.1.17 double-buffers every signal that an ``update_ff`` block writes: ``<<=`` sets the
signal's ``_next``, and at each clock edge a generated function calls ``_flip()``
(``_uint = _next``) on every such signal, written or not -- every word of every SRAM, FIFO and
program memory model, 27,632 signals for one cluster node, a third of the node's tick.

:func:`install` wraps PyMTL3's flip schedule (``SimpleSchedulePass.schedule_posedge_flip``,
which every PyMTL3 schedule pass reuses) so that each simulator built afterwards flips only the
signals written since its last edge.  Its first edge flips every signal, as PyMTL3 does; it then
gives each double-buffered ``Bits`` object a subclass of its own class, private to the
simulator, whose ``<<=`` also appends the object to the simulator's list of written signals.
A BitStruct signal's ``<<=`` writes each of its fields with ``<<=``: its fields' ``Bits`` get
the subclass, and the edge flips the fields written (a BitStruct's ``_flip`` flips its fields).

The values seen after every edge are PyMTL3's: a signal not written since its last flip has
``_next == _uint``, so its ``_flip()`` changes nothing.  (A signal set with ``@=`` between edges
would differ -- PyMTL3 would overwrite it with the stale ``_next`` -- but PyMTL3 refuses ``@=`` on
a signal an ``update_ff`` block writes, and nothing here pokes one.)  Every bit-exact and
cycle-equality test of the suite runs on this edge.

The patch wraps a method of PyMTL3 3.1.17's scheduler, so it lives here alone and checks that the
method exists; ``tests/test_sparse_flip.py`` compares it with PyMTL3's own flip.
"""

from __future__ import annotations

_ORIGINAL = None


def install() -> None:
    """Make every PyMTL3 simulator built from now on in this process flip sparsely (idempotent)."""
    global _ORIGINAL
    if _ORIGINAL is not None:
        return
    from pymtl3.passes.sim.SimpleSchedulePass import SimpleSchedulePass

    original = getattr(SimpleSchedulePass, "schedule_posedge_flip", None)
    if original is None:
        raise RuntimeError("pymtl3's SimpleSchedulePass has no schedule_posedge_flip: "
                           "pymtl_fp/sparse_flip.py does not fit this pymtl3 version")
    _ORIGINAL = original

    def schedule_posedge_flip(self, top):
        original(self, top)
        (full,) = top._sched.schedule_posedge_flip
        signals = [x for x in top._dsl.all_signals if x._dsl.needs_double_buffer]
        if signals:
            top._sched.schedule_posedge_flip = [sparse_edge(top, signals, full)]

    SimpleSchedulePass.schedule_posedge_flip = schedule_posedge_flip


def uninstall() -> None:
    """Back to PyMTL3's own flip for simulators built from now on (for the comparison test)."""
    global _ORIGINAL
    if _ORIGINAL is None:
        return
    from pymtl3.passes.sim.SimpleSchedulePass import SimpleSchedulePass

    SimpleSchedulePass.schedule_posedge_flip = _ORIGINAL
    _ORIGINAL = None


def sparse_edge(top, signals, full):
    """The clock-edge function of one simulator: ``full`` (PyMTL3's flip of every signal) at the
    first edge, then the written signals only.  ``signals``: the double-buffered signals."""
    from pymtl3.datatypes import Bits

    written = []
    always = []
    armed = False
    subclasses = {}  # Bits class -> its recording subclass
    recorders = set()

    def recording(cls):
        sub = subclasses.get(cls)
        if sub is None:
            base_ilshift = cls.__ilshift__

            def __ilshift__(self, v):
                base_ilshift(self, v)
                written.append(self)
                return self

            sub = subclasses[cls] = type(f"Written{cls.__name__}", (cls,),
                                         {"__slots__": (), "__ilshift__": __ilshift__})
            recorders.add(sub)
        return sub

    def arm():
        # The simulation's objects (PyMTL3 puts a Bits or BitStruct value in place of each
        # signal when it builds the simulator), looked up by the signals' own paths from top.
        src = "def objects(s):\n  return [\n" + "".join(f"    {x!r},\n" for x in signals) + "  ]\n"
        scope = {}
        exec(compile(src, "sparse_flip_objects", "exec"), scope)
        seen = set()
        for obj in scope["objects"](top):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            leaves = []
            if _leaves(obj, Bits, leaves):
                try:
                    for b in leaves:
                        if type(b) not in recorders:  # (a field shared by two signals: once)
                            b.__class__ = recording(type(b))
                    continue
                except TypeError:
                    pass
            always.append(obj)

    def double_buffer():
        nonlocal armed
        if armed:
            for b in written:
                b._uint = b._next
            written.clear()
            for b in always:
                b._flip()
        else:
            full()
            arm()
            armed = True

    return double_buffer


def _leaves(obj, Bits, out: list) -> bool:
    """Append the ``Bits`` objects that hold ``obj``'s value to ``out`` (``obj`` itself, or a
    BitStruct's fields, nested structs and lists of fields included); false if some part is
    neither (then ``obj`` is flipped whole at every edge)."""
    if isinstance(obj, Bits):
        out.append(obj)
        return True
    fields = getattr(type(obj), "__bitstruct_fields__", None)
    if fields is not None:
        return all(_leaves(getattr(obj, name), Bits, out) for name in fields)
    if isinstance(obj, list):
        return all(_leaves(x, Bits, out) for x in obj)
    return False
