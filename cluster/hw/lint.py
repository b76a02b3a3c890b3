"""Lint waivers of the node and cluster Verilog: those of the engine (the node's largest part) and
none of their own -- the router, the links and the fault injector lint clean under PyMTL3's shared
waivers (``tests/test_cluster_verilog.py``)."""

from pymtl_fp.engine.verilog import ENGINE_WAIVERS

CLUSTER_WAIVERS = dict(ENGINE_WAIVERS)
