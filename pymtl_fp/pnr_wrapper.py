"""The out-of-context wrapper that lets a unit with hundreds of port bits be placed and routed on a
real FPGA package: registers on every port, the wide ports reached through five pins.

The tiny engine has 811 port bits; the ECP5-85F's largest package has 365 user I/Os.  The wrapper
(``<top>_ooc``) has the unit's clock and five pins: ``clk``, ``reset_pin``, ``si`` (serial in),
``cap`` (capture) and ``so`` (serial out):

* every input bit of the unit (the reset included) comes from a flip-flop: the input bits form one
  shift register fed by ``si``, the reset a register of ``reset_pin``;
* every output bit goes into a register (``out_q``), then into a parallel-load shift register
  (``cap`` loads it, else it shifts towards ``so``).

So every path of the unit runs from a register to a register, as inside a larger design, and its
logic stays whole: each input bit is a distinct flip-flop of unknown value (none is constant), and
each output bit reaches the pin ``so`` through the capture chain, so synthesis can remove only
what no output depends on.  The wrapper adds ``inputs + 2 * outputs + 1`` flip-flops and one LUT
per output bit (the capture multiplexer); its own paths are one LUT between two registers.
"""

from __future__ import annotations

from pymtl_fp.verilog_ports import Port

#: the wrapper's pins
PINS = ("clk", "reset_pin", "si", "cap", "so")


def wrapper_name(top: str) -> str:
    return f"{top}_ooc"


def overhead(ports: list) -> dict:
    """What the wrapper adds: flip-flops and LUTs (the capture multiplexers)."""
    n_in = sum(p.total_bits for p in ports if p.direction == "input" and p.name not in ("clk", "reset"))
    n_out = sum(p.total_bits for p in ports if p.direction == "output")
    return dict(input_bits=n_in, output_bits=n_out, ffs=n_in + 2 * n_out + 1, luts=n_out)


def _decl(p: Port, wire: str) -> str:
    dims = "".join(f" [0:{d - 1}]" for d in p.dims)
    return f"  logic [{p.bits - 1}:0] {wire}{dims};"


def _elements(p: Port, wire: str) -> list:
    """The wire's elements in order (``w[0][1]``...), each ``p.bits`` wide."""
    refs = [wire]
    for d in p.dims:
        refs = [f"{r}[{i}]" for r in refs for i in range(d)]
    return refs


def write(ports: list, top: str) -> str:
    """The wrapper module's SystemVerilog for ``top`` with ``ports`` (:func:`pymtl_fp.verilog_ports.module_ports`).
    The unit's clock must be ``clk`` and its reset ``reset`` (PyMTL3's names)."""
    names = {p.name for p in ports}
    if not {"clk", "reset"} <= names:
        raise ValueError(f"{top} has no clk/reset ports: cannot wrap it")
    n = overhead(ports)
    n_in, n_out = max(n["input_bits"], 1), max(n["output_bits"], 1)
    body, conns, pos_in, pos_out = [], [".clk(clk)", ".reset(rst_q)"], 0, 0
    for p in ports:
        if p.name in ("clk", "reset"):
            continue
        wire = f"u_{p.name}"
        body.append(_decl(p, wire))
        for ref in _elements(p, wire):
            if p.direction == "input":
                body.append(f"  assign {ref} = in_sr[{pos_in + p.bits - 1}:{pos_in}];")
                pos_in += p.bits
            else:
                body.append(f"  assign out_w[{pos_out + p.bits - 1}:{pos_out}] = {ref};")
                pos_out += p.bits
        conns.append(f".{p.name}({wire})")
    shift_in = "{in_sr[%d:0], si}" % (n_in - 2) if n_in > 1 else "si"
    shift_out = "{out_sr[%d:0], 1'b0}" % (n_out - 2) if n_out > 1 else "1'b0"
    lines = [
        f"// Out-of-context wrapper of {top} for place and route (pymtl_fp.pnr_wrapper): every input bit from",
        f"// a shift register fed by si ({n['input_bits']} bits), every output bit registered and captured into",
        f"// a shift register read at so ({n['output_bits']} bits).",
        f"module {wrapper_name(top)} (",
        "  input  logic clk,",
        "  input  logic reset_pin,",
        "  input  logic si,",
        "  input  logic cap,",
        "  output logic so",
        ");",
        "  logic rst_q;",
        f"  logic [{n_in - 1}:0] in_sr;",
        f"  logic [{n_out - 1}:0] out_w, out_q, out_sr;",
        "  always_ff @(posedge clk) begin",
        "    rst_q <= reset_pin;",
        f"    in_sr <= {shift_in};",
        "    out_q <= out_w;",
        f"    out_sr <= cap ? out_q : {shift_out};",
        "  end",
        f"  assign so = out_sr[{n_out - 1}];",
        *body,
    ]
    if n["output_bits"] == 0:
        lines.append("  assign out_w = 1'b0;")
    lines += [f"  {top} dut (", "    " + ",\n    ".join(conns), "  );", "endmodule", ""]
    return "\n".join(lines)
