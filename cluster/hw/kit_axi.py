"""The node kit's AXI4-Stream wrapper (``W.sv``, module ``W``: ``T_axi`` or ``translate --name``'s name):
the node ``T`` with flat ports and short names, generated SystemVerilog (no PyMTL3 component).

* every link and host stream of :class:`~pymtl_fp.cluster.hw.node.NodeRTL` (``fwd_in``, ``bwd_in``,
  ``host_in`` in; ``fwd_out``, ``bwd_out``, ``host_out`` out) is an AXI4-Stream port
  (``s_axis_<name>_*`` / ``m_axis_<name>_*``) behind a two-entry register slice (``W_skid``): every
  ``tready`` and ``tvalid`` the wrapper drives is a register, so no input reaches an output in the same
  cycle; ``tdata`` is a beat (``STREAM_LANES * STREAM_BITS`` bits) rounded up to whole bytes (the
  padding is ignored in, zero out).  A slice adds one cycle of latency and keeps full throughput;
* the program bus (``prog_*``, ``tab_data``) becomes ``s_axis_prog``: 32-bit words framed by TLAST.
  A frame's first word is a header (``[31:30]`` type: 0 program memory, 1 gather table, 2 start;
  ``[29:16]`` zero; ``[15:0]`` first address); a program frame then carries instructions of
  ``INSTR_WORDS`` words each (the words of ``T_instr_pack()``, least significant first), a table frame
  one word per entry, at consecutive addresses; a start frame is the header alone.  A stream rather
  than AXI-Lite registers: the program is written once, in bulk, while the node is held in reset --
  what a DMA engine pushes -- and an instruction is ``INSTR_WORDS`` words, which registers would
  take one write (and an address) each;
* the node is held in reset from ``aresetn`` until a start frame (``running`` then rises); program and
  table frames are taken only before it;
* sticky errors, cleared by ``aresetn`` only: ``load_err`` (a frame that ends inside an instruction, a
  start frame with a payload, type 3, non-zero reserved header bits, an address past the memory, a
  program frame while running; the rest of the frame is dropped) and ``cmd_err`` with
  ``cmd_err_code`` (an ENG, LOAD or STORE instruction whose engine command breaks one of the rules of
  the engine kit's ``cmd_check()`` a LOAD or STORE can break -- an op or target that does not exist, words past the
  target buffer -- is not written; the first one's code).  The node's engine wraps such an address to
  word 0 and its router has no error for it (its ``st_error`` is a buffer overflow): engine commands
  come only from the program, whose addresses do not change at run time, so checking each instruction
  as it is loaded refuses every such command.  A start frame after any error is ignored: a refused
  program never runs;
* the status outputs are flat, one port per element (``st_cnt_<state>``, ``st_sent_fwd`` ...).

:func:`axi_wrapper` gives the text; ``tests/test_node_kit_bench.py`` lints it ``-Wall`` and drives it
from the kit's plain C++ bench (:mod:`pymtl_fp.cluster.hw.kit_bench`).
"""

from __future__ import annotations

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.router_config import STATES
from pymtl_fp.engine.kit_axi import check_block
from pymtl_fp.wordkit import sv_last_word_pad, tdata_bytes, words32

#: the streams: (node port, AXI port, input?)
STREAMS = (("fwd_in", "s_axis_fwd_in", True), ("bwd_in", "s_axis_bwd_in", True), ("host_in", "s_axis_host_in", True),
           ("fwd_out", "m_axis_fwd_out", False), ("bwd_out", "m_axis_bwd_out", False),
           ("host_out", "m_axis_host_out", False))
#: the header's frame types
FRAME_PROG, FRAME_TABLE, FRAME_START = 0, 1, 2
#: the three streams of the st_sent / st_recv / st_out_peak status arrays, in index order
STATUS_STREAMS = ("fwd", "bwd", "host")


def instr_words() -> int:
    """32-bit words of an instruction on ``s_axis_prog``."""
    return words32(isa.INSTR_BITS)


def data_bytes(rcfg) -> int:
    """Bytes of a stream's ``tdata``."""
    return tdata_bytes(rcfg.stream_bits * rcfg.stream_lanes)


def header_word(kind: int, addr: int = 0) -> int:
    """A frame header (see the module docstring)."""
    return (kind << 30) | addr


