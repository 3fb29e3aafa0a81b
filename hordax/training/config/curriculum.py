"""Curricula: the config group ``curriculum=<name>`` and the registry of rules by name.

A curriculum moves one integer field of the env params (its *level*, e.g. Navigate's
``num_obstacles``) between chunks, from the chunk row's task metric
(``task/<metric>``, the mean over the chunk's finished episodes). The rule is host code
(``rule(level, value, cfg) -> new level``); the level lives in the train state
(:class:`hordax.training.trainers.curriculum.CurriculumTrainer`), so it is checkpointed and
resumed with it, and the env params are traced, so a new level recompiles nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hordax.envs.aerial.navigate import curriculum_level


@dataclass
class CurriculumConfig:
    """Hydra group ``curriculum`` (hordax/configs/curriculum/)."""

    name: str = "none"
    """A rule of :data:`CURRICULA`, or ``none``."""
    field: str = ""
    """The env params field it sets (an integer field, e.g. ``num_obstacles``)."""
    metric: str = "success"
    """The task metric the rule reads (``info["metrics"][metric]``, chunk mean)."""
    start: int = -1
    """First level (-1: the run's ``env.params`` value of ``field``)."""
    min_level: int = 0
    """Lowest level."""
    max_level: int = 16
    """Highest level."""


def navigate_rule(level: int, value: float, cfg: CurriculumConfig) -> int:
    """Aerial Gym's obstacle-density rule, :func:`hordax.envs.aerial.navigate.curriculum_level`:
    +2 above 70 % success, -1 below 60 %."""
    return curriculum_level(level, value, cfg.min_level, cfg.max_level)


#: Curriculum rules by name: ``rule(level, metric value, cfg) -> next level``.
CURRICULA: dict[str, Callable[[int, float, CurriculumConfig], int]] = {
    "navigate": navigate_rule,
}


def next_level(cfg: CurriculumConfig, level: int, value: float) -> int:
    """The rule's next level; the level stays where the chunk finished no episode (NaN)."""
    if value is None or not math.isfinite(value):
        return level
    return int(CURRICULA[cfg.name](level, float(value), cfg))


def validate_curriculum(cfg: CurriculumConfig, run: Any) -> None:
    """Name, field and levels (``ValueError`` naming ``curriculum.<key>``); ``run``: the
    ``TrainConfig`` (a curriculum drives one run: no population, no mixed ensemble)."""
    names = ["none", *CURRICULA]
    if cfg.name not in names:
        raise ValueError(f"curriculum.name={cfg.name!r}: allowed values are {names}")
    if cfg.max_level < 0:
        raise ValueError(f"curriculum.max_level={cfg.max_level}: must be an integer >= 0")
    if not 0 <= cfg.min_level <= cfg.max_level:
        raise ValueError(
            f"curriculum.min_level={cfg.min_level}: must be in [0, curriculum.max_level ="
            f" {cfg.max_level}]"
        )
    if cfg.start != -1 and not cfg.min_level <= cfg.start <= cfg.max_level:
        raise ValueError(
            f"curriculum.start={cfg.start}: must be -1 (the env's value) or in"
            f" [{cfg.min_level}, {cfg.max_level}]"
        )
    if cfg.name == "none":
        return
    if not cfg.field:
        raise ValueError("curriculum.field='': name the env params field the curriculum sets")
    if run.population.size > 1 or run.ensemble.algorithms:
        raise ValueError(
            f"curriculum.name={cfg.name}: a curriculum drives one run (population.size=1,"
            " no ensemble.algorithms)"
        )
    if getattr(run.agent, "mode", "sync") == "parallel":
        raise ValueError(
            f"curriculum.name={cfg.name}: agent.mode=parallel is not one jitted program;"
            " use agent.mode=sync"
        )


def start_level(cfg: CurriculumConfig, env_params: Any, env_id: str) -> int:
    """The first level: ``cfg.start``, or the env params' value of ``cfg.field``
    (``ValueError`` naming ``curriculum.field`` if the env has no such integer field)."""
    value = getattr(env_params, cfg.field, None)
    if value is None or isinstance(value, float) or getattr(value, "ndim", 0) != 0:
        raise ValueError(
            f"curriculum.field={cfg.field!r}: env {env_id} has no integer params field of that name"
        )
    level = int(value) if cfg.start < 0 else int(cfg.start)
    return min(max(level, cfg.min_level), cfg.max_level)
