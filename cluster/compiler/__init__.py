"""The cluster compiler: a network and a cluster description in, one program per node out.

A run's mapping choices travel as one frozen :class:`~pymtl_fp.cluster.compiler.mapping.Mapping`.
Partitioning (:mod:`~pymtl_fp.cluster.compiler.partition`), the pipeline schedule
(:mod:`~pymtl_fp.cluster.compiler.schedule`), the per-node buffer plan (:mod:`~pymtl_fp.cluster.compiler.buffers`,
:mod:`~pymtl_fp.cluster.compiler.regions`), code generation and the driver
:mod:`~pymtl_fp.cluster.compiler.compile`.

Code generation (:mod:`~pymtl_fp.cluster.compiler.codegen`) runs passes over one
:class:`~pymtl_fp.cluster.compiler.plan.NodePlan` per node: what the node computes
(:mod:`~pymtl_fp.cluster.compiler.geometry`), the dataflow options, where its tensors live, the
program being emitted through the primitive sequences of :mod:`~pymtl_fp.cluster.compiler.emit`.
The passes: :mod:`~pymtl_fp.cluster.compiler.forward` and :mod:`~pymtl_fp.cluster.compiler.backward`
(whole layers), :mod:`~pymtl_fp.cluster.compiler.bands` and :mod:`~pymtl_fp.cluster.compiler.bands_backward`
(row bands), :mod:`~pymtl_fp.cluster.compiler.collectives`, :mod:`~pymtl_fp.cluster.compiler.weight_phase`
with :mod:`~pymtl_fp.cluster.compiler.updates`, :mod:`~pymtl_fp.cluster.compiler.remote_weights` and
:mod:`~pymtl_fp.cluster.compiler.hoist`.  A pass reads and writes the plan only, never another pass's
state.

To add a dataflow (a new way to run an image's forward or backward pass):

1. write its pass: a :class:`~pymtl_fp.cluster.compiler.plan.Pass` subclass in a module of its own
   whose ``run(b, seed, received)`` (forward) or ``run(b, seed)`` (backward) emits image ``b``'s pass
   through the plan's emitter and regions;
2. add its option: a field of :class:`~pymtl_fp.cluster.compiler.plan.Options` (set by
   :func:`~pymtl_fp.cluster.compiler.plan.make_plan`) for which
   :meth:`~pymtl_fp.cluster.compiler.plan.Options.forward_flow` (or ``backward_flow``) returns the
   pass's name, and the pass under that name in :data:`~pymtl_fp.cluster.compiler.codegen.FORWARD`
   (or ``BACKWARD``).

The driver then runs it wherever the schedule places that pass; nothing else changes.
``tests/test_compiled_digest.py`` shows that the existing dataflows compile as before.

Imports :mod:`pymtl_fp.cluster.config` and :mod:`pymtl_fp.cluster.isa`, never the hardware or the runner.
"""