def flat_status() -> list:
    """The wrapper's status outputs: ``(wrapper port, node port expression, bits)``."""
    out = [("st_state", "st_state", 3)]
    out += [(f"st_cnt_{s}", f"st_cnt[{i}]", 32) for i, s in enumerate(STATES)]
    out += [("st_mark_val", "st_mark_val", 1), ("st_mark_id", "st_mark_id", isa.MARK_BITS),
            ("st_done_val", "st_done_val", 1), ("st_done_id", "st_done_id", isa.DONE_BITS),
            ("st_cycle", "st_cycle", 32), ("st_halted", "st_halted", 1), ("st_pc", "st_pc", isa.PC_BITS),
            ("st_iter", "st_iter", 16)]
    for arr in ("st_sent", "st_recv", "st_out_peak"):
        out += [(f"{arr}_{s}", f"{arr}[{i}]", 32) for i, s in enumerate(STATUS_STREAMS)]
    out += [("st_scratch_peak", "st_scratch_peak", 32), ("st_error", "st_error", 1)]
    return out


def _skid(name: str) -> str:
    return f"""// {name}: a two-entry register slice (skid buffer): s_ready, m_valid and m_data are registers; full
// throughput; one cycle from s to m.
module {name} #(parameter int W = 32) (
  input  logic         clk,
  input  logic         rst,
  input  logic [W-1:0] s_data,
  input  logic         s_valid,
  output logic         s_ready,
  output logic [W-1:0] m_data,
  output logic         m_valid,
  input  logic         m_ready
);
  logic [W-1:0] main_q, skid_q;
  logic main_v, skid_v;
  assign s_ready = !skid_v;
  assign m_valid = main_v;
  assign m_data = main_q;
  always_ff @(posedge clk) begin
    if (rst) begin
      main_v <= 1'b0;
      skid_v <= 1'b0;
    end else if (m_ready || !main_v) begin  // the main entry moves on (or is empty)
      if (skid_v) begin
        main_q <= skid_q;
        main_v <= 1'b1;
        skid_v <= 1'b0;
      end else begin
        main_q <= s_data;
        main_v <= s_valid;
      end
    end else if (s_valid && !skid_v) begin  // held: the beat offered waits in the skid entry
      skid_q <= s_data;
      skid_v <= 1'b1;
    end
  end
endmodule
"""


