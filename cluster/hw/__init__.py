"""The cluster's hardware, at every level: a node's router/DMA (``RouterCL``, ``RouterRTL`` and its
units, :mod:`~pymtl_fp.cluster.hw.router_config`), the node (engine + router,
:mod:`~pymtl_fp.cluster.hw.node`), the nodes joined by links (:mod:`~pymtl_fp.cluster.hw.ClusterNet`),
the host at the chain's ends (:mod:`~pymtl_fp.cluster.hw.host`, :mod:`~pymtl_fp.cluster.hw.host_side`),
the simulated top (:mod:`~pymtl_fp.cluster.hw.top`), the whole RTL cluster Verilated
(:mod:`~pymtl_fp.cluster.hw.verilated`; its nodes and links Verilated once per module and joined in
C++, :mod:`~pymtl_fp.cluster.hw.verilated_split`), what a run reads of the routers' status
(:mod:`~pymtl_fp.cluster.hw.observe`) and the node's IP kit (:mod:`~pymtl_fp.cluster.hw.ipkit`; its AXI4-Stream
wrapper :mod:`~pymtl_fp.cluster.hw.kit_axi` and C++ bench :mod:`~pymtl_fp.cluster.hw.kit_bench`).

Imports :mod:`pymtl_fp.cluster.config` and :mod:`pymtl_fp.cluster.isa`, never the compiler or the runner.
"""
