"""Running a compiled cluster: a whole training session from the data to the output files, what
``pymtl-fp train --engine cluster`` runs (:mod:`~pymtl_fp.cluster.run.session`), train on the simulated
hardware (:mod:`~pymtl_fp.cluster.run.train`), the
report of a run (:mod:`~pymtl_fp.cluster.run.report`), its timeline as a Perfetto trace and a picture
(:mod:`~pymtl_fp.cluster.run.trace`, :mod:`~pymtl_fp.cluster.run.trace_plot`) and the partition search that
simulates candidates (:mod:`~pymtl_fp.cluster.run.tune`), and the node kit's test case, a one-node training
step with the golden model's expected outputs (:mod:`~pymtl_fp.cluster.run.kit_case`).

The top of the cluster package: imports the compiler and the hardware.
"""
