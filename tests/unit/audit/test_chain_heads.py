"""`ChainHeads` notices a tenant's chain that lost rows at its end (the metric behind the
`MnemoAuditChainShrank` alert, which names no tenant), and nothing else."""

from __future__ import annotations

import uuid

from mnemo_audit.use_cases import ChainHeads


def test_a_chain_that_only_grows_is_never_reported() -> None:
    heads, acme, globex = ChainHeads(), uuid.uuid4(), uuid.uuid4()
    assert heads.advance(acme, [1, 2, 3]) is None
    assert heads.advance(globex, [1]) is None
    assert heads.advance(acme, [7, 8]) is None  # another replica appended 4..6 meanwhile
    assert heads.advance(acme, []) is None


def test_a_seq_at_or_below_the_head_seen_means_the_end_was_cut() -> None:
    heads, acme, globex = ChainHeads(), uuid.uuid4(), uuid.uuid4()
    heads.advance(acme, [1, 2, 3, 4, 5])
    heads.advance(globex, [1, 2])
    assert heads.advance(acme, [3]) == 5
    assert heads.advance(acme, [4]) is None  # reported once, then the new head counts
    assert heads.advance(globex, [3]) is None
