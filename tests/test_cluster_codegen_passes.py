"""Code generation as passes over a per-node plan (:mod:`pymtl_fp.cluster.compiler.plan`,
:mod:`pymtl_fp.cluster.compiler.codegen`): a new dataflow is one pass plus one option, the driver
runs it wherever the schedule places the pass, and the plan's parts start as the buffer plan needs
them (O's result slots first, every image kept)."""

from __future__ import annotations

from pymtl_fp.cluster.compiler import codegen
from pymtl_fp.cluster.compiler.compile import check_training, choose_partition, compile_cluster
from pymtl_fp.cluster.compiler.forward import Forward
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.plan import Options, make_plan
from pymtl_fp.cluster.compiler.schedule import step_order
from pymtl_fp.golden.train import TrainConfig
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import seeded_params, small_cluster

NET = load_net("lenet-digits")
PREC = "8"
TCFG = TrainConfig(PREC, lr_log2=3, seed=11)


def _compile(n=3, batch=4, **kw):
    ccfg = small_cluster(n, NET, PREC)
    part = choose_partition(NET, ccfg, batch)
    return compile_cluster(NET, ccfg, part, seeded_params(NET, PREC), TCFG, 1, Mapping(**kw))


def test_a_new_forward_dataflow_is_one_pass_plus_one_option(monkeypatch):
    """A pass registered under a name in ``codegen.FORWARD`` and chosen by the plan's options runs
    for every forward pass of every node, in the schedule's order; here it emits what the
    whole-layer pass does, so the programs are those of the whole-layer dataflow."""
    want = [prog.words() for prog in _compile(schedule="gpipe").nodes]
    ran = []

    class Probe(Forward):
        def run(self, b, seed, received=False):
            ran.append((self.node.j, b))
            super().run(b, seed, received)

    monkeypatch.setitem(codegen.FORWARD, "probe", Probe)
    monkeypatch.setattr(Options, "forward_flow", lambda self, j, b: "probe")
    got = _compile(schedule="gpipe")
    assert [prog.words() for prog in got.nodes] == want
    order = [(j, b) for j in range(3) for kind, b in step_order("gpipe", j, 3, 4) if kind == "fwd"]
    assert ran == order


def test_the_options_choose_bands_for_the_fill_images_only():
    opts = Options(band_rows=2, band_images=[[0, 1], [0]])
    assert opts.forward_flow(0, 1) == "bands" and opts.forward_flow(1, 1) == "layers"
    assert Options(band_rows=0).forward_flow(0, 0) == "layers"
    assert Options(band_rows=2).forward_flow(1, 3) == "bands"  # (every image)
    assert Options(bands_backward=True).backward_flow() == "bands" and Options().backward_flow() == "layers"


def test_a_new_plan_keeps_every_image_and_allocates_o_results_first():
    ccfg = small_cluster(2, NET, PREC)
    part = choose_partition(NET, ccfg, 4)
    fmt, shifts = check_training(NET, TCFG, 1, part.batch)
    for overlap in (False, True):
        plan = make_plan(1, ccfg.engines[1], NET, part, TCFG, shifts, fmt, overlap=overlap)
        keep = plan.keep
        assert (keep.slots, keep.dy_slots, keep.per_image) == (4, 4, frozenset())
        slot_words = 2 * (keep.o_fwd + keep.o_bwd) if overlap else max(keep.o_fwd, keep.o_bwd)
        assert keep.o_fwd > 0 and plan.alloc.regions == {("O", "slots"): (0, slot_words)}
        assert plan.emit.ops is plan.prog.ops and not plan.emit.ops
        assert plan.regions.ob(1) == (keep.o_fwd if overlap else 0)
