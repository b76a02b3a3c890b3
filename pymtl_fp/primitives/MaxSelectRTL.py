"""Signed max-select with argmax (RTL, combinational): one step of a max-pooling reduction.

Models, at register-transfer level, ``max`` over a pooling window with the index of the
**first** maximum (the argmax that max-pool backward routes the gradient to).  ``a``/``a_idx``
is the earlier element (or the running maximum), ``b``/``b_idx`` the later one::

    b_wins  = b > a            (signed; strict, so on a tie the earlier element a wins)
    out     = b     if b_wins else a
    out_idx = b_idx if b_wins else a_idx

Chained over a window in scan order (running maximum in ``a``), or as a tree whose left input
is always the earlier half, it returns the first maximum.  Elaboration parameters: ``bits``
(value width, signed, 2..128), ``idx_bits`` (index width, 1..32).  Ports: in ``a``, ``b``
(bits), ``a_idx``, ``b_idx`` (idx_bits); out ``out`` (bits), ``out_idx`` (idx_bits), ``b_wins`` (1).
The signed compare flips both sign bits and compares unsigned.
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update


class MaxSelectRTL(Component):
    def construct(s, bits=8, idx_bits=4):
        if not (2 <= bits <= 128 and 1 <= idx_bits <= 32):
            raise ValueError(f"MaxSelectRTL needs 2 <= bits <= 128 and 1 <= idx_bits <= 32, "
                             f"got bits={bits}, idx_bits={idx_bits}")
        s.params = dict(bits=bits, idx_bits=idx_bits)
        SIGN = mk_bits(bits)(1 << (bits - 1))
        s.a = InPort(bits)
        s.a_idx = InPort(idx_bits)
        s.b = InPort(bits)
        s.b_idx = InPort(idx_bits)
        s.out = OutPort(bits)
        s.out_idx = OutPort(idx_bits)
        s.b_wins = OutPort()

        s.gt = Wire()

        @update
        def up_select():
            s.gt @= (s.b ^ SIGN) > (s.a ^ SIGN)
            s.b_wins @= s.gt
            if s.gt:
                s.out @= s.b
                s.out_idx @= s.b_idx
            else:
                s.out @= s.a
                s.out_idx @= s.a_idx

    def line_trace(s):
        return (f"max({int(s.a.int())}@{int(s.a_idx)}, {int(s.b.int())}@{int(s.b_idx)})"
                f"={int(s.out.int())}@{int(s.out_idx)}{' b' if s.b_wins else ' a'}")
