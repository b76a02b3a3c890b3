"""Per-command strides (RTL): the products of geometry fields that address and index a compute
command's tensors, read from the command being executed.

The host computes them (:data:`pymtl_fp.engine.encoding.PRODUCTS`: ``hw = h*w``, ``cthw =
ct*h*w``, ...; :func:`~pymtl_fp.engine.encoding.pack` fills them in), so the engine multiplies
no two command fields together: every address is one level of products of a counter and a stride
(:class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`), and the strides are valid from the command's
first step (the command register ``cmd_r`` holds them).  This unit only zero-extends them and forms
the ``P`` multiples (constant multiplies: shifts when ``P`` is a power of two).

History: the engine used to multiply command fields in every cycle (four chained 32-bit
multiplies between the command register and a buffer address), then in per-command registers at
``go`` (about 17 DSP48s); both are gone.
"""

from pymtl3 import Bits32, Component, InPort, OutPort, update, zext

from pymtl_fp.engine.msgs import cmd_type

#: the strides that are command fields
FIELD_STRIDES = ("hw", "howo", "rs", "cthw", "chw", "kthowo", "cthowo", "khowo", "ctrs", "crs")
#: ``P`` times a stride: name -> stride (``pihw``, ``pihowo``: a channel tile in the flat index of
#: the whole result map, of which a row-band command computes a band)
TIMES_P = {"pihw": "ihw", "pihowo": "ihowo", "prs": "rs", "pcrs": "crs",
           # a batch-parallel fwd: P output channels of a map (words), P images of its flat index
           "phowo": "howo", "pkhowo": "khowo"}
#: the strides of the address units (AddrGenRTL)
STRIDES = FIELD_STRIDES + tuple(TIMES_P)
#: the requantizer's lane strides: a channel of the whole result map (fwd's y, bwd_data's dx)
LANE_STRIDES = ("ihowo", "ihw")


class EngineStridesRTL(Component):
    def construct(s, P=2):
        s.params = dict(P=P)
        B32 = Bits32
        PP32 = B32(P)
        s.cmd = InPort(cmd_type())  # the command being executed
        for name in STRIDES + LANE_STRIDES:
            setattr(s, name, OutPort(32))

        @update
        def up_fields():
            s.hw @= zext(s.cmd.hw, B32)
            s.howo @= zext(s.cmd.howo, B32)
            s.rs @= zext(s.cmd.rs, B32)
            s.cthw @= zext(s.cmd.cthw, B32)
            s.chw @= zext(s.cmd.chw, B32)
            s.kthowo @= zext(s.cmd.kthowo, B32)
            s.cthowo @= zext(s.cmd.cthowo, B32)
            s.khowo @= zext(s.cmd.khowo, B32)
            s.ctrs @= zext(s.cmd.ctrs, B32)
            s.crs @= zext(s.cmd.crs, B32)
            s.ihowo @= zext(s.cmd.ihowo, B32)
            s.ihw @= zext(s.cmd.ihw, B32)

        @update
        def up_times_p():
            s.pihw @= zext(s.cmd.ihw, B32) * PP32
            s.pihowo @= zext(s.cmd.ihowo, B32) * PP32
            s.prs @= zext(s.cmd.rs, B32) * PP32
            s.pcrs @= zext(s.cmd.crs, B32) * PP32
            s.phowo @= zext(s.cmd.howo, B32) * PP32
            s.pkhowo @= zext(s.cmd.khowo, B32) * PP32

    def line_trace(s):
        return f"hw{int(s.hw)} howo{int(s.howo)} rs{int(s.rs)} crs{int(s.crs)}"
