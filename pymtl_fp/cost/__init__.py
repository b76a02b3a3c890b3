"""The cost model: every cycle count and transfer time of the hardware, defined once.

* :mod:`.latency` -- per-unit latencies (the compute overhead, the engine's optional pipelines,
  the router's command issue and scalar units), the constants the rest is built from;
* :mod:`.engine` -- closed-form occupancy of every engine command (``LOAD``/``STORE`` streams,
  each operation and dataflow: channel-parallel, batch-parallel, tap-packed), checked against the
  RTL cycle for cycle (also importable as :mod:`pymtl_fp.timing`);
* :mod:`.layer` -- the same closed forms applied to shape-level layers on ``E`` engines of
  ``P x P`` (the design-space tools' per-layer cycles, DarkFPGA-style tiling, residual additions);
* :mod:`.link` -- transfer time on a link: cycles of a simulated link (elements at its measured
  message rate) and seconds of a physical one (bits at its payload bandwidth), and line coding.

The engine's timing and CL model, the cluster compiler (work model, modelled program cycles), the
cluster report's bounds and the design-space tools all call these; none keeps its own formula or
copy of a constant.  Where callers compose the same closed forms differently, they model different
things:

* a compute command's occupancy counts the engine's command register (``cmd_latency``) where each
  command is offered to an idle engine -- a test bench's drive, the partitioner's work model and
  ``--wgrad auto``'s choice (:func:`pymtl_fp.engine.program.compute_cycles`) -- and not where it is
  counted from acceptance: the compiled program's modelled compute, its trace and its energy
  activity (:func:`.engine.engine_compute_cycles`, :func:`pymtl_fp.engine.program.command_cycles`);
* the partitioner's work per image runs ``fwd`` and ``bwd_data`` one image a command and
  ``bwd_weight`` over the batch, as the compiled programs do; the design-space tools'
  (:func:`.layer.engine_layer_cycles`) run every operation on ``batch`` images a command and
  scale shares by rows or channels, as the FPDeep-style models of whole networks do;
* the explore per-node model (:mod:`pymtl_fp.explore.node_model`) re-derives each node's commands
  from the partition alone, independently of the compiler, to check it.

The package sits at the lowest layer and imports nothing above it: hardware configurations are
read through their attributes (``P``, ``drain_rows``, ``wb_latency``, ...).
"""
