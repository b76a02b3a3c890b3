"""Costs of position ranges of a chain (:class:`~pymtl_fp.explore.chain.Chain`): a per-unit additive
cost (compute cycles, MACs, storage bits) extended to every range ``[a, b)`` of cut positions,
summed unit by unit (the definition) or from per-unit tables and prefix sums (vectors of ranges and
the whole ``(M+1) x (M+1)`` matrix the partitioners search); and weighted sums of such costs.
"""

from __future__ import annotations

import numpy as np


class RangeFunc:
    """A per-unit additive cost extended to position ranges ``[a, b)`` of the chain.

    Built from ``part(u, n_lo, n_hi)``: the cost of unit ``u``'s share between boundaries
    ``n_lo`` and ``n_hi`` (rows or channels); only share *sizes* matter except for functions
    that say otherwise.  ``scalar`` sums unit by unit (the plain definition); ``vec`` and
    ``matrix`` use per-unit tables and prefix sums (the fast path, checked against ``scalar``).
    """

    def __init__(self, chain, part):
        self.chain = chain
        self.part = part
        ch = chain
        self._tables = []
        full = np.zeros(len(ch.units) + 1)
        for u, unit in enumerate(ch.units):
            q, b = unit.pieces, unit.bounds
            t = np.zeros((q + 1, q + 1))
            for i in range(q + 1):
                for j in range(i + 1, q + 1):
                    t[i, j] = part(u, int(b[i]), int(b[j]))
            self._tables.append(t)
            full[u + 1] = full[u] + t[0, q]
        self.full_cum = full
        M = ch.M
        self.tail = np.zeros(M + 1)     # cost from start position to its unit's end
        self.head = np.zeros(M + 1)     # cost from its unit's start to end position
        for m in range(M):
            u, p = ch.start_u[m], ch.start_p[m]
            self.tail[m] = self._tables[u][p, ch.units[u].pieces]
        for m in range(1, M + 1):
            u, p = ch.end_u[m], ch.end_p[m]
            self.head[m] = self._tables[u][0, p]

    def scalar(self, a: int, b: int) -> float:
        """Cost of pieces ``[a, b)``, summed directly unit by unit."""
        ch = self.chain
        if b <= a:
            return 0.0
        ua, pa = ch.start_u[a], ch.start_p[a]
        ub, pb = ch.end_u[b], ch.end_p[b]
        total = 0.0
        for u in range(ua, ub + 1):
            unit = ch.units[u]
            lo = unit.bounds[pa] if u == ua else 0
            hi = unit.bounds[pb] if u == ub else unit.extent
            if hi > lo:
                total += self.part(u, int(lo), int(hi))
        return total

    def vec(self, a, b) -> np.ndarray:
        """Costs of ``[a[i], b[i])`` for arrays of positions (0 where ``b <= a``)."""
        ch = self.chain
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        a_c = np.minimum(a, ch.M - 1)
        b_c = np.maximum(b, 1)
        ua, ub = ch.start_u[a_c], ch.end_u[b_c]
        cross = self.tail[a_c] + (self.full_cum[ub] - self.full_cum[np.minimum(ua + 1, ub)]) \
            + self.head[b_c]
        out = np.where(ua < ub, cross, 0.0)
        same = (ua == ub) & (b > a)
        if np.any(same):
            idx = np.nonzero(same)
            for k in zip(*idx):
                u = ua[k]
                out[k] = self._tables[u][ch.start_p[a_c[k]], ch.end_p[b_c[k]]]
        return np.where(b > a, out, 0.0)

    def matrix(self) -> np.ndarray:
        """``(M+1) x (M+1)`` matrix of ``[a, b)`` costs (0 on and below the diagonal)."""
        ch = self.chain
        M = ch.M
        a = np.arange(M + 1)
        a_c = np.minimum(a, M - 1)
        b_c = np.maximum(a, 1)
        ua = ch.start_u[a_c][:, None]
        ub = ch.end_u[b_c][None, :]
        cross = self.tail[a_c][:, None] + self.head[b_c][None, :] + \
            (self.full_cum[ub] - self.full_cum[np.minimum(ua + 1, ub)])
        mat = np.where(ua < ub, cross, 0.0)
        for u, unit in enumerate(ch.units):
            o, q = ch.offset[u], unit.pieces
            mat[o:o + q + 1, o:o + q + 1] = self._tables[u]
        return np.triu(mat, 1)


class RangeSum:
    """A weighted sum of :class:`RangeFunc` (same interface)."""

    def __init__(self, chain, terms):
        self.chain = chain
        self.terms = terms

    def scalar(self, a, b):
        return sum(w * f.scalar(a, b) for w, f in self.terms)

    def vec(self, a, b):
        return sum(w * f.vec(a, b) for w, f in self.terms)

    def matrix(self):
        return sum(w * f.matrix() for w, f in self.terms)
