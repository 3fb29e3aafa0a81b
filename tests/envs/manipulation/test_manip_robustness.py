"""Robustness of the manipulation family (issue #17's must-show): 10^5 env steps of extreme
actions through the trainer's env stack leave nothing non-finite in the batch a trainer
would see, and the episode flags stay on schedule.

The stack is :func:`~hordax.training.core.env_stack.make_env_stack`'s (``VecEnv`` with its
reset pool over ``LogEpisode(ClipAction(env))``), with the critic observation on
(``agent.critic_obs=true``, so the privileged observation is checked too) and observation
normalization off: normalized observations are clipped to +-5, which would hide an infinite
raw value, so the raw observations are the stronger check.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.agents.ppo import PPOConfig
from hordax.training.core.env_stack import make_env_stack

NUM_ENVS, NUM_STEPS = 1024, 100  # 102,400 env steps (>= 10^5)
#: The extreme values an action entry is drawn from (one of them, uniformly), besides
#: U(-10, 10), the sixth choice.
EXTREMES = jnp.array([1e6, -1e6, jnp.inf, -jnp.inf, jnp.nan], jnp.float32)


def extreme_actions(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """``f32[*shape]``: each entry +-1e6, +-inf, NaN or U(-10, 10), each with probability 1/6."""
    k_choice, k_uniform = jax.random.split(key)
    choice = jax.random.randint(k_choice, shape, 0, 6)
    uniform = jax.random.uniform(k_uniform, shape, jnp.float32, -10.0, 10.0)
    return jnp.where(choice < 5, EXTREMES[jnp.minimum(choice, 4)], uniform)


def _finite(tree) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


def _extreme_run(env, params, key):
    """``NUM_STEPS`` steps of ``NUM_ENVS`` envs under :func:`extreme_actions`, reduced per
    step inside jit (dict of ``[NUM_STEPS]`` arrays)."""
    stack = make_env_stack(env, PPOConfig(critic_obs=True), NUM_ENVS)
    obs_space = env.observation_space(params)
    crit_space = env.critic_observation_space(params)
    act_shape = (NUM_ENVS, *env.action_space(params).shape)
    max_steps = int(params.max_steps_in_episode)

    def in_space(space, x):
        return jnp.all(jax.vmap(space.contains)(x))

    def outside(space, x):  # i32[entries]: how many envs have each entry outside its bounds
        return jnp.sum((x < space.low) | (x > space.high), axis=0)

    def body(carry, key):
        state, since_reset = carry
        k_act, k_step = jax.random.split(key)
        action = extreme_actions(k_act, act_shape)
        obs, state, reward, term, trunc, info = stack.step(k_step, state, action, params)
        since_reset = since_reset + 1
        final = info["final_observation"]
        out = {
            "obs_finite": _finite(obs),
            "final_obs_finite": _finite(final),
            "reward_finite": jnp.all(jnp.isfinite(reward)),
            "state_finite": _finite(state),
            "obs_in_space": in_space(obs_space, obs["actor"]) & in_space(obs_space, final["actor"]),
            "critic_in_space": in_space(crit_space, obs["critic"])
            & in_space(crit_space, final["critic"]),
            # The time limit truncates exactly max_steps steps after each reset (counted
            # here, independently of the env's clock), and nothing else does.
            "trunc_on_schedule": jnp.all(trunc == (since_reset == max_steps)),
            # A termination is the documented non-finite-physics guard: reward 0.
            "term_reward_zero": jnp.all(jnp.where(term, reward == 0.0, True)),
            "obs_outside": outside(obs_space, obs["actor"]) + outside(obs_space, final["actor"]),
            "critic_outside": outside(crit_space, obs["critic"])
            + outside(crit_space, final["critic"]),
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
        first = {"obs_finite": _finite(obs), "obs_in_space": in_space(obs_space, obs["actor"])}
        carry = (state, jnp.zeros(NUM_ENVS, jnp.int32))
        _, out = jax.lax.scan(body, carry, jax.random.split(k_steps, NUM_STEPS))
        return first, out

    return run(key)


@pytest.mark.slow  # one compile of the batched MJX step: 30-90 s on 2 shared cores
@pytest.mark.timeout(900)
@pytest.mark.parametrize("env_id", ["Manip-Reach-v0"])
def test_extreme_actions_never_leave_a_nonfinite_value_in_the_batch(env_id):
    env, params = hordax.make(env_id)
    first, out = jax.device_get(_extreme_run(env, params, jax.random.key(0)))
    assert bool(first["obs_finite"]) and bool(first["obs_in_space"])
    assert NUM_ENVS * NUM_STEPS >= 100_000
    assert out["was_nan"].all()  # the actions really were extreme every step
    for name in (
        "obs_finite",
        "final_obs_finite",
        "reward_finite",
        "state_finite",
        "obs_in_space",
        "critic_in_space",
        "trunc_on_schedule",
        "term_reward_zero",
    ):
        bad = np.flatnonzero(~out[name])
        assert bad.size == 0, (
            f"{name} fails at steps {bad[:10].tolist()}; entries outside the observation "
            f"space (env-steps): {out['obs_outside'].sum(0).tolist()}, outside the critic "
            f"observation space: {out['critic_outside'].sum(0).tolist()}"
        )
    # Clipped joint targets never drive the physics non-finite: no guard termination, and
    # every env truncated at steps 50 and 100 (max_steps_in_episode = 50).
    assert int(out["terminated"].sum()) == 0
    assert int(out["truncated"].sum()) == NUM_ENVS * (NUM_STEPS // int(params.max_steps_in_episode))
