"""The ports of a module in PyMTL3's emitted SystemVerilog, read from the text: name, direction,
bits per element and unpacked dimensions.

PyMTL3 declares a top's ports one a line in an ANSI header::

    input  logic [31:0] din__msg  ,
    output logic [31:0] st_cnt [0:5],
    input  Top__EngineCmd__3435c40853bdeabb cmd__msg  ,

A port is a packed vector (``logic [N-1:0]``), a packed struct the file defines with
``typedef struct packed { ... } Name;`` (its width is the sum of its fields', nested structs
included), and optionally an unpacked array of them (``[0:5]``).  The constraint files
(:mod:`pymtl_fp.constraints`) and the out-of-context wrapper of place and route
(:mod:`pymtl_fp.pnr_wrapper`) read the ports here, from the Verilog they constrain or wrap.
"""

from __future__ import annotations

import dataclasses
import math
import re


@dataclasses.dataclass(frozen=True)
class Port:
    """One port of a module: ``bits`` per element, ``dims`` the unpacked dimensions (``()`` for none)."""
    name: str
    direction: str  #: "input" or "output"
    bits: int
    dims: tuple = ()

    @property
    def elements(self) -> int:
        return math.prod(self.dims) if self.dims else 1

    @property
    def total_bits(self) -> int:
        return self.bits * self.elements

    @property
    def is_vector(self) -> bool:
        """Whether tools name its bits ``name[i]`` (an unpacked array or a packed vector of 2 bits
        or more); a ``logic [0:0]`` port is one bit named ``name``."""
        return bool(self.dims) or self.bits > 1


_RANGE = re.compile(r"\[\s*(\d+)\s*:\s*(\d+)\s*\]")
_TYPEDEF = re.compile(r"typedef\s+struct\s+packed\s*\{(.*?)\}\s*([A-Za-z_]\w*)\s*;", re.S)
_FIELD = re.compile(r"^\s*(\w+)\s*((?:\[\s*\d+\s*:\s*\d+\s*\]\s*)*)([A-Za-z_]\w*)\s*;", re.M)


def _span(ranges: str) -> list:
    return [abs(int(a) - int(b)) + 1 for a, b in _RANGE.findall(ranges)]


def struct_widths(text: str) -> dict:
    """Bits of every ``typedef struct packed`` in ``text`` (fields of type ``logic``/``bit`` with
    packed ranges, or a struct defined before)."""
    widths: dict = {}
    for body, name in _TYPEDEF.findall(text):
        total = 0
        for typ, ranges, _field in _FIELD.findall(body):
            base = 1 if typ in ("logic", "bit", "reg", "wire") else widths.get(typ)
            if base is None:
                raise ValueError(f"struct {name}: field of unknown type {typ}")
            total += base * math.prod(_span(ranges) or [1])
        widths[name] = total
    return widths


def module_ports(text: str, module: str) -> list:
    """The ports of ``module`` in ``text``, in declaration order.  Raises ``ValueError`` naming
    what it cannot read (no such module, a port type that is neither ``logic`` nor a struct)."""
    m = re.search(r"^\s*module\s+" + re.escape(module) + r"\s*(?:#\s*\(.*?\)\s*)?\((.*?)\);", text, re.M | re.S)
    if not m:
        raise ValueError(f"no module {module} in the Verilog")
    widths = struct_widths(text)
    ports = []
    for decl in m.group(1).split(","):
        decl = re.sub(r"//.*", "", decl).strip()
        if not decl:
            continue
        d = re.match(r"^(input|output)\s+(\w+)\s*((?:\[\s*\d+\s*:\s*\d+\s*\]\s*)*)([A-Za-z_]\w*)\s*"
                     r"((?:\[\s*\d+\s*:\s*\d+\s*\]\s*)*)$", decl)
        if not d:
            raise ValueError(f"module {module}: cannot read the port declaration {decl!r}")
        direction, typ, packed, name, unpacked = d.groups()
        if typ in ("logic", "wire", "reg", "bit"):
            bits = math.prod(_span(packed) or [1])
        elif typ in widths:
            bits = widths[typ] * math.prod(_span(packed) or [1])
        else:
            raise ValueError(f"module {module}: port {name} of unknown type {typ}")
        ports.append(Port(name, direction, bits, tuple(_span(unpacked))))
    return ports
