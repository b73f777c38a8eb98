"""Parameters: the spec's defaults, validated with messages that say what would be right."""

from __future__ import annotations

import math

import pytest
from mnemo_mdn import MdnParams, ParameterError


def test_defaults_are_the_spec_values() -> None:
    params = MdnParams()
    assert (params.damping, params.distrust_penalty, params.tol, params.max_iter) == (
        0.85,
        0.5,
        1e-10,
        200,
    )
    assert (params.epsilon, params.bm25_k1, params.bm25_b) == (1e-6, 1.2, 0.75)
    assert (params.trust_weight, params.negative_link_factor, params.bias_weight) == (0.5, 0.5, 0.3)
    assert (params.learning_rate, params.decay, params.horizon) == (0.1, 0.95, 1000)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"damping": 0.0}, "damping must be in \\(0, 1\\), got 0.0"),
        ({"damping": 1.0}, "damping must be in \\(0, 1\\)"),
        ({"damping": math.nan}, "damping must be finite"),
        ({"distrust_penalty": -0.1}, "distrust_penalty \\(λ\\) must be in \\[0, 1\\]"),
        ({"distrust_penalty": 1.5}, "distrust_penalty"),
        ({"tol": 0.0}, "tol must be > 0"),
        ({"max_iter": 0}, "max_iter must be an int >= 1"),
        ({"max_iter": 2.5}, "max_iter must be an int >= 1"),
        ({"epsilon": 0.0}, "epsilon must be > 0"),
        ({"trust_weight": 1.0}, "trust_weight"),
        ({"negative_link_factor": 0.0}, "negative_link_factor"),
        ({"decay": 0.0}, "decay"),
        ({"horizon": 0}, "horizon"),
        ({"damping": "0.8"}, "damping must be a number"),
        ({"max_iter": True}, "max_iter must be a number"),
    ],
)
def test_parameters_outside_their_domain_are_rejected_with_a_clear_message(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        MdnParams(**overrides)  # type: ignore[arg-type]  # deliberately wrong values
