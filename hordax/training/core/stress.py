"""Extreme-action stress runs through the trainer's env stack.

:func:`extreme_action_run` steps ``num_envs`` copies of an env through
:func:`~hordax.training.core.env_stack.make_env_stack`'s stack (``VecEnv`` with its reset
pool over ``LogEpisode(ClipAction(env))``, the critic observation on when the env has one,
observation normalization off: normalized observations are clipped to +-10, which would hide
an infinite raw value) under actions whose entries are +-1e6, +-inf, NaN or U(-10, 10), and
reduces what a trainer's batch would hold to per-step flags inside jit. Issue #17's
robustness must-show (10^5 steps, every manipulation task) runs it
(``tests/envs/manipulation/test_manip_robustness.py``, ``benchmarks/extreme_actions.py``).
"""

from __future__ import annotations

import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hordax.training.core.env_stack import make_env_stack

#: The extreme values an action entry is drawn from (one of them, uniformly), besides
#: U(-10, 10), the sixth choice.
EXTREMES = (1e6, -1e6, float("inf"), float("-inf"), float("nan"))
#: Per-step flags of :func:`extreme_action_run` that must hold at every step.
MUST_HOLD = (
    "obs_finite",
    "final_obs_finite",
    "reward_finite",
    "state_finite",
    "obs_in_space",
    "critic_in_space",
    "trunc_on_schedule",
)


def extreme_actions(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """``f32[*shape]``: each entry +-1e6, +-inf, NaN or U(-10, 10), each with probability 1/6."""
    k_choice, k_uniform = jax.random.split(key)
    choice = jax.random.randint(k_choice, shape, 0, 6)
    uniform = jax.random.uniform(k_uniform, shape, jnp.float32, -10.0, 10.0)
    extremes = jnp.array(EXTREMES, jnp.float32)
    return jnp.where(choice < 5, extremes[jnp.minimum(choice, 4)], uniform)


def _finite(tree: Any) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


def extreme_action_run(
    env: Any, params: Any, key: jax.Array, num_envs: int, num_steps: int
) -> tuple[dict, dict]:
    """``(first, per_step)``: ``num_steps`` steps of ``num_envs`` envs (one jitted scan).

    ``first``: ``obs_finite``, ``obs_in_space`` of the reset batch (``bool[]``).
    ``per_step`` (arrays ``[num_steps]``): the flags of :data:`MUST_HOLD` (``bool``; the
    time limit truncates exactly ``max_steps_in_episode`` steps after each reset, counted
    here independently of the env's clock, and nothing else truncates), ``nonfinite`` (the
    envs whose physics went non-finite, from ``info["reward_terms"]["nonfinite"]`` when the
    env reports it, else 0), ``terminated``, ``truncated`` (counts), ``was_nan`` (a NaN
    action entry was drawn), ``obs_outside`` / ``critic_outside`` (``i32[num_steps,
    obs_dim]``: envs with each entry outside its bounds).
    """
    critic_obs = hasattr(env, "critic_observation")
    stack = make_env_stack(env, types.SimpleNamespace(critic_obs=critic_obs), num_envs)
    obs_space = env.observation_space(params)
    crit_space = env.critic_observation_space(params) if critic_obs else None
    act_shape = (num_envs, *env.action_space(params).shape)
    max_steps = int(params.max_steps_in_episode)

    def parts(obs):
        return (obs["actor"], obs["critic"]) if critic_obs else (obs, None)

    def in_space(space, x):
        return jnp.all(jax.vmap(space.contains)(x)) if space is not None else jnp.bool_(True)

    def outside(space, x):  # i32[entries]: how many envs have each entry outside its bounds
        if space is None:
            return jnp.zeros((1,), jnp.int32)
        return jnp.sum((x < space.low) | (x > space.high), axis=0)

    def body(carry, key):
        state, since_reset = carry
        k_act, k_step = jax.random.split(key)
        action = extreme_actions(k_act, act_shape)
        obs, state, reward, term, trunc, info = stack.step(k_step, state, action, params)
        since_reset = since_reset + 1
        final = info["final_observation"]
        (actor, critic), (f_actor, f_critic) = parts(obs), parts(final)
        nonfinite = info.get("reward_terms", {}).get("nonfinite", jnp.zeros(num_envs))
        out = {
            "obs_finite": _finite(obs),
            "final_obs_finite": _finite(final),
            "reward_finite": jnp.all(jnp.isfinite(reward)),
            "state_finite": _finite(state),
            "obs_in_space": in_space(obs_space, actor) & in_space(obs_space, f_actor),
            "critic_in_space": in_space(crit_space, critic) & in_space(crit_space, f_critic),
            "trunc_on_schedule": jnp.all(trunc == (since_reset == max_steps)),
            "nonfinite": jnp.sum(nonfinite > 0),
            "obs_outside": outside(obs_space, actor) + outside(obs_space, f_actor),
            "critic_outside": outside(crit_space, critic) + outside(crit_space, f_critic),
            "terminated": jnp.sum(term),
            "truncated": jnp.sum(trunc),
            "was_nan": jnp.any(jnp.isnan(action)),
        }
        since_reset = jnp.where(term | trunc, 0, since_reset)
        return (state, since_reset), out

    @jax.jit
    def run(key):
        k_reset, k_steps = jax.random.split(key)
        obs, state = stack.reset(k_reset, params)
        actor, _ = parts(obs)
        first = {"obs_finite": _finite(obs), "obs_in_space": in_space(obs_space, actor)}
        carry = (state, jnp.zeros(num_envs, jnp.int32))
        _, out = jax.lax.scan(body, carry, jax.random.split(k_steps, num_steps))
        return first, out

    return jax.device_get(run(key))


def failures(first: dict, per_step: dict) -> list[str]:
    """Readable failures of a run (empty when every :data:`MUST_HOLD` flag held, the reset
    batch was finite and in its space, and every step drew a NaN action entry)."""
    errors = [f"reset batch: {k} is False" for k, v in first.items() if not bool(v)]
    if not np.all(per_step["was_nan"]):
        errors.append("some steps drew no NaN action entry")
    for name in MUST_HOLD:
        bad = np.flatnonzero(~np.asarray(per_step[name]))
        if bad.size:
            errors.append(
                f"{name} fails at steps {bad[:10].tolist()}; entries outside the observation "
                f"space (env-steps): {per_step['obs_outside'].sum(0).tolist()}, outside the "
                f"critic observation space: {per_step['critic_outside'].sum(0).tolist()}"
            )
    return errors
