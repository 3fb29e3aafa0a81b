"""What every trainer's update reports besides its losses (inside jit): finished-episode
sums of a rollout and the non-finite flags the host's NaN guard reads."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

#: Prefix of the ``bool[]`` flags read by the NaN guard (:func:`report.check_finite`).
NONFINITE_PREFIX = "nonfinite/"
#: Metrics that are running totals (their value after each update: PQL's update counts and
#: replay size): a chunk's row reports the last one, the total at the chunk's end
#: (:func:`report.summarize_chunk`), not the mean over its updates.
RUNNING_TOTALS = frozenset({"critic_updates", "actor_updates", "buffer_size"})


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


def team_episode_metrics(info: dict, teams: Any) -> dict[str, jax.Array]:
    """:func:`episode_metrics` of a multi-agent rollout: an episode's return is the mean
    over its present agents (``info["log"]["agent_present"]``, ``[T, B, n]``: padding slots
    are left out) of their own returns (which sum only steps they were active on), in all
    (``episode_return_sum``) and per team (``team/<name>/episode_return_sum``; an episode
    with no present agent of the team adds 0)."""
    log = info["log"]
    out = episode_metrics(
        {**info, "log": {**log, "episode_return": jnp.zeros_like(log["episode_done"], jnp.float32)}}
    )
    done = log["episode_done"]

    def mean_return(slots: Any) -> jax.Array:
        present = log["agent_present"][..., slots]
        total = jnp.sum(jnp.where(present, log["episode_return"][..., slots], 0.0), axis=-1)
        per_episode = total / jnp.maximum(jnp.sum(present, axis=-1), 1)
        return jnp.sum(jnp.where(done, per_episode, 0.0))

    out["episode_return_sum"] = mean_return(slice(None))
    if len(teams) > 1:
        for team in teams:
            out[f"team/{team.name}/episode_return_sum"] = mean_return(team.slots)
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
