"""Cluster of FPGA nodes, by role (imports only go down this list):

* :mod:`pymtl_fp.cluster.config` -- :class:`~pymtl_fp.cluster.config.ClusterConfig` (one ``EngineConfig`` per
  node, the link config, topology, clock) and the levels (``fl``, ``cl``, ``rtl``, ``verilator``, mixed);
* :mod:`pymtl_fp.cluster.isa` -- the node program ISA (typed instructions, binary words) and
  the binary form of every instruction, the marks a program reports;
* :mod:`pymtl_fp.cluster.hw` -- the hardware: router/DMA (CL and RTL), node, links joined into a cluster,
  host, the simulated top, the Verilated cluster, the node's IP kit;
* :mod:`pymtl_fp.cluster.compiler` -- partitioning (FPDeep's balancing), the schedule, the buffer plan and
  code generation: one program per node;
* :mod:`pymtl_fp.cluster.run` -- train on the simulated cluster, the report, the trace, the partition search.

``hw`` and ``compiler`` never import each other: they meet in the ISA.
"""
