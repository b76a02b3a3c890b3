"""Cluster of FPGA nodes: network/cluster descriptions, partitioning, per-node programs, the cluster top."""
