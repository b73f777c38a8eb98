"""Engine parameters with the spec's defaults, validated when they are made."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Final

from mnemo_mdn.errors import ParameterError

#: Floor of a reinforced weight: `LEAST(GREATEST(weight + Δ, 0.001), 1.0)` (spec §5).
MEMORY_WEIGHT_FLOOR: Final = 0.001


@dataclass(frozen=True, slots=True)
class MdnParams:
    """Every tunable of EPR, navigation and memory. Greek names of the spec in the comments."""

    damping: float = 0.85  # d
    distrust_penalty: float = 0.5  # λ: EPR = EPR⁺ − λ·EPR⁻
    tol: float = 1e-10  # L1 stop rule of each power iteration
    max_iter: int = 200
    epsilon: float = 1e-6  # ε: a step whose gain is below it is not taken
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    trust_weight: float = 0.5  # κ in φ(d) = 1 + κ·EPR(d)/max|EPR|
    negative_link_factor: float = (
        0.5  # ρ of a negative edge (positive and neutral edges have ρ = 1)
    )
    bias_weight: float = 0.3  # β in π(d) = φ(d)·(1 + β·b(d))
    learning_rate: float = 0.1  # η
    decay: float = 0.95  # γ
    horizon: int = 1000  # H: outcomes kept for the baseline and the bias

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ParameterError(f"{field.name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ParameterError(f"{field.name} must be finite, got {value!r}")
        # `not (low < x < high)` rather than `x <= low or ...` keeps the message next to its rule.
        checks = (
            (0.0 < self.damping < 1.0, "damping must be in (0, 1)"),
            (0.0 <= self.distrust_penalty <= 1.0, "distrust_penalty (λ) must be in [0, 1]"),
            (self.tol > 0.0, "tol must be > 0"),
            (isinstance(self.max_iter, int) and self.max_iter >= 1, "max_iter must be an int >= 1"),
            (self.epsilon > 0.0, "epsilon must be > 0"),
            (self.bm25_k1 >= 0.0, "bm25_k1 must be >= 0"),
            (0.0 <= self.bm25_b <= 1.0, "bm25_b must be in [0, 1]"),
            (0.0 <= self.trust_weight < 1.0, "trust_weight (κ) must be in [0, 1) so φ stays > 0"),
            (0.0 < self.negative_link_factor <= 1.0, "negative_link_factor (ρ) must be in (0, 1]"),
            (self.bias_weight >= 0.0, "bias_weight (β) must be >= 0"),
            (self.learning_rate >= 0.0, "learning_rate (η) must be >= 0"),
            (0.0 < self.decay <= 1.0, "decay (γ) must be in (0, 1]"),
            (
                isinstance(self.horizon, int) and self.horizon >= 1,
                "horizon (H) must be an int >= 1",
            ),
        )
        for holds, rule in checks:
            if not holds:
                raise ParameterError(f"{rule}, got {self._value_named_in(rule)!r}")

    def _value_named_in(self, rule: str) -> float:
        return float(getattr(self, rule.split(" ", 1)[0]))


DEFAULT_PARAMS: Final = MdnParams()
