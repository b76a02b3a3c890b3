"""tb.scoreboard: each kind of difference is detected and counted separately."""

import random

from hypothesis import given
from hypothesis import strategies as st
from pymtl3 import Bits16, b8, bitstruct

from pymtl_fp.tb.scoreboard import compare


def test_identical_sequences_pass():
    rep = compare([1, 2, 3], [1, 2, 3])
    assert rep.ok and rep.counts() == dict(lost=0, duplicated=0, reordered=0, corrupted=0)
    assert rep.matched_in_order == 3
    rep.assert_ok()


def test_empty():
    assert compare([], []).ok


def test_loss():
    rep = compare([1, 2, 3, 4], [1, 3, 4])
    assert rep.counts() == dict(lost=1, duplicated=0, reordered=0, corrupted=0)
    assert rep.examples["lost"][0].expected_index == 1
    assert not rep.ok


def test_duplication():
    rep = compare([1, 2, 3], [1, 2, 2, 3])
    assert rep.counts() == dict(lost=0, duplicated=1, reordered=0, corrupted=0)
    assert rep.examples["duplicated"][0].received_index == 2


def test_reordering():
    rep = compare([1, 2, 3, 4, 5], [1, 3, 2, 4, 5])
    assert rep.counts() == dict(lost=0, duplicated=0, reordered=1, corrupted=0)
    rep = compare([1, 2, 3, 4, 5], [5, 1, 2, 3, 4])
    assert rep.reordered == 1 and rep.examples["reordered"][0].received == 5


def test_corruption_paired_with_the_missing_message():
    rep = compare([10, 20, 30], [10, 21, 30])
    assert rep.counts() == dict(lost=0, duplicated=0, reordered=0, corrupted=1)
    ex = rep.examples["corrupted"][0]
    assert (ex.expected_index, ex.received_index, ex.expected, ex.received) == (1, 1, 20, 21)
    assert "instead of expected[1]=20" in rep.summary()


def test_extra_unknown_message_is_corruption_without_partner():
    rep = compare([1, 2], [1, 2, 99])
    assert rep.corrupted == 1 and rep.examples["corrupted"][0].expected_index is None
    assert not rep.ok


def test_all_kinds_at_once_and_examples_capped():
    exp = list(range(20))
    rec = [0, 2, 1, 3, 3, 5, 106, 7, 8, 9] + list(range(10, 20))  # swap, dup, loss (4), corrupt (6)
    rep = compare(exp, rec, max_examples=1)
    assert rep.counts() == dict(lost=1, duplicated=1, reordered=1, corrupted=1)
    assert all(len(v) <= 1 for v in rep.examples.values())
    text = rep.summary()
    for kind in ("lost", "duplicated", "reordered", "corrupted"):
        assert f"{kind}:" in text
    try:
        rep.assert_ok("link")
    except AssertionError as exc:
        assert "link: scoreboard" in str(exc)
    else:
        raise AssertionError("assert_ok should raise")


def test_bits_and_bitstructs_compare_by_value():
    @bitstruct
    class Pair:
        a: Bits16
        b: Bits16

    assert compare([Bits16(5), Bits16(6)], [Bits16(5), Bits16(6)]).ok
    assert compare([Pair(1, 2)], [Pair(1, 2)]).ok
    assert compare([Pair(1, 2)], [Pair(1, 3)]).corrupted == 1
    assert compare([b8(1)], [b8(2)]).corrupted == 1


def _lis_len(seq):
    import bisect
    tails = []
    for v in seq:
        i = bisect.bisect_left(tails, v)
        tails[i:i + 1] = [v]
    return len(tails)


@given(st.lists(st.integers(0, 1000), unique=True, max_size=30), st.randoms(use_true_random=False))
def test_permutation_counts_only_reordering(msgs, rnd):
    rec = list(msgs)
    rnd.shuffle(rec)
    rep = compare(msgs, rec)
    pos = {m: i for i, m in enumerate(msgs)}
    assert rep.lost == rep.duplicated == rep.corrupted == 0
    assert rep.reordered == len(msgs) - _lis_len([pos[m] for m in rec])
    assert rep.ok == (rec == msgs)


@given(st.lists(st.integers(0, 50), max_size=30), st.integers(0, 2**32 - 1))
def test_random_damage_is_noticed(msgs, seed):
    rnd = random.Random(seed)
    rec = list(msgs)
    for _ in range(rnd.randint(0, 3)):
        op = rnd.choice(["drop", "dup", "corrupt", "swap"])
        if not rec:
            break
        i = rnd.randrange(len(rec))
        if op == "drop":
            del rec[i]
        elif op == "dup":
            rec.insert(i, rec[i])
        elif op == "corrupt":
            rec[i] = 1000 + rnd.randrange(100)
        elif i + 1 < len(rec):
            rec[i], rec[i + 1] = rec[i + 1], rec[i]
    rep = compare(msgs, rec)
    assert rep.ok == (rec == msgs)
    assert rep.received_count == len(rec) and rep.expected_count == len(msgs)
