// A plain C++ Verilator bench for the emitted engine, written only against what
// `pymtl-fp translate --unit engine` emits: the C header T.h (command fields, pack function) and
// the flat-port wrapper T_axis (AXI-Stream names).  Nothing of pymtl-fp's Python harness is used.
//
// Build (see tests/test_engine_ipkit.py):
//   verilator --cc --build --exe -Wall T_waivers.vlt T_pkg.sv T.sv T_axis.sv engine_tb.cpp \
//     --top-module T_axis -CFLAGS "-DENGINE_TOP=T -I<out dir>"
// Run:  ./VT_axis PROGRAM OUT [STALL_PERCENT SEED]
//
// PROGRAM is text, one item per line (the format of tb/cocotb/program_file.py, shared with the
// cocotb bench):
//   cmd <field>=<value> ...   a command (fields by name, as in the header's field table)
//   din <value>               one element of the data-in stream (signed decimal)
// OUT receives every data-out element, one signed decimal per line.  Each stream stalls with
// probability STALL_PERCENT % per cycle (a seeded generator).  Exit status 0 when every command
// was accepted, every din element consumed, the engine is idle and dout has been quiet for a while.
//
// Beats: din/dout carry T_STREAM_LANES (E) elements of 32 bits per beat, element i in bits
// [32*i, 32*i + 32).  Each LOAD's elements go out E per beat (surplus lanes of its last beat 0);
// each STORE's beats are cut back to its count elements (a non-zero surplus lane is an error).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(a) #a
#define STR(a) STR_(a)
#define E(x) CAT(ENGINE_TOP, x)

#include STR(ENGINE_TOP.h)
#include STR(CAT(CAT(V, ENGINE_TOP), _axis.h))
#include "verilated.h"

typedef CAT(CAT(V, ENGINE_TOP), _axis) Top;

static uint64_t rng_state = 1;
static bool stall(unsigned percent) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned)((rng_state >> 33) % 100) < percent;
}

// one beat <-> E 32-bit words, whatever type Verilator gives the port (IData, QData or VlWide)
static void put_beat(IData &port, const uint32_t *w) { port = w[0]; }
static void put_beat(QData &port, const uint32_t *w) { port = (QData)w[0] | ((QData)w[1] << 32); }
template <std::size_t N> static void put_beat(VlWide<N> &port, const uint32_t *w) {
  for (std::size_t i = 0; i < N; ++i) port[i] = w[i];
}
static void get_beat(const IData &port, uint32_t *w) { w[0] = port; }
static void get_beat(const QData &port, uint32_t *w) { w[0] = (uint32_t)port; w[1] = (uint32_t)(port >> 32); }
template <std::size_t N> static void get_beat(const VlWide<N> &port, uint32_t *w) {
  for (std::size_t i = 0; i < N; ++i) w[i] = port[i];
}

static void set_field(E(_cmd_t) * c, const std::string &name, uint32_t value) {
  // the struct's members are in the field table's order, each a uint32_t
  uint32_t *members = reinterpret_cast<uint32_t *>(c);
  for (unsigned i = 0; i < E(_CMD_NFIELDS); ++i)
    if (name == E(_cmd_fields)[i].name) { members[i] = value; return; }
  std::fprintf(stderr, "engine_tb: unknown command field %s\n", name.c_str());
  std::exit(2);
}

