"""Matching edge endpoints to document keys in a graph load: the bucketed index equals a search."""

from __future__ import annotations

import mnemo_store.loading as loading
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mnemo_store.loading import _ExactIndex

KEYS = st.lists(st.integers(-(2**63), 2**63 - 1), unique=True, min_size=1, max_size=60)


def present_positions(keys: np.ndarray, wanted: np.ndarray) -> list[int | None]:
    index = _ExactIndex(keys)
    position = index.positions(wanted)
    assert ((position >= 0) & (position < len(keys))).all()
    return [int(p) if keys[p] == w else None for p, w in zip(position, wanted, strict=True)]


@settings(max_examples=300, deadline=None)
@given(KEYS, st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40), st.data())
def test_every_present_key_is_found_at_its_position_and_no_absent_one(
    keys: list[int], others: list[int], data: st.DataObject
) -> None:
    ordered = np.array(sorted(keys), dtype=np.int64)
    chosen = data.draw(st.lists(st.sampled_from(sorted(keys)), max_size=40))
    wanted = np.array(chosen + others, dtype=np.int64)
    expected = [sorted(keys).index(w) if w in keys else None for w in wanted.tolist()]
    assert present_positions(ordered, wanted) == expected
    assert present_positions(ordered.astype(">i8"), wanted.astype(">i8")) == expected


def test_random_uuid_halves_and_dense_integer_ids_spread_over_the_buckets() -> None:
    rng = np.random.default_rng(3)
    for keys in (
        np.unique(rng.integers(0, 2**64 - 1, 5_000, dtype=np.uint64)),
        np.arange(1, 5_001, dtype=np.int64) * 3,
    ):
        index = _ExactIndex(keys)
        assert not index._crowded
        wanted = np.concatenate([keys[rng.integers(0, len(keys), 2_000)], keys + 1])
        found = [p for p in present_positions(keys, wanted) if p is not None]
        assert len(found) == 2_000


def test_keys_sharing_a_long_prefix_are_searched_in_sorted_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Time-ordered ids: a few far outliers crowd every other key into one bucket.
    keys = np.concatenate([np.arange(1_000, dtype=np.uint64), np.array([2**63], dtype=np.uint64)])
    searched: list[int] = []
    original = loading._search_sorted

    def spy(sorted_keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        searched.append(len(wanted))
        return original(sorted_keys, wanted)

    monkeypatch.setattr(loading, "_search_sorted", spy)
    index = _ExactIndex(keys)
    assert index._crowded
    wanted = np.array([0, 999, 2**63, 5_000, 2**63 + 1], dtype=np.uint64)
    assert present_positions(keys, wanted) == [0, 999, 1_000, None, None]
    assert searched
