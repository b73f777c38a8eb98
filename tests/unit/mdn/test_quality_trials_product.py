"""The ledger's product configuration (bench/quality_trials.py `PRODUCT`) is the configuration the
product runs, so `--product` judges the rules the product carries, each taken out alone."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from mnemo_mdn import DEFAULT_PARAMS, edge_classification, frontier, mdn_mode

BENCH = Path(__file__).resolve().parents[3] / "bench"


@cache
def trials() -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # quality_trials imports its sibling `quality`
    spec = importlib.util.spec_from_file_location("quality_trials", BENCH / "quality_trials.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["quality_trials"] = module
    spec.loader.exec_module(module)
    return module


def test_the_product_configuration_is_the_navigators_direction_and_the_walks_constants() -> None:
    t = trials()
    product = t.PRODUCT
    assert product.direction == t.quality.DIRECTION
    assert product.backward == frontier.BACKWARD_WEIGHT
    assert product.params == DEFAULT_PARAMS
    assert product.named_boost == mdn_mode.NAMED_BOOST
    assert product.named_first == mdn_mode.NAMED_FIRST
    assert product.held_credit == mdn_mode.HELD_CREDIT
    assert product.max_links == edge_classification.DEFAULT_OPTIONS.max_links
    assert t.QUALIFIERS[product.qualifier] is edge_classification.QUALIFIER


def test_taking_a_rule_out_of_the_product_changes_that_one_choice_only() -> None:
    t = trials()
    for rule, without in t.PRODUCT_RULES.items():
        changed = [
            f.name
            for f in dataclasses.fields(t.Config)
            if getattr(without(t.PRODUCT), f.name) != getattr(t.PRODUCT, f.name)
        ]
        assert len(changed) == 1, (rule, changed)
        assert getattr(without(t.PRODUCT), changed[0]) == getattr(t.Config(), changed[0]), rule