int main(int argc, char **argv) {
  if (argc < 3) { std::fprintf(stderr, "usage: %s PROGRAM OUT [STALL_PERCENT SEED]\n", argv[0]); return 2; }
  unsigned percent = argc > 3 ? std::atoi(argv[3]) : 0;
  rng_state = argc > 4 ? std::strtoull(argv[4], nullptr, 10) + 1 : 1;
  static_assert(sizeof(E(_cmd_t)) == 4 * E(_CMD_NFIELDS), "one uint32_t per field");

  const unsigned lanes = E(_STREAM_LANES);
  std::vector<std::vector<uint32_t>> cmds;
  std::vector<uint32_t> din;                       // elements, in file order
  std::vector<uint32_t> load_counts, store_counts;  // elements per LOAD / STORE, in order
  std::ifstream in(argv[1]);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string kind;
    ss >> kind;
    if (kind == "cmd") {
      E(_cmd_t) c;
      std::memset(&c, 0, sizeof c);
      std::string kv;
      uint32_t op = 0, count = 0;
      while (ss >> kv) {
        size_t eq = kv.find('=');
        uint32_t value = (uint32_t)std::strtoul(kv.c_str() + eq + 1, nullptr, 10);
        set_field(&c, kv.substr(0, eq), value);
        if (kv.substr(0, eq) == "op") op = value;
        if (kv.substr(0, eq) == "count") count = value;
      }
      if (op == E(_OP_LOAD)) load_counts.push_back(count);
      if (op == E(_OP_STORE)) store_counts.push_back(count);
      E(_cmd_products)(&c);  // the product fields (h*w, ...) from the geometry fields
      std::vector<uint32_t> w(E(_CMD_WORDS));
      if (int bad = E(_cmd_pack)(&c, w.data())) {
        std::fprintf(stderr, "engine_tb: field %s does not fit\n", E(_cmd_fields)[bad - 1].name);
        return 2;
      }
      cmds.push_back(w);
    } else if (kind == "din") {
      long long v;
      ss >> v;
      din.push_back((uint32_t)v);  // sign-extended to the stream width by the cast (STREAM_BITS = 32)
    }
  }
  static_assert(E(_STREAM_BITS) == 32, "this bench drives 32-bit stream elements");
  // the din beats: each LOAD's elements, E per beat
  std::vector<std::vector<uint32_t>> beats;
  size_t pos = 0;
  for (uint32_t n : load_counts) {
    for (uint32_t b = 0; b < n; b += lanes) {
      std::vector<uint32_t> w(lanes, 0);
      for (uint32_t i = 0; i < lanes && b + i < n; ++i) {
        if (pos >= din.size()) { std::fprintf(stderr, "engine_tb: the LOADs take more din elements than given\n"); return 2; }
        w[i] = din[pos++];
      }
      beats.push_back(w);
    }
  }
  if (pos != din.size()) { std::fprintf(stderr, "engine_tb: %zu din elements, the LOADs take %zu\n", din.size(), pos); return 2; }

  Verilated::commandArgs(argc, argv);
  Top *top = new Top;
  std::vector<uint32_t> out;  // every dout beat's E words
  std::vector<uint32_t> w(lanes);
  size_t ci = 0, di = 0;
  long quiet = 0, cycle = 0;
  top->clk = 0;
  top->reset = 1;
  for (int i = 0; i < 2; ++i) { top->clk = 0; top->eval(); top->clk = 1; top->eval(); }
  top->reset = 0;
  while (cycle < 20000000) {
    top->clk = 0;
    bool vc = ci < cmds.size() && !stall(percent);
    bool vd = di < beats.size() && !stall(percent);
    bool rd = !stall(percent);
    top->cmd_tvalid = vc;
    if (vc) for (unsigned i = 0; i < E(_CMD_WORDS); ++i) top->cmd_tdata[i] = cmds[ci][i];
    top->din_tvalid = vd;
    if (vd) put_beat(top->din_tdata, beats[di].data());
    top->dout_tready = rd;
    top->eval();  // combinational outputs (tready, tvalid) of this cycle
    bool cmd_fire = vc && top->cmd_tready, din_fire = vd && top->din_tready;
    bool dout_fire = rd && top->dout_tvalid;
    if (dout_fire) {
      get_beat(top->dout_tdata, w.data());
      out.insert(out.end(), w.begin(), w.end());
    }
    top->clk = 1;
    top->eval();
    ++cycle;
    ci += cmd_fire;
    di += din_fire;
    bool done = ci == cmds.size() && di == beats.size() && !top->busy;
    quiet = (done && !dout_fire) ? quiet + 1 : 0;
    if (quiet > 64) break;
  }
  bool ok = ci == cmds.size() && di == beats.size() && !top->busy;
  // each STORE's beats back to its elements
  std::vector<int32_t> elements;
  size_t at = 0;
  for (uint32_t n : store_counts) {
    size_t words = (size_t)(n + lanes - 1) / lanes * lanes;
    for (size_t i = 0; i < words && at + i < out.size(); ++i) {
      if (i < n) elements.push_back((int32_t)out[at + i]);
      else if (out[at + i] != 0) { std::fprintf(stderr, "engine_tb: non-zero surplus lane in a STORE's last beat\n"); ok = false; }
    }
    at += words;
  }
  if (at != out.size()) ok = false;
  std::FILE *f = std::fopen(argv[2], "w");
  for (int32_t v : elements) std::fprintf(f, "%d\n", v);
  std::fclose(f);
  std::printf("%s cycles=%ld commands=%zu/%zu din=%zu/%zu beats dout=%zu\n", ok ? "DONE" : "HANG", cycle, ci,
              cmds.size(), di, beats.size(), elements.size());
  top->final();
  delete top;
  return ok ? 0 : 1;
}