def axi_wrapper(top: str, wrapper: str, prefix: str, cfg) -> str:
    """The text of ``<wrapper>.sv``: module ``wrapper`` around node ``top``; the package is ``<prefix>_pkg``."""
    ecfg, rcfg = cfg
    bw = rcfg.stream_bits * rcfg.stream_lanes
    db = data_bytes(rcfg) * 8
    IW = instr_words()
    ib = isa.INSTR_BITS
    wc = max(1, IW.bit_length())
    pkg = f"{prefix}_pkg"
    in_table = f"waddr_q < 16'd{rcfg.table_depth}" if rcfg.table_depth < 1 << 16 else "1'b1"  # (every address)
    ports = ["  input  logic        aclk,", "  input  logic        aresetn,",
             "  input  logic [31:0] s_axis_prog_tdata,", "  input  logic        s_axis_prog_tvalid,",
             "  input  logic        s_axis_prog_tlast,", "  output logic        s_axis_prog_tready,"]
    for _, ax, is_in in STREAMS:
        d, o = ("input ", "output") if is_in else ("output", "input ")
        ports += [f"  {d} logic [{db - 1}:0] {ax}_tdata,", f"  {d} logic        {ax}_tvalid,",
                  f"  {o} logic        {ax}_tready,"]
    ports += ["  output logic        running,     // the node is out of reset (a start frame was taken)",
              "  output logic        load_err,    // sticky: a malformed program frame (dropped)",
              "  output logic        cmd_err,     // sticky: an instruction was refused (not written)",
              "  output logic [7:0]  cmd_err_code,  // the first refused one's code (engine cmd_check() codes)"]
    ports += [f"  output logic [{b - 1}:0] {name}," if b > 1 else f"  output logic        {name},"
              for name, _, b in flat_status()]
    ports[-1] = ports[-1].rstrip(",")
    words = []
    for i in range(IW - 1):  # (the last word goes straight to the write register)
        words.append(f"            if (wcnt_q == {wc}'d{i}) instr_q[{32 * i + 31}:{32 * i}] <= s_axis_prog_tdata;")
    unused = sv_last_word_pad("s_axis_prog_tdata", ib, "INSTR_BITS")
    slices, node_streams = [], []
    for name, ax, is_in in STREAMS:
        pad_in = f"{ax}_tdata[{bw - 1}:0]" if db != bw else f"{ax}_tdata"
        if is_in:
            slices.append(f"""  logic [{bw - 1}:0] {name}_msg;
  logic {name}_val, {name}_rdy;
  {wrapper}_skid #(.W({bw})) {name}_slice (
    .clk(aclk), .rst(!aresetn), .s_data({pad_in}), .s_valid({ax}_tvalid), .s_ready({ax}_tready),
    .m_data({name}_msg), .m_valid({name}_val), .m_ready({name}_rdy));""")
            if db != bw:
                slices.append(f"  /* verilator lint_off UNUSEDSIGNAL */\n  logic [{db - bw - 1}:0] {name}_pad;  // byte "
                              f"padding: ignored\n  assign {name}_pad = {ax}_tdata[{db - 1}:{bw}];\n"
                              "  /* verilator lint_on UNUSEDSIGNAL */")
        else:
            out_data = f"{name}_data" if db != bw else f"{ax}_tdata"
            padded = "" if db == bw else (f"logic [{bw - 1}:0] {name}_data;\n  assign {ax}_tdata = "
                                          f"{{{db - bw}'b0, {name}_data}};\n  ")
            slices.append(f"""  logic [{bw - 1}:0] {name}_msg;
  logic {name}_val, {name}_rdy;
  {padded}{wrapper}_skid #(.W({bw})) {name}_slice (
    .clk(aclk), .rst(!aresetn), .s_data({name}_msg), .s_valid({name}_val), .s_ready({name}_rdy),
    .m_data({out_data}), .m_valid({ax}_tvalid), .m_ready({ax}_tready));""")
        node_streams.append(f".{name}__msg({name}_msg), .{name}__val({name}_val), .{name}__rdy({name}_rdy)")
    arrays = {}
    for flat, node, _ in flat_status():
        if "[" in node:
            arrays.setdefault(node.split("[")[0], []).append(flat)
    scalar_conn = [f".{node}({flat})" for flat, node, _ in flat_status() if "[" not in node]
    array_decl = "\n".join(f"  logic [31:0] {a}_arr [0:{len(v) - 1}];" for a, v in arrays.items())
    array_assign = "\n".join(f"  assign {f} = {a}_arr[{i}];" for a, v in arrays.items() for i, f in enumerate(v))
    array_conn = [f".{a}({a}_arr)" for a in arrays]
    conns = ",\n    ".join(["  .clk(aclk), .reset(node_reset)",
                            ".prog_we(prog_we), .prog_sel(sel_q), .prog_addr(waddr_q), .prog_data(wins_q), "
                            ".tab_data(wtab_q)"] + node_streams + scalar_conn + array_conn).lstrip()
    return f"""// {wrapper}.sv: node {prefix} with AXI4-Stream ports (generated by pymtl-fp translate; do not edit).
// Program: s_axis_prog, 32-bit words framed by tlast; header [31:30] type (0 program, 1 gather table, 2 start),
// [29:16] zero, [15:0] first address; then INSTR_WORDS = {IW} words per instruction ({prefix}_instr_pack()),
// or one word per table entry; a start frame (the header alone) releases the node from reset.  Streams:
// {bw}-bit beats in {db // 8}-byte tdata, behind register slices (registered tready and tvalid, one cycle).
// load_err, cmd_err (sticky): a malformed frame; an ENG/LOAD/STORE instruction refused by the rules of
// the engine kit's cmd_check() a LOAD or STORE can break (code in cmd_err_code).  aclk rising edge; aresetn
// synchronous, active low.
module {wrapper} (
{chr(10).join(ports)}
);
  logic node_reset, run_q, in_frame_q, drop_q, pend_q, sel_q, lerr_q, cerr_q, rdy_q, prog_we, write_ok, cmd_ok;
  logic take, is_cmd_kind;
  logic [1:0] typ_q;
  logic [15:0] addr_q, waddr_q;
  logic [{wc - 1}:0] wcnt_q;  // words of the current instruction taken
  logic [{32 * (IW - 1) - 1}:0] instr_q;  // the instruction's words but its last, being assembled
  {pkg}::instr_t wins_q;  // the instruction (or table word) to write
  logic [31:0] wtab_q;
  logic [7:0] bad_code, code_q;
  logic [63:0] lanes, depth, stream_end;
  /* verilator lint_off UNUSEDSIGNAL */
  {pkg}::cmd_t wcmd;  // the instruction's engine command: the check reads op, target, addr and count
  /* verilator lint_on UNUSEDSIGNAL */
{unused}{array_decl}
  assign take = s_axis_prog_tvalid && rdy_q;
  assign s_axis_prog_tready = rdy_q;  // a register: 1 from the cycle after reset
  assign node_reset = !aresetn || !run_q;
  assign running = run_q;
  assign load_err = lerr_q;
  assign cmd_err = cerr_q;
  assign cmd_err_code = code_q;
  assign wcmd = wins_q.cmd;
  assign is_cmd_kind = wins_q.kind == 4'd{isa.ENG} || wins_q.kind == 4'd{isa.LOAD} || wins_q.kind == 4'd{isa.STORE};
  assign cmd_ok = !is_cmd_kind || bad_code == 8'd0;
  assign write_ok = sel_q ? {in_table} : (waddr_q < 16'd{rcfg.prog_depth} && cmd_ok);
  assign prog_we = pend_q && write_ok;
{array_assign}

  // an instruction's engine command, checked before it is written
{check_block(ecfg, "wcmd")}
  always_ff @(posedge aclk) begin
    if (!aresetn) begin
      run_q <= 1'b0;
      in_frame_q <= 1'b0;
      drop_q <= 1'b0;
      pend_q <= 1'b0;
      lerr_q <= 1'b0;
      cerr_q <= 1'b0;
      code_q <= 8'd0;
      rdy_q <= 1'b0;
      wcnt_q <= '0;
    end else begin
      rdy_q <= 1'b1;
      pend_q <= 1'b0;
      if (pend_q && !write_ok) begin  // the entry written last cycle was refused
        if (sel_q || waddr_q >= 16'd{rcfg.prog_depth}) lerr_q <= 1'b1;
        else if (!cerr_q) begin
          cerr_q <= 1'b1;
          code_q <= bad_code;
        end
      end
      if (take && !in_frame_q) begin  // a header
        typ_q <= s_axis_prog_tdata[31:30];
        addr_q <= s_axis_prog_tdata[15:0];
        wcnt_q <= '0;
        if (s_axis_prog_tdata[29:16] != 14'd0 || s_axis_prog_tdata[31:30] == 2'd3
            || (s_axis_prog_tdata[31:30] != 2'd{FRAME_START} && run_q)
            || (s_axis_prog_tdata[31:30] == 2'd{FRAME_START} && !s_axis_prog_tlast)) begin
          lerr_q <= 1'b1;
          drop_q <= 1'b1;
        end else begin
          drop_q <= 1'b0;
          if (s_axis_prog_tdata[31:30] == 2'd{FRAME_START} && !lerr_q && !cerr_q
              && !(pend_q && !write_ok)) run_q <= 1'b1;
        end
        in_frame_q <= !s_axis_prog_tlast;
      end else if (take) begin  // a payload word
        if (s_axis_prog_tlast) in_frame_q <= 1'b0;
        if (!drop_q) begin
          if (typ_q == 2'd{FRAME_TABLE}) begin
            wtab_q <= s_axis_prog_tdata;
            waddr_q <= addr_q;
            sel_q <= 1'b1;
            pend_q <= 1'b1;
            addr_q <= addr_q + 16'd1;
          end else begin
{chr(10).join(words)}
            if (wcnt_q == {wc}'d{IW - 1}) begin
              wcnt_q <= '0;
              wins_q <= {{s_axis_prog_tdata[{ib - 32 * (IW - 1) - 1}:0], instr_q[{32 * (IW - 1) - 1}:0]}};
              waddr_q <= addr_q;
              sel_q <= 1'b0;
              pend_q <= 1'b1;
              addr_q <= addr_q + 16'd1;
            end else begin
              wcnt_q <= wcnt_q + {wc}'d1;
              if (s_axis_prog_tlast) lerr_q <= 1'b1;  // the frame ends inside an instruction
            end
          end
        end
      end
    end
  end

  // the streams: a register slice each (registered tready and tvalid)
{chr(10).join(slices)}

  {top} node (
    {conns}
  );
endmodule

{_skid(f"{wrapper}_skid")}"""
