"""``explore partition``'s study as one call: a network cut over a chain of (possibly different)
FPGAs by every method (even, FPDeep's greedy, the exact DP and, with the memory limit, the DP with
FPDeep's weight balancing), each priced in time (:mod:`.partition`) and energy
(:func:`pymtl_fp.energy.estimate.chain_energy`).  Analytical, at paper scale; the command
(``pymtl_fp.cli.explore_studies``) and :func:`pymtl_fp.api.partition` both run it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PartitionStudy:
    """Every method's :class:`~pymtl_fp.explore.partition.Evaluation` (``evals``) of ``chain`` on
    ``cluster`` (the devices file's ``name`` and ``description``), one summary row per method
    (``summary``) and one row per (method, FPGA) (``rows``)."""

    network: str
    devices: str
    description: str
    chain: object
    cluster: object
    evals: dict
    summary: list
    rows: list
    seconds: float

    def to_dataframe(self, table: str = "summary"):
        """``summary`` (one row per method) or ``fpgas`` (one row per method and FPGA)."""
        import pandas as pd

        if table not in ("summary", "fpgas"):
            raise ValueError(f"table {table!r}: choose summary or fpgas")
        return pd.DataFrame(self.summary if table == "summary" else self.rows)


def study(network, precision, batch: int = 32, pieces: int = 8, split: str = "auto", devices=None,
          memory_limit: bool = False) -> PartitionStudy:
    """Cut ``network`` (an explore :class:`~pymtl_fp.explore.layers.Network`) at ``precision`` over the
    chain of the devices file ``devices`` (default: the 16 asymmetric FPGAs shipped with the
    package).  A malformed devices file is a :class:`~pymtl_fp.explore.clusterfile.ClusterFileError`."""
    from pymtl_fp.energy.estimate import chain_energy
    from pymtl_fp.explore import report
    from pymtl_fp.explore.balanced_partition import compare_balanced
    from pymtl_fp.explore.chain import Chain
    from pymtl_fp.explore.clusterfile import example_path, load_cluster

    cluster, name, desc = load_cluster(Path(devices) if devices else example_path(), precision, memory_limit)
    t0 = time.perf_counter()
    chain = Chain(network, precision, batch, pieces, split)
    evals = compare_balanced(chain, cluster)
    seconds = time.perf_counter() - t0
    energies = {m: chain_energy(network, cluster, ev, batch) for m, ev in evals.items()}
    return PartitionStudy(network.name, name, desc, chain, cluster, evals, report.partition_summary(evals, energies),
                          report.partition_rows(chain, cluster, evals), seconds)
