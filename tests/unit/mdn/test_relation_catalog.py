"""The closed relation catalog is written twice and the two copies must agree.

`mnemo_axon` refuses relation types outside its `RELATION_CATALOG`; `mnemo_mdn` codes edge types
by their position in `RELATION_TYPES` and gives each one a polarity. The compiler keeps its own copy
because it stays free of numpy and scipy (it must not import `mnemo_mdn`), so this test is what
keeps the copies from drifting apart.
"""

from __future__ import annotations

from mnemo_axon import RELATION_CATALOG
from mnemo_mdn import POLARITY, RELATION_TYPES
from mnemo_mdn.relations import POLARITY_BY_CODE, TYPE_CODE


def test_the_compiler_and_the_engine_agree_on_the_catalog_order_and_its_polarities() -> None:
    assert RELATION_CATALOG == RELATION_TYPES
    assert len(set(RELATION_TYPES)) == len(RELATION_TYPES)
    assert set(POLARITY) == set(RELATION_CATALOG)
    assert dict(TYPE_CODE) == {etype: code for code, etype in enumerate(RELATION_CATALOG)}
    assert [int(code) for code in POLARITY_BY_CODE] == [POLARITY[t] for t in RELATION_CATALOG]
