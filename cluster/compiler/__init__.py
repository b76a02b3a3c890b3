"""The cluster compiler: a network and a cluster description in, one program per node out.

A run's mapping choices travel as one frozen :class:`~pymtl_fp.cluster.compiler.mapping.Mapping`.
Partitioning (:mod:`~pymtl_fp.cluster.compiler.partition`), the pipeline schedule
(:mod:`~pymtl_fp.cluster.compiler.schedule`), the per-node buffer plan (:mod:`~pymtl_fp.cluster.compiler.buffers`,
:mod:`~pymtl_fp.cluster.compiler.regions`), code generation (:mod:`~pymtl_fp.cluster.compiler.codegen` and its
parts: row bands, collectives, weight phase, remote weights, hoisting) over the primitive sequences of
:mod:`~pymtl_fp.cluster.compiler.emit`, and the driver :mod:`~pymtl_fp.cluster.compiler.compile`.

Imports :mod:`pymtl_fp.cluster.config` and :mod:`pymtl_fp.cluster.isa`, never the hardware or the runner.
"""
