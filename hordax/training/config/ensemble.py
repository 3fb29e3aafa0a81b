"""The ensemble schema (hydra key ``ensemble``, ``agent=ensemble``) and its checks; members
are trained by ``hordax.training.trainers`` and combined by ``hordax.training.ensemble``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

WEIGHTINGS = ("positive", "softmax", "equal")
SCORES = ("auto", "sharpe", "return")


@dataclass
class EnsembleConfig:
    """Ensemble of the population's members (hydra group key ``ensemble``)."""

    enabled: bool = False
    """After training, evaluate members and ensembles on validation (``agent=ensemble``)."""
    members: int = 4
    """K, the population size of an ensemble run when ``population.size`` is left at 1
    (train.yaml's own value, which a group preset cannot override); ``population.size >= 2``
    wins."""
    score: str = "auto"
    """Validation score for weights and the initial rolling choice: sharpe | return | auto
    (Sharpe when the env reports ``info["metrics"]["return"]``, else the episode return)."""
    weighting: str = "positive"
    """positive (clipped-positive normalized) | softmax | equal."""
    temperature: float = 1.0
    """Softmax temperature (weighting=softmax)."""
    window: int = 63
    """Rolling selection window in env steps (63 trading days = FinRL's quarter)."""
    eval_episodes: int = 8
    """Non-trading envs: fresh evaluation episodes per member and ensemble."""
    eval_seed: int = 1_000_003
    """Seed of the evaluation episodes (never a training seed by default)."""
    periods_per_year: float = 0.0
    """Annualization of Sharpe and volatility; 0 = inferred from the env's market data
    (bars per year over its dates: about 252 for daily stock bars, 8,760 for hourly crypto;
    252 for an env without dates). Give a number to override."""
    algorithms: list[str] = field(default_factory=list)
    """Members of different algorithms side by side, e.g. [ppo, pqn] (discrete actions) or
    [ppo, pql] (continuous); [] = one population of ``agent``."""
    sizes: list[int] = field(default_factory=list)
    """Members per algorithm of ``algorithms`` ([] = ``members`` each)."""
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Config overrides of the algorithms other than ``agent``, e.g.
    ``ensemble.agents.pqn.learning_rate=5e-4`` (the ``agent`` algorithm uses ``agent.*``)."""


def apply_members(dict_cfg: Any) -> None:
    """``population.size = ensemble.members`` in a composed config (in place) when the
    ensemble is enabled and the population size is left at 1."""
    ens = dict_cfg.get("ensemble")
    if ens is not None and ens.get("enabled") and int(dict_cfg.population.size) == 1:
        if ens.get("algorithms"):  # mixed: the total over the algorithms' groups
            sizes = list(ens.sizes) or [int(ens.members)] * len(ens.algorithms)
            dict_cfg.population.size = int(sum(int(x) for x in sizes))
        else:
            dict_cfg.population.size = int(ens.members)


def validate_ensemble(cfg: EnsembleConfig) -> None:
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed."""
    if cfg.score not in SCORES:
        raise ValueError(f"ensemble.score={cfg.score!r}: allowed values are {list(SCORES)}")
    if cfg.weighting not in WEIGHTINGS:
        raise ValueError(
            f"ensemble.weighting={cfg.weighting!r}: allowed values are {list(WEIGHTINGS)}"
        )
    if not (cfg.temperature > 0 and math.isfinite(cfg.temperature)):
        raise ValueError(f"ensemble.temperature={cfg.temperature}: must be a finite number > 0")
    if int(cfg.window) < 1:
        raise ValueError(f"ensemble.window={cfg.window}: must be an integer >= 1")
    if int(cfg.eval_episodes) < 1:
        raise ValueError(f"ensemble.eval_episodes={cfg.eval_episodes}: must be an integer >= 1")
    if not (cfg.periods_per_year >= 0 and math.isfinite(cfg.periods_per_year)):
        raise ValueError(
            f"ensemble.periods_per_year={cfg.periods_per_year}: must be > 0, or 0 to infer it"
            " from the env's dates"
        )


def is_mixed(cfg: Any) -> bool:
    """Whether ``cfg`` (a TrainConfig) asks for a mixed-algorithm ensemble."""
    ens = getattr(cfg, "ensemble", None)
    return bool(ens is not None and ens.enabled and list(ens.algorithms))


def group_sizes(ens: EnsembleConfig) -> list[int]:
    """Members per algorithm of a mixed ensemble: ``ensemble.sizes`` or ``ensemble.members``
    each."""
    sizes = list(ens.sizes) if list(ens.sizes) else [int(ens.members)] * len(ens.algorithms)
    return [int(s) for s in sizes]
