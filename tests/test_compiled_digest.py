"""Every program the cluster compiler produces, bit for bit, over a sweep of configurations.

``tests/data/compiled_digests.json`` holds the SHA-256 of each configuration's compiled output
(binary programs, gather tables, host streams, buffer regions, modelled cycles, link elements) or
of its one-line refusal (:mod:`pymtl_fp.tb.compiled_digest`).  A change of the compiler's structure
must leave all of them as they are; a change of its output is deliberate and regenerates the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pymtl_fp.tb import compiled_digest

WANT = json.loads((Path(__file__).parent / "data" / "compiled_digests.json").read_text())


def test_the_sweep_is_the_recorded_one():
    assert sorted(compiled_digest.key(*c) for c in compiled_digest.CONFIGS) == sorted(WANT)


@pytest.mark.parametrize("net", compiled_digest.NETS)
def test_compiled_programs_are_unchanged(net):
    configs = [c for c in compiled_digest.CONFIGS if c[0] == net]
    got = compiled_digest.sweep_digests(configs)
    changed = sorted(k for k, v in got.items() if WANT[k] != v)
    assert not changed, f"{len(changed)} of {len(got)} configurations compile differently: " + "; ".join(changed[:5])


def test_the_digest_sees_a_one_word_change(monkeypatch):
    """The fingerprint is not blind: one instruction field changed in one program changes it."""
    from pymtl_fp.cluster.compiler.program import NodeProgram

    cfg = compiled_digest.CONFIGS[0]
    words = NodeProgram.words
    monkeypatch.setattr(NodeProgram, "words", lambda self: [*words(self)[:-1], words(self)[-1] ^ 1])
    assert compiled_digest.digest(*cfg) != WANT[compiled_digest.key(*cfg)]
