"""Observation statistics kept in a train state (PQL's replay of raw observations) and the
normalizer statistics a saved agent carries.

The formula is the ``NormalizeObservation`` wrapper's
(:func:`hordax.envs.wrappers.normalize.normalize`); a trainer whose env stack holds the
wrapper gets its statistics saved by :func:`normalizer_stats` without any code here.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hordax.envs.wrappers import RunningStats
from hordax.envs.wrappers.normalize import normalize as normalize_with


def normalize(obs: jax.Array, stats: RunningStats | None) -> jax.Array:
    """``obs`` normalized with ``stats`` as ``f32`` (the wrapper's formula); ``obs`` cast to
    ``f32`` unchanged when ``stats`` is None (normalization off)."""
    if stats is None:
        return obs.astype(jnp.float32)
    return normalize_with(obs, stats.mean, stats.var)


def update_stats(stats: RunningStats | None, tr: Any, obs: jax.Array) -> RunningStats | None:
    """Merge the observations a rollout's steps returned into the running statistics.

    ``tr.obs[1:]`` and ``obs`` (``[B, ...]``, the observation after the rollout's last
    step) are every observation the envs handed back, first observations of new episodes
    (after an auto-reset) included, as the ``NormalizeObservation`` wrapper merges them;
    the reset observations are merged at ``init``. Final observations of ended episodes
    (only in ``tr.next_obs``) are not, as in the wrapper.
    """
    if stats is None:
        return None
    T, B = tr.reward.shape
    seen = jnp.concatenate([tr.obs[1:], obs[None]], axis=0)
    return stats.update(seen.reshape((T * B, *seen.shape[2:])))


class NormalizedPolicy:
    """``agent.act`` on observations normalized with ``stats`` (what ``rollout`` calls)."""

    def __init__(self, agent: Any, stats: RunningStats | None):
        self.agent, self.stats = agent, stats

    def act(self, agent_state: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict]:
        return self.agent.act(agent_state, normalize(obs, self.stats), key)


def normalizer_stats(state: Any) -> dict[str, Any]:
    """Running statistics held by normalization wrappers in a batch env state, or by the
    train state itself (PQL keeps ``obs_stats`` next to ``env_state``): what a saved agent
    needs to see observations as it saw them in training."""
    out: dict[str, Any] = {}
    node = state
    while node is not None:
        for name in ("obs_stats", "return_stats"):
            if getattr(node, name, None) is not None:
                out[name] = getattr(node, name)
        node = getattr(node, "env_state", None)
    return out
