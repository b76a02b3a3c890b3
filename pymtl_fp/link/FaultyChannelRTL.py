"""A link's forward channel with a seeded fault injector in front (RTL, synthesizable).

The same delay line as :class:`~pymtl_fp.link.ChannelRTL.ChannelRTL`, after an injector that hurts
flits at runtime-configurable rates, so a Verilated cluster exercises the link's CRC and
go-back-N retransmission at full simulation speed.  Off unless configured: with every rate 0 it
passes flits unchanged.

Each flit entering the channel (``in_val``) draws ``h = hash32(seed, index, flit number)``
(:func:`pymtl_fp.primitives.StochasticHashRTL.hash32`, the stochastic-rounding hash: a pure
function, so a run is reproducible) and ``r = h & 0xffff``:

* ``r < drop``: the flit is lost (``out_val`` low);
* ``drop <= r < drop + burst``: a burst of ``2 + (h >> 29)`` adjacent bits (2..9) is flipped,
  starting at bit ``((h >> 16) & 0x1fff) * nbits >> 13``;
* ``drop + burst <= r < drop + burst + flip``: that one bit is flipped;

i.e. each of ``drop``/``burst``/``flip`` is a probability in units of ``2**-16`` per flit.
``index`` (elaboration parameter) tells links apart, so each draws its own faults from one seed;
``index=None`` takes it from an input port ``f_index`` (8 bits) instead, so that one module
serves every link (a cluster of separately Verilated links, :mod:`pymtl_fp.cluster.hw.verilated_split`).
Ports: those of ChannelRTL, plus ``f_seed`` (32), ``f_drop``, ``f_burst``, ``f_flip`` (16 each) in,
and ``n_dropped``, ``n_flipped`` (32 each) out.
"""

from pymtl3 import Bits8, Bits32, Component, InPort, OutPort, Wire, mk_bits, trunc, update, update_ff, zext

from pymtl_fp.link.ChannelRTL import ChannelRTL
from pymtl_fp.primitives.StochasticHashRTL import StochasticHashRTL


class FaultyChannelRTL(Component):
    def construct(s, nbits, latency, index=0):
        s.params = dict(nbits=nbits, latency=latency, index=index)
        T = mk_bits(nbits)
        W = max(nbits, 32) + 16
        WT = mk_bits(W)
        ONE_W = WT(1)
        s.in_val = InPort()
        s.in_msg = InPort(nbits)
        s.out_val = OutPort()
        s.out_msg = OutPort(nbits)
        s.f_seed = InPort(32)
        s.f_drop = InPort(16)
        s.f_burst = InPort(16)
        s.f_flip = InPort(16)
        s.n_dropped = OutPort(32)
        s.n_flipped = OutPort(32)

        s.hash = StochasticHashRTL()
        s.pipe = ChannelRTL(nbits, latency)
        s.flit = Wire(32)
        s.hash.seed //= s.f_seed
        if index is None:
            s.f_index = InPort(8)
            s.hash.tensor_id //= s.f_index
        else:
            s.hash.tensor_id //= Bits8(index & 0xFF)
        s.hash.index //= s.flit

        s.r = Wire(17)
        s.lim_drop = Wire(17)
        s.lim_burst = Wire(17)
        s.lim_flip = Wire(17)
        s.pos = Wire(W)
        s.len = Wire(W)
        s.mask = Wire(nbits)
        s.do_drop = Wire()
        s.do_burst = Wire()
        s.do_flip = Wire()

        @update
        def up_fault_draw():
            s.r @= zext(s.hash.out[0:16], 17)
            s.lim_drop @= zext(s.f_drop, 17)
            s.lim_burst @= s.lim_drop + zext(s.f_burst, 17)
            s.lim_flip @= s.lim_burst + zext(s.f_flip, 17)
            s.do_drop @= s.in_val & (s.r < s.lim_drop)
            s.do_burst @= s.in_val & ~(s.r < s.lim_drop) & (s.r < s.lim_burst)
            s.do_flip @= s.in_val & ~(s.r < s.lim_burst) & (s.r < s.lim_flip)
            s.pos @= (zext(s.hash.out[16:29], WT) * WT(nbits)) >> WT(13)
            s.len @= zext(s.hash.out[29:32], WT) + WT(2)
            if s.do_burst:
                s.mask @= trunc(((ONE_W << s.len) - ONE_W) << s.pos, T)
            elif s.do_flip:
                s.mask @= trunc(ONE_W << s.pos, T)
            else:
                s.mask @= T(0)
            s.pipe.in_val @= s.in_val & ~s.do_drop
            s.pipe.in_msg @= s.in_msg ^ s.mask

        s.out_val //= s.pipe.out_val
        s.out_msg //= s.pipe.out_msg

        @update_ff
        def up_fault_count():
            if s.reset:
                s.flit <<= Bits32(0)
                s.n_dropped <<= Bits32(0)
                s.n_flipped <<= Bits32(0)
            else:
                if s.in_val:
                    s.flit <<= s.flit + Bits32(1)
                if s.do_drop:
                    s.n_dropped <<= s.n_dropped + Bits32(1)
                if s.do_burst | s.do_flip:
                    s.n_flipped <<= s.n_flipped + Bits32(1)

    def line_trace(s):
        return ("D" if s.do_drop else "X" if (s.do_burst or s.do_flip) else " ") + s.pipe.line_trace()

