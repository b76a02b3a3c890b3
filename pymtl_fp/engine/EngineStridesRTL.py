"""Per-command strides (RTL): the products of command fields that address and index a compute
command's tensors, computed once per command and held in registers.

The address generator and the write-back used to multiply command fields together in every cycle
(``((n*CT + ct)*H + h)*W + w``: four chained 32-bit multiplies between the command register and a
buffer address).  With the strides in registers, every address is one level of products of a
counter and a stride, summed (:class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`).

Timing (no cycle added to any command): the first-level products (``hw = h*w``, ``howo =
ho*wo``, ``rs = r*s``) are registered from the *offered* command when EX accepts it (``go``), so
they are valid in the command's first step, together with the command's channel and tile counts;
the second-level products (a channel or tile count times a first-level stride) are registered from
those at every edge, valid from the command's second cycle.  In the first step every loop counter is 0, so
nothing multiplies a second-level stride before it is valid (the address generator's outer
levels move no earlier than the second step).  The ``P`` multiples are constant multiplies.
"""

from pymtl3 import Bits16, Bits32, Component, InPort, OutPort, Wire, update, update_ff, zext

from pymtl_fp.engine.msgs import cmd_type

#: first-level strides (registered at ``go`` from the offered command)
FIRST = ("hw", "howo", "rs")
#: second-level strides: name -> (command field, first-level stride)
SECOND = {"cthw": ("ct", "hw"), "chw": ("c", "hw"), "kthowo": ("kt", "howo"), "cthowo": ("ct", "howo"),
          "khowo": ("k", "howo"), "ctrs": ("ct", "rs"), "crs": ("c", "rs")}
#: ``P`` times a stride: name -> stride
TIMES_P = {"phw": "hw", "phowo": "howo", "prs": "rs", "pcrs": "crs"}
STRIDES = FIRST + tuple(SECOND) + tuple(TIMES_P)


class EngineStridesRTL(Component):
    def construct(s, P=2):
        s.params = dict(P=P)
        B32 = Bits32
        PP32 = B32(P)
        Z16 = Bits16(0)
        s.cmd = InPort(cmd_type())  # the offered command
        s.go = InPort()             # EX accepts it
        for name in STRIDES:
            setattr(s, name, OutPort(32))
        # the command's channel counts, kept for the second level
        s.c_r, s.ct_r, s.k_r, s.kt_r = Wire(16), Wire(16), Wire(16), Wire(16)

        @update_ff
        def up_first():
            if s.reset:
                s.hw <<= B32(0)
                s.howo <<= B32(0)
                s.rs <<= B32(0)
                s.c_r <<= Z16
                s.ct_r <<= Z16
                s.k_r <<= Z16
                s.kt_r <<= Z16
            elif s.go:
                s.hw <<= zext(s.cmd.h, B32) * zext(s.cmd.w, B32)
                s.howo <<= zext(s.cmd.ho, B32) * zext(s.cmd.wo, B32)
                s.rs <<= zext(s.cmd.r, B32) * zext(s.cmd.s, B32)
                s.c_r <<= s.cmd.c
                s.ct_r <<= s.cmd.ct
                s.k_r <<= s.cmd.k
                s.kt_r <<= s.cmd.kt

        @update_ff
        def up_second():
            s.cthw <<= zext(s.ct_r, B32) * s.hw
            s.chw <<= zext(s.c_r, B32) * s.hw
            s.kthowo <<= zext(s.kt_r, B32) * s.howo
            s.cthowo <<= zext(s.ct_r, B32) * s.howo
            s.khowo <<= zext(s.k_r, B32) * s.howo
            s.ctrs <<= zext(s.ct_r, B32) * s.rs
            s.crs <<= zext(s.c_r, B32) * s.rs

        @update
        def up_times_p():
            s.phw @= s.hw * PP32
            s.phowo @= s.howo * PP32
            s.prs @= s.rs * PP32
            s.pcrs @= s.crs * PP32

    def line_trace(s):
        return f"hw{int(s.hw)} howo{int(s.howo)} rs{int(s.rs)} crs{int(s.crs)}"
