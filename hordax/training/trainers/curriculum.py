"""A trainer whose env params field follows a curriculum: the level is in the train state.

``CurriculumTrainer(trainer, field, start)`` wraps a single-run trainer
(:class:`~hordax.training.core.trainer.UpdateLoop`): its state is
``CurriculumState(inner, level)``; every chunk runs the inner trainer with
``env_params.replace(field=level)``, the level a traced ``i32[]``, so the host changing it
between chunks (:mod:`hordax.training.host.curriculum`) recompiles nothing, and checkpoints
and resume carry it with the rest of the state.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class CurriculumState:
    inner: Any  # the wrapped trainer's state
    level: jax.Array  # i32[]: the env params field's current value


class CurriculumTrainer:
    """The Trainer protocol of ``trainer`` with one env params field taken from the state."""

    def __init__(self, trainer: Any, field: str, start: int):
        self.inner, self.field = trainer, field
        self.base_params = trainer.env_params.replace(**{field: start})
        self.inner.env_params = self.base_params  # init resets at the first level
        self.start = start

    def __getattr__(self, name: str) -> Any:  # everything else is the inner trainer's
        return getattr(self.inner, name)

    def init(self, key: Any) -> CurriculumState:
        return CurriculumState(self.inner.init(key), jnp.int32(self.start))

    def run_chunk(self, state: CurriculumState, num_updates: int | None = None):
        params = self.base_params.replace(**{self.field: state.level})
        with self.inner.using_env_params(params):
            inner, metrics = self.inner.run_chunk(state.inner, num_updates)
        return CurriculumState(inner, state.level), metrics

    def train(self, key: Any):
        return self.run_chunk(self.init(key), self.inner.resolved.num_updates)

    def saved_agent(self, state: CurriculumState) -> dict:
        return self.inner.saved_agent(state.inner)
