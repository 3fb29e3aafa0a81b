"""What every trainer's update reports besides its losses (inside jit): finished-episode
sums of a rollout and the non-finite flags the host's NaN guard reads."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

#: Prefix of the ``bool[]`` flags read by the NaN guard (:func:`report.check_finite`).
NONFINITE_PREFIX = "nonfinite/"


def episode_metrics(info: dict) -> dict[str, jax.Array]:
    """Sums over a rollout of finished-episode statistics (mean = sum / count on the host).

    ``info["log"]`` is :class:`~hordax.envs.wrappers.LogEpisode`'s (``[T, B]`` leaves);
    ``info["metrics"]`` (optional) are the env's task metrics, summed over finished
    episodes as ``task/<name>_sum``.
    """
    log = info["log"]
    done = log["episode_done"]
    out = {
        "episode_count": jnp.sum(done.astype(jnp.float32)),
        "episode_return_sum": jnp.sum(jnp.where(done, log["episode_return"], 0.0)),
        "episode_length_sum": jnp.sum(jnp.where(done, log["episode_length"], 0)).astype(
            jnp.float32
        ),
    }
    for name, value in info.get("metrics", {}).items():
        out[f"task/{name}_sum"] = jnp.sum(jnp.where(done, value, 0.0)).astype(jnp.float32)
    return out


def finiteness(losses: dict, agent_state: Any) -> dict[str, jax.Array]:
    """``nonfinite/<quantity>`` flags (``bool[]``) read by the host's NaN guard.

    ``losses["loss"]`` and ``losses["grad_norm"]`` are minibatch means (or sums over the
    learners), so one non-finite minibatch shows; ``agent_state.params`` are checked whole.
    """
    params_ok = jnp.all(
        jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(agent_state.params)])
    )
    return {
        f"{NONFINITE_PREFIX}loss": ~jnp.isfinite(losses["loss"]),
        f"{NONFINITE_PREFIX}gradient": ~jnp.isfinite(losses["grad_norm"]),
        f"{NONFINITE_PREFIX}parameters": ~params_ok,
    }
