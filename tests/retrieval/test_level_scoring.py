"""The level-normalisation helpers of retrieval/scoring.py (issue 24): comparable level scores before the max."""
import doctest

import numpy as np
import pytest

import retrieval.scoring as scoring
from retrieval.scoring import (
    Hit,
    level_top_means,
    normalise_levels,
    rank_parents,
    rank_parents_combined,
    simplex_grid,
)


def _hits(seed=0, n=120):
    rng = np.random.default_rng(seed)
    return [Hit(f"c{i}", f"p{rng.integers(0, 9)}", int(rng.integers(0, 3)), float(rng.normal(0.4, 0.1)))
            for i in range(n)]


def test_doctests():
    assert doctest.testmod(scoring).failed == 0


def test_raw_is_identity_and_max_combine_is_rank_parents():
    hits = _hits()
    assert normalise_levels(hits, "raw") == hits
    assert rank_parents_combined(hits, [1.0, 0.7, 0.9], "max") == rank_parents(hits, [1.0, 0.7, 0.9])


def test_z_scores_have_zero_mean_unit_std_per_level():
    z = normalise_levels(_hits(), "z")
    for lv in range(3):
        s = np.array([h.score for h in z if h.level == lv])
        assert s.mean() == pytest.approx(0, abs=1e-9)
        assert s.std() == pytest.approx(1)


def test_z_of_a_single_hit_or_no_spread_is_zero():
    hits = [Hit("a", "a", 0, 0.7), Hit("b", "b", 1, 0.2), Hit("c", "c", 1, 0.2)]
    assert [h.score for h in normalise_levels(hits, "z")] == [0.0, 0.0, 0.0]


def test_rank_keeps_order_within_a_level_and_ignores_scale():
    hits = _hits()
    r = normalise_levels(hits, "rank")
    for lv in range(3):
        raw = [h for h in hits if h.level == lv]
        new = {h.id: h.score for h in r if h.level == lv}
        by_raw = [h.id for h in sorted(raw, key=lambda h: -h.score)]
        assert [new[i] for i in by_raw] == sorted(new.values(), reverse=True)
        assert max(new.values()) == pytest.approx(1 / 61)
    scaled = [Hit(h.id, h.parent_id, h.level, h.score * (3 if h.level == 2 else 1)) for h in hits]
    assert normalise_levels(scaled, "rank") == r  # a level's scale cannot win it the max


def test_offset_shifts_only_the_named_levels():
    hits = _hits()
    o = normalise_levels(hits, "offset", offsets={2: 0.25})
    for a, b in zip(hits, o):
        assert b.score == pytest.approx(a.score - (0.25 if a.level == 2 else 0.0))


def test_unknown_method_and_combine_raise():
    with pytest.raises(ValueError):
        normalise_levels(_hits(), "minmax")
    with pytest.raises(ValueError):
        rank_parents_combined(_hits(), combine="mean")


def test_sum_combine_is_the_sum_of_each_levels_best():
    hits = _hits(1)
    w = [1.0, 0.5, 2.0]
    ref: dict[str, float] = {}
    for p in {h.parent_id for h in hits}:
        ref[p] = sum(max(w[h.level] * h.score for h in hits if h.parent_id == p and h.level == lv)
                     for lv in range(3) if any(h.parent_id == p and h.level == lv for h in hits))
    ranked = rank_parents_combined(hits, w, "sum")
    assert {p: s for p, s, _ in ranked} == pytest.approx(ref)
    assert [s for _, s, _ in ranked] == pytest.approx(sorted(ref.values(), reverse=True))
    for p, _, h in ranked:  # the reported hit is the parent's best weighted hit
        assert w[h.level] * h.score == pytest.approx(max(w[x.level] * x.score for x in hits if x.parent_id == p))


def test_level_top_means():
    hits = _hits()
    m = level_top_means(hits, top=5)
    for lv in range(3):
        assert m[lv] == pytest.approx(np.mean(sorted([h.score for h in hits if h.level == lv], reverse=True)[:5]))


def test_simplex_grid_sums_to_one_and_includes_uniformish_and_corners():
    g = simplex_grid(3, 0.1)
    assert len(g) == 66 and len(set(g)) == 66
    assert all(abs(sum(w) - 1) < 1e-9 and min(w) >= 0 for w in g)
    assert (1.0, 0.0, 0.0) in g and (0.0, 0.0, 1.0) in g and (0.3, 0.3, 0.4) in g
