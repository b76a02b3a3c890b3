"""Cluster of FPGA nodes: network/cluster descriptions, partitioning, per-node programs, the cluster top.

* :mod:`pymtl_fp.cluster.config` -- :class:`~pymtl_fp.cluster.config.ClusterConfig` (one ``EngineConfig`` per node,
  the link config, topology, clock) and the levels (``fl``, ``cl``, ``rtl``, ``verilator``, mixed);
* :mod:`pymtl_fp.cluster.partition` -- FPDeep's workload balancing over a chain, with layers split by
  output channels between two neighbours;
* :mod:`pymtl_fp.cluster.compile` -- one program per node (engine commands, link sends and receives, DMA
  copies, bias updates), the per-node buffer plan and its check;
* :mod:`pymtl_fp.cluster.router` -- the router/DMA of a node (CL behaviour at every level);
* :mod:`pymtl_fp.cluster.host` -- the host at the chain's ends (images in, loss gradient back);
* :mod:`pymtl_fp.cluster.top` -- the PyMTL3 top: nodes (engine + router), links, host;
* :mod:`pymtl_fp.cluster.run` -- train on the simulated cluster and report where the cycles go.
"""
