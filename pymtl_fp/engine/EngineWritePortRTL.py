"""Write port of one engine buffer (RTL, combinational): the compute unit's when it writes that
buffer this cycle, else the loader's.

Buffer ``buf`` (a :data:`pymtl_fp.engine.msgs` buffer id, ``lanes`` lanes of ``width`` bits)
takes EX's whole write (``ex_addr``, every lane's ``ex_wen``/``ex_wdata``) in a cycle with
``ex_we``; otherwise LD's: in a cycle with ``ld_we`` and target ``buf``, the ``E`` elements
``ld_data[j]`` of a beat to word ``ld_addr``, lanes ``ld_lane + j`` for every ``j`` with
``ld_lmask[j]`` (the other lanes keep their contents).  ``ld_lane`` is a multiple of ``E`` and
``E`` divides ``lanes``, so beat lane ``j`` only ever goes to buffer lanes ``b*E + j``: the data
are wired, only the enables depend on ``ld_lane``.  The acceptance rule
(:class:`EngineAcceptRTL`) never lets LD and EX write one buffer at the same time.
"""

from pymtl3 import Component, InPort, OutPort, Wire, update

from pymtl_fp.engine import msgs


class EngineWritePortRTL(Component):
    def construct(s, buf=0, lanes=2, width=8, addr_bits=8, E=1):
        if lanes % E:
            raise ValueError(f"EngineWritePortRTL: E={E} must divide lanes={lanes}")
        s.params = dict(buf=buf, lanes=lanes, width=width, addr_bits=addr_bits, E=E)
        s.buf_id = buf
        s.lanes = lanes
        BUF = buf
        NB = lanes // E  # beats per word
        s.ld_we = InPort()
        s.ld_tgt = InPort(3)
        s.ld_addr = InPort(addr_bits)
        s.ld_lane = InPort(16)
        s.ld_lmask = InPort(E)
        s.ld_data = [InPort(width) for _ in range(E)]
        s.ex_we = InPort()
        s.ex_addr = InPort(addr_bits)
        s.ex_wen = [InPort() for _ in range(lanes)]
        s.ex_wdata = [InPort(width) for _ in range(lanes)]
        s.waddr = OutPort(addr_bits)
        s.wen = [OutPort() for _ in range(lanes)]
        s.wdata = [OutPort(width) for _ in range(lanes)]
        s.ld_wen_flat = [Wire() for _ in range(lanes)]  # LD's lane enables and data
        s.ld_wdata = [Wire(width) for _ in range(lanes)]

        # the lanes as beats: [b][j] = lane b*E + j (wiring only; PyMTL3 types an index computed
        # in an update block too wide for the array)
        s.ld_wen = [[Wire() for _ in range(E)] for _ in range(NB)]
        for b in range(NB):
            for j in range(E):
                s.ld_wen[b][j] //= s.ld_wen_flat[b * E + j]
                s.ld_wdata[b * E + j] //= s.ld_data[j]

        @update
        def up_write_port_ld():
            for b in range(NB):
                for j in range(E):
                    s.ld_wen[b][j] @= s.ld_we & (s.ld_tgt == BUF) & (s.ld_lane == b * E) & s.ld_lmask[j]

        @update
        def up_write_port():
            if s.ex_we:
                s.waddr @= s.ex_addr
                for i in range(lanes):
                    s.wen[i] @= s.ex_wen[i]
                    s.wdata[i] @= s.ex_wdata[i]
            else:
                s.waddr @= s.ld_addr
                for i in range(lanes):
                    s.wen[i] @= s.ld_wen_flat[i]
                    s.wdata[i] @= s.ld_wdata[i]

    def line_trace(s):
        lanes = "".join("w" if s.wen[i] else "." for i in range(s.lanes))
        return f"{msgs.BUF_NAMES[s.buf_id]}:{'X' if s.ex_we else 'L'}{int(s.waddr):>4}[{lanes}]"
