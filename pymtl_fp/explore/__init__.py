"""Design-space and scaling studies for CNN training on chains of FPGAs (``pymtl-fp explore``).

Analytic, shape-level models only -- nothing here simulates hardware:

* :mod:`.layers` / :mod:`.zoo`     -- network records (conv / fc / pool / add) with FP, BP and WG
  multiply-accumulate counts, and a zoo of published networks checked against published totals;
  a simulated net (:class:`pymtl_fp.net.Net`) enters as a view, ``Network.from_net``;
* :mod:`.devices` / :mod:`.links`  -- FPGA parts from public datasheets, FPGA-to-FPGA link models;
* :mod:`.fpga_model`               -- an FPGA's ``E`` ``P x P`` engines and what one FP/BP/WG
  operation costs on them (:mod:`pymtl_fp.cost.layer`: the closed forms the RTL validates);
* :mod:`.chain`                    -- a network cut into pieces along a 1-D chain: per-stage
  cycles, per-cut traffic (:mod:`.ranges`: costs of position ranges) and per-stage storage
  (:mod:`.chain_storage`);
* :mod:`.partition`                -- even split, FPDeep balancing, optimal DP, exhaustive search;
  a simulated cluster (:class:`pymtl_fp.cluster.config.ClusterConfig`) enters as a view,
  ``Cluster.from_config``;
* :mod:`.scaling` / :mod:`.design` -- the FPDeep-style scaling sweep and the DarkFPGA-style
  single-FPGA parameter search;
* :mod:`.report`                   -- CSV / Markdown tables and PNG plots.
"""

from pymtl_fp.explore.layers import Layer, Network
from pymtl_fp.explore.zoo import NETWORKS, get_network

__all__ = ["NETWORKS", "Layer", "Network", "get_network"]
