"""PyMTL3's pure-Python ``Bits`` with a direct path for an ``int`` operand (RTL simulated in Python).

An RTL update block compares, assigns and combines signals with integer constants all the time
(``s.state == 3``, ``s.count @= 0``, ``s.ptr + 1``).  PyMTL3 3.1.17's ``Bits`` (without its
RPython ``mamba`` build, which CPython cannot load) reaches an ``int`` operand by reading
``other.nbits``, catching the ``AttributeError`` and converting: the raise and the catch cost a
fifth of an engine's simulated cycle.

:func:`install` puts in front of each such operator of ``Bits`` a test for an operand of type
``int`` within the operand range PyMTL3 accepts (``0 <= v <= 2**nbits - 1``; ``@=`` and ``<<=``
also take negative values down to ``-2**(nbits-1)``), computing the same value as PyMTL3's own int
path; ``@=`` and ``<<=`` also take a ``Bits`` of the same width directly.  Everything else --
other ``Bits`` operands, BitStructs, ``bool``, out-of-range integers and
their errors -- goes to PyMTL3's method unchanged.  ``tests/test_bits_int_paths.py`` compares every
operator with PyMTL3's on random widths and operands, errors included.
"""

from __future__ import annotations

#: operator -> (result width: "n" the operand's or "1", the result from a = self._uint, b = the
#: int, up = 2**nbits - 1, n = nbits), as PyMTL3's int path computes it
BINARY = {
    "__add__": ("n", "(a + b) & up"),
    "__radd__": ("n", "(a + b) & up"),
    "__sub__": ("n", "(a - b) & up"),
    "__mul__": ("n", "(a * b) & up"),
    "__rmul__": ("n", "(a * b) & up"),
    "__and__": ("n", "a & b"),
    "__rand__": ("n", "a & b"),
    "__or__": ("n", "a | b"),
    "__ror__": ("n", "a | b"),
    "__xor__": ("n", "a ^ b"),
    "__rxor__": ("n", "a ^ b"),
    "__lshift__": ("n", "0 if b >= n else (a << b) & up"),
    "__rshift__": ("n", "a >> b"),
    "__eq__": ("1", "a == b"),
    "__ne__": ("1", "a != b"),
    "__lt__": ("1", "a < b"),
    "__le__": ("1", "a <= b"),
    "__gt__": ("1", "a > b"),
    "__ge__": ("1", "a >= b"),
}

#: the assignments: the attribute each writes
ASSIGN = {"__imatmul__": "_uint", "__ilshift__": "_next"}

_ORIGINALS: dict = {}


def _source() -> str:
    lines = []
    for name, (width, expr) in BINARY.items():
        lines += [
            f"def {name}(self, other):",
            "    if other.__class__ is int:",
            "        n = self._nbits",
            "        if n < _widths:",
            "            up = _upper[n]",
            "            if 0 <= other <= up:",
            "                a = self._uint",
            "                b = other",
            f"                return _new_valid_bits({width}, {expr})",
            f"    return _originals[{name!r}](self, other)",
        ]
    for name, attr in ASSIGN.items():
        lines += [
            f"def {name}(self, v):",
            "    if v.__class__ is int:",
            "        n = self._nbits",
            "        if n < _widths:",
            "            up = _upper[n]",
            "            if _lower[n] <= v <= up:",
            f"                self.{attr} = v & up",
            "                return self",
            "    elif isinstance(v, _Bits) and v._nbits == self._nbits:",
            f"        self.{attr} = v._uint",
            "        return self",
            f"    return _originals[{name!r}](self, v)",
        ]
    return "\n".join(lines) + "\n"


def install() -> None:
    """Give PyMTL3's ``Bits`` the int paths (idempotent; every simulator in the process)."""
    if _ORIGINALS:
        return
    import pymtl3.datatypes
    from pymtl3.datatypes import PythonBits

    Bits = PythonBits.Bits
    if pymtl3.datatypes.Bits is not Bits:  # PyMTL3 runs on its compiled (mamba) Bits: nothing to do
        return
    scope = {"_upper": PythonBits._upper, "_lower": PythonBits._lower,
             "_widths": min(len(PythonBits._upper), len(PythonBits._lower)),
             "_new_valid_bits": PythonBits._new_valid_bits, "_originals": _ORIGINALS, "_Bits": Bits}
    missing = [n for n in (*BINARY, *ASSIGN) if n not in vars(Bits)]
    if missing or not isinstance(PythonBits._upper, list):
        raise RuntimeError(f"pymtl3's Bits lacks {missing or '_upper'}: pymtl_fp/bits_int_paths.py "
                           "does not fit this pymtl3 version")
    exec(compile(_source(), "bits_int_paths", "exec"), scope)
    for name in (*BINARY, *ASSIGN):
        _ORIGINALS[name] = vars(Bits)[name]
        setattr(Bits, name, scope[name])


def uninstall() -> None:
    """PyMTL3's own operators again (for the comparison test)."""
    from pymtl3.datatypes import PythonBits

    for name, fn in _ORIGINALS.items():
        setattr(PythonBits.Bits, name, fn)
    _ORIGINALS.clear()
