"""Which dataflow per layer: channel-parallel, tap-packed or batch-parallel (analytic, the timing model).

The engine runs a conv / fc layer's passes in one of three dataflows, all bit-exact with the golden
model at every level (the closed forms of :mod:`pymtl_fp.timing` are the RTL's cycles):

* **channel** -- output x input channels on the ``P x P`` array (every pass);
* **packed** -- tap packing (:mod:`pymtl_fp.engine.packing`): a layer fed from off the engine
  (no ``bwd_data``) runs as a 1x1 conv over its ``C*R*S`` packed input channels (fwd and
  bwd_weight);
* **batch** -- batch-parallel ``fwd`` (``bp = 1``, DarkFPGA's batch-level parallelism): the array's
  columns carry ``P`` images of the batch, its rows ``P`` output channels, each MAC accumulating
  its own output over the input channels and taps.  ``bwd_data`` and ``bwd_weight`` stay
  channel-parallel: the weight gradient's reduction is over the batch, which the array already
  runs in time at full rate (its outer mode), and images on the reduction lanes would need ``P``
  words of one map a cycle from a buffer with one read port.

:func:`layer_modes` gives each pass's cycles and MAC utilization under each mode and the fastest;
:func:`study` does it for every MAC layer of a network at several array sides and batches, with the
whole network's FP + BP + WG utilization for the channel-only engine, with tap packing, and with
every mode.  A batch-parallel layer keeps its maps batch-innermost, so where its input comes from
(the host or DRAM, or the layer before) must lay it out so: on one FPGA training from DRAM
(:mod:`.design`, DarkFPGA's setting) the DMA does; on the simulated cluster, where a layer's
input is the on-chip output of the layer before, only a first layer could (not built).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pymtl_fp.cost.engine import ConvShape, conv_cycles, tap_packed_shape, useful_macs
from pymtl_fp.cost.layer import layer_shape

MODES = ("channel", "packed", "batch")
PASSES = (("fp", "fwd"), ("bp", "bwd_data"), ("wg", "bwd_weight"))


@dataclass(frozen=True)
class LayerModes:
    """One MAC layer on a ``P x P`` engine, ``batch`` images a command."""

    layer: str
    P: int
    batch: int
    macs: dict     #: pass -> useful MACs of the batch
    cycles: dict   #: pass -> mode -> compute cycles (modes the pass can run in)
    choice: dict   #: pass -> the fastest mode (channel on a tie)

    def utilization(self, pas: str, mode: str) -> float:
        c = self.cycles[pas].get(mode)
        return self.macs[pas] / (self.P * self.P * c) if c else float("nan")


def layer_modes(layer, P: int, batch: int, needs_dx: bool = True) -> LayerModes:
    """Cycles and utilization of a conv / fc ``layer`` (one group) under each mode."""
    if layer.kind not in ("conv", "fc"):
        raise ValueError(f"layer {layer.name!r} ({layer.kind}) has no MAC passes")
    if layer.kind == "conv" and layer.groups != 1:
        raise ValueError(f"layer {layer.name!r}: grouped convolutions are not studied here")
    shape = ConvShape(n=batch, k=layer.K, **layer_shape(layer))
    macs, cycles = {}, {}
    for pas, op in PASSES:
        if op == "bwd_data" and not needs_dx:
            continue
        macs[pas] = useful_macs(op, shape.fields(P))
        cycles[pas] = {"channel": conv_cycles(P, op, shape)}
        if not needs_dx and shape.r * shape.s > 1 and op != "bwd_data":
            cycles[pas]["packed"] = conv_cycles(P, op, tap_packed_shape(shape))
        if op == "fwd":
            cycles[pas]["batch"] = conv_cycles(P, op, replace(shape, bp=True))
    choice = {pas: min(MODES, key=lambda m, c=c: (c.get(m, float("inf")), MODES.index(m)))
              for pas, c in cycles.items()}
    return LayerModes(layer.name, P, batch, macs, cycles, choice)


@dataclass
class ModeStudy:
    network: str
    arrays: tuple
    batches: tuple
    rows: list     #: one dict per (layer, P, batch)
    totals: list   #: one dict per (P, batch): whole-network utilization per engine variant

    def to_dataframe(self, table: str = "layers"):
        """``layers`` (one row per layer, P and batch) or ``network`` (one per P and batch)."""
        import pandas as pd

        if table not in ("layers", "network"):
            raise ValueError(f"table {table!r}: choose layers or network")
        return pd.DataFrame(self.rows if table == "layers" else self.totals)


#: the engine variants of the whole-network figure: the modes each may use
VARIANTS = {"channel only": ("channel",), "with tap packing": ("channel", "packed"),
            "every mode": MODES}


def study(network, arrays=(16, 32), batches=(4, 32), layers=None) -> ModeStudy:
    """Every MAC layer of ``network`` (or those named in ``layers``) on ``P x P`` engines for each
    ``P`` in ``arrays`` and batch in ``batches``: per pass the utilization under each mode and the
    choice, and per (P, batch) the whole network's FP + BP + WG utilization (useful MACs over
    ``P^2`` x the cycles of the fastest allowed mode of every pass) for each of :data:`VARIANTS`."""
    macs_layers = [ly for ly in network.layers if ly.has_macs]
    if layers:
        unknown = set(layers) - {ly.name for ly in macs_layers}
        if unknown:
            raise ValueError(f"{network.name} has no MAC layer(s) {', '.join(sorted(unknown))}")
    rows, totals = [], []
    for P in arrays:
        for batch in batches:
            per = [(ly, layer_modes(ly, P, batch, any(s != "input" for s in ly.inputs))) for ly in macs_layers]
            for ly, lm in per:
                if layers and ly.name not in layers:
                    continue
                row = {"layer": ly.name, "P": P, "batch": batch}
                for pas, _ in PASSES:
                    for m in MODES:
                        row[f"{pas}_{m}"] = lm.utilization(pas, m) if pas in lm.cycles else float("nan")
                    row[f"{pas}_choice"] = lm.choice.get(pas, "")
                rows.append(row)
            tot = {"P": P, "batch": batch}
            useful = sum(sum(lm.macs.values()) for _, lm in per)
            for name, allowed in VARIANTS.items():
                cyc = sum(min(c for m, c in lm.cycles[pas].items() if m in allowed)
                          for _, lm in per for pas in lm.cycles)
                tot[name] = useful / (P * P * cyc)
            totals.append(tot)
    return ModeStudy(network.name, tuple(arrays), tuple(batches), rows, totals)


def study_markdown(res: ModeStudy) -> str:
    """Per layer: the forward pass's utilization under each mode and the choice, the backward
    passes' (channel, packed) and choice; then the whole-network figures."""
    def pct(v):
        return "-" if v != v else f"{100 * v:.0f} %"

    out = [f"### Dataflow per layer: {res.network}", "",
           "| layer | P | batch | FP channel | FP packed | FP batch | FP choice | BP channel | WG channel | "
           "WG packed | WG choice |", "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    for r in res.rows:
        out.append(f"| {r['layer']} | {r['P']} | {r['batch']} | {pct(r['fp_channel'])} | {pct(r['fp_packed'])} | "
                   f"{pct(r['fp_batch'])} | {r['fp_choice']} | {pct(r['bp_channel'])} | {pct(r['wg_channel'])} | "
                   f"{pct(r['wg_packed'])} | {r['wg_choice']} |")
    out += ["", "Whole network, FP + BP + WG MAC utilization:", "",
            "| P | batch | " + " | ".join(VARIANTS) + " |", "|---:|---:|" + "---:|" * len(VARIANTS)]
    for t in res.totals:
        out.append(f"| {t['P']} | {t['batch']} | " + " | ".join(f"{100 * t[v]:.1f} %" for v in VARIANTS) + " |")
    return "\n".join(out) + "\n"
