"""Return a PyMTL3-simulated RTL model to the state it had when its simulator was built.

Elaborating a model and applying PyMTL3's default pass group costs about as much as simulating a
small operation on it, so a campaign that wants a *fresh* model per example (no buffer contents,
no register value left over from the previous example) spends half its time rebuilding.
:class:`PowerOnState` records, right after the simulator is built, the value of every signal of
the model (PyMTL3 holds each net as one ``Bits`` object, or a ``BitStruct`` of them; registers
also hold the value their next edge loads); :meth:`PowerOnState.restore` writes those values
back, in place.  After it the model is indistinguishable from a new one: every signal and every
memory word is as a new elaboration leaves it (zero), before ``sim_reset``.

RTL only: a component's state must live in its signals.  Functional- and cycle-level models keep
Python state (queues, lists, counters) that this does not see.
"""

from __future__ import annotations

from pymtl3 import Bits


def _leaves(value, out: list) -> None:
    if isinstance(value, Bits):
        out.append(value)
    elif isinstance(value, int):  # a constant net
        return
    elif isinstance(value, list):
        for v in value:
            _leaves(v, out)
    elif hasattr(value, "__bitstruct_fields__"):
        for name in value.__bitstruct_fields__:
            _leaves(getattr(value, name), out)
    else:
        raise TypeError(f"power_on: a signal holds {type(value).__name__}, not Bits or a BitStruct")


class PowerOnState:
    """The power-on value of every signal of ``model`` (simulator built, not yet run)."""

    def __init__(self, model):
        mapping = getattr(getattr(model, "_sim", None), "signal_object_mapping", None)
        if mapping is None:
            raise ValueError("power_on: the model has no simulator yet (apply DefaultPassGroup first)")
        leaves: list = []
        seen: set = set()
        for entry in mapping.values():
            value = entry[-1]
            if id(value) not in seen:
                seen.add(id(value))
                _leaves(value, leaves)
        self._saved = [(b, b._uint, getattr(b, "_next", None)) for b in leaves]

    def restore(self) -> None:
        """Write every signal's power-on value (and its pending next value) back."""
        for b, uint, nxt in self._saved:
            b._uint = uint
            if nxt is not None:
                b._next = nxt
            elif hasattr(b, "_next"):
                del b._next

    def __len__(self) -> int:
        return len(self._saved)
