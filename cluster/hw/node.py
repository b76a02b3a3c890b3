"""One FPGA node: an engine joined to its router/DMA, with the same external ports at every level.

::

    fwd_in  bwd_in  host_in                 fwd_out  bwd_out  host_out
        \\      |      /                          ^       ^       ^
         router/DMA (program bus, status) ---------+-------+-------+
           | cmd  | din   ^ dout   ^ busy
           v      v       |        |
                 engine

* :class:`NodeRTL` -- :class:`~pymtl_fp.engine.EngineRTL.EngineRTL` +
  :class:`~pymtl_fp.cluster.hw.RouterRTL.RouterRTL`: synthesizable, translatable as one Verilog top
  (:func:`node_module_name`);
* :class:`NodeCL` -- :class:`~pymtl_fp.engine.EngineCL.EngineCL` + :class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`
  (``status=False``, the cluster's default: the status ports other than ``st_state`` stay 0 and
  the report reads the router's Python counters, which hold the same figures);
* :class:`NodeFL` -- :class:`~pymtl_fp.engine.EngineFL.EngineFL` + ``RouterCL`` timing compute
  commands with the engine's timing model ("FL with timed compute").

Ports: the link streams ``fwd_in``/``bwd_in`` (in) and ``fwd_out``/``bwd_out`` (out), the host side
channel ``host_in``/``host_out`` (initial weights in, final weights out), the router's program bus
(``prog_we``, ``prog_sel``, ``prog_addr``, ``prog_data``, ``tab_data``; written while reset is
high) and its status outputs (:func:`~pymtl_fp.cluster.hw.router_config.status_ports`).  The
FPGA-to-FPGA links are outside the node: a cluster joins nodes with whole links (LinkRTL =
transmitter + channel + receiver), so nodes of any level mix in one cluster.
"""

from __future__ import annotations

from pymtl3 import Component, InPort, OutPort, connect
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.router_config import (
    RouterConfig,
    declare_status_ports,
    router_config_for,
    status_ports,
)
from pymtl_fp.engine.msgs import data_type

BUS = ("prog_we", "prog_sel", "prog_addr", "prog_data", "tab_data")


def node_params(ecfg, rcfg: RouterConfig) -> dict:
    """Every elaboration parameter of a node (engine's and router's, prefixed; the router's as the
    node builds it, :func:`router_config_for`)."""
    rcfg = router_config_for(ecfg, rcfg)
    return {**{f"e{k}": v for k, v in ecfg.params().items()}, **{f"r{k}": v for k, v in rcfg.params().items()}}


def node_module_name(ecfg, rcfg: RouterConfig) -> str:
    from pymtl_fp.verilate import module_name

    return module_name("NodeRTL", node_params(ecfg, rcfg))


class _Node(Component):
    """Wiring shared by every level (subclasses choose the engine and the router)."""

    def _wire(s, ecfg, rcfg, engine, router):
        T = data_type(ecfg)
        s.ecfg, s.rcfg = ecfg, rcfg
        s.engine, s.router = engine, router
        s.router.cmd //= s.engine.cmd
        s.router.din //= s.engine.din
        s.engine.dout //= s.router.dout
        s.router.busy //= s.engine.busy
        s.fwd_in, s.bwd_in, s.host_in = RecvIfcRTL(T), RecvIfcRTL(T), RecvIfcRTL(T)
        s.fwd_out, s.bwd_out, s.host_out = SendIfcRTL(T), SendIfcRTL(T), SendIfcRTL(T)
        for name in ("fwd_in", "bwd_in", "host_in"):
            connect(getattr(s, name), getattr(s.router, name))
        for name in ("fwd_out", "bwd_out", "host_out"):
            connect(getattr(s.router, name), getattr(s, name))
        s.prog_we = InPort()
        s.prog_sel = InPort()
        s.prog_addr = InPort(16)
        s.prog_data = InPort(isa.instr_type())
        s.tab_data = InPort(32)
        for name in BUS:
            connect(getattr(s.router, name), getattr(s, name))
        declare_status_ports(s, rcfg, OutPort)
        for name, _, count in status_ports(rcfg):
            if count is None:
                connect(getattr(s, name), getattr(s.router, name))
            else:
                for i in range(count):
                    connect(getattr(s, name)[i], getattr(s.router, name)[i])

    def line_trace(s):
        return s.router.line_trace()


class NodeRTL(_Node):
    def construct(s, ecfg, rcfg: RouterConfig):
        from pymtl3.passes.backends.verilog import VerilogTranslationPass

        from pymtl_fp.cluster.hw.RouterRTL import RouterRTL
        from pymtl_fp.engine.registry import engine_class

        rcfg = router_config_for(ecfg, rcfg)
        s.params = node_params(ecfg, rcfg)
        s._wire(ecfg, rcfg, engine_class("rtl")(ecfg), RouterRTL(rcfg))
        s.set_metadata(VerilogTranslationPass.explicit_module_name, node_module_name(ecfg, rcfg))


class NodeCL(_Node):
    def construct(s, ecfg, rcfg: RouterConfig, prog=None, table=None, name="node", stall=None, status=False):
        from pymtl_fp.cluster.hw.RouterCL import RouterCL
        from pymtl_fp.engine.registry import engine_class

        rcfg = router_config_for(ecfg, rcfg)
        s._wire(ecfg, rcfg, engine_class("cl")(ecfg), RouterCL(rcfg, prog, table, name=name, stall=stall, ecfg=ecfg,
                                                     status_ports=status))


class NodeFL(_Node):
    def construct(s, ecfg, rcfg: RouterConfig, prog=None, table=None, name="node", stall=None, status=False):
        from pymtl_fp.cluster.hw.RouterCL import RouterCL
        from pymtl_fp.engine.registry import engine_class

        rcfg = router_config_for(ecfg, rcfg)
        s._wire(ecfg, rcfg, engine_class("fl")(ecfg), RouterCL(rcfg, prog, table, timed=True, name=name, stall=stall,
                                                     ecfg=ecfg, status_ports=status))


#: level -> node class (``verilator``: NodeRTL translated and imported)
NODE_LEVELS = {"fl": NodeFL, "cl": NodeCL, "rtl": NodeRTL}
