"""The agent seam between math (``agents``) and loops (``training``)."""

from __future__ import annotations

from typing import Any, Protocol

import jax


class Agent(Protocol):
    """An agent as the trainers see it; every method is pure and jittable.

    Shapes: ``obs [B, *obs_shape]``; actions ``[B]`` (discrete) or ``[B, d]``.
    """

    def init(self, key: jax.Array) -> Any:
        """Fresh agent state: parameters, optimizer state, counters."""

    def act(self, state: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict]:
        """Sample actions; ``extras`` holds what the update needs (log_prob, value)."""

    def act_greedy(self, state: Any, obs: jax.Array) -> jax.Array:
        """Deterministic actions (argmax or mean) for evaluation."""

    def value(self, state: Any, obs: jax.Array) -> jax.Array:
        """State values ``[B]`` (on-policy agents)."""

    def update(self, state: Any, batch: Any, key: jax.Array) -> tuple[Any, dict]:
        """One learning step on a batch; returns the new state and scalar metrics."""
