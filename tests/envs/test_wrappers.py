"""Wrappers against hand-computed references: logging under auto-reset, clipping, normalization."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.envs.wrappers import (
    ClipAction,
    LogEpisode,
    NormalizeObservation,
    NormalizeReward,
    RunningStats,
    VecEnv,
)
from hordax.envs.wrappers.clip import clip_action


def _random_rollout(env, params, num_envs, steps, seed=0):
    """Random actions through a batch env; returns per-step outputs stacked on the host."""
    space = env.action_space(params)
    key = jax.random.key(seed)
    obs, state = env.reset(key, params)

    def body(carry, key_t):
        state, obs = carry
        key_a, key_s = jax.random.split(key_t)
        action = jax.vmap(space.sample)(jax.random.split(key_a, num_envs))
        out = env.step(key_s, state, action, params)
        return (out[1], out[0]), (obs, *out)

    _, outs = jax.jit(lambda s, o: jax.lax.scan(body, (s, o), jax.random.split(key, steps)))(
        state, obs
    )
    return jax.device_get(outs)


def test_log_episode__returns_and_lengths_under_auto_reset():
    """episode_return/length on done steps equal sums of raw rewards since the last reset."""
    env, params = hordax.make("CartPole-v1")
    batch = VecEnv(LogEpisode(env), 4)
    _, _, _, reward, terminated, truncated, info = _random_rollout(batch, params, 4, 300)
    done = terminated | truncated
    log = info["log"]
    assert done.sum() > 10, "random CartPole must end many episodes in 300 steps"
    np.testing.assert_array_equal(log["episode_done"], done)
    for b in range(4):
        running, length = 0.0, 0
        for t in range(300):
            running += float(reward[t, b])
            length += 1
            assert log["episode_return"][t, b] == pytest.approx(running)
            assert log["episode_length"][t, b] == length
            if done[t, b]:
                running, length = 0.0, 0


def test_clip_action__box_nan_inf_and_discrete():
    """NaN -> midpoint, +-inf -> bounds, out-of-range -> clipped; discrete clipped to [0, n)."""
    from gymnax.environments import spaces

    box = spaces.Box(jnp.array([-2.0, 0.0]), jnp.array([2.0, 1.0]), (2,))
    out = clip_action(jnp.array([jnp.nan, jnp.nan]), box)
    np.testing.assert_allclose(out, [0.0, 0.5])
    np.testing.assert_allclose(clip_action(jnp.array([jnp.inf, -jnp.inf]), box), [2.0, 0.0])
    np.testing.assert_allclose(clip_action(jnp.array([-5.0, 0.25]), box), [-2.0, 0.25])
    np.testing.assert_array_equal(
        clip_action(jnp.array([-3, 0, 1, 9]), spaces.Discrete(2)), [0, 0, 1, 1]
    )
    # float discrete actions, as docs/env_protocol.md states: NaN -> 0, +inf -> n - 1, under jit
    floats = jnp.array([jnp.nan, jnp.inf, -jnp.inf, 2.7])
    out = jax.jit(lambda a: clip_action(a, spaces.Discrete(5)))(floats)
    np.testing.assert_array_equal(out, [0, 4, 0, 2])


def test_clip_action__wrapper_keeps_pendulum_finite_under_nan():
    """Pendulum stepped through ClipAction with NaN/inf actions stays finite."""
    env, params = hordax.make("Pendulum-v1")
    wrapped = ClipAction(env)
    obs, state = wrapped.reset(jax.random.key(0), params)
    for i, a in enumerate([jnp.nan, jnp.inf, -jnp.inf, 1e9]):
        obs, state, reward, *_ = wrapped.step(jax.random.key(i), state, jnp.array([a]), params)
        assert np.all(np.isfinite(obs)) and np.isfinite(float(reward))


def test_running_stats__equal_numpy_moments_of_all_batches():
    """Merging batches one at a time gives the mean/var of their concatenation."""
    rng = np.random.default_rng(1)
    batches = [rng.normal(3.0, 2.0, size=(n, 3)).astype(np.float32) for n in (5, 17, 1, 40)]
    stats = RunningStats.create((3,))
    for b in batches:
        stats = stats.update(jnp.asarray(b))
    allx = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean, allx.mean(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(stats.var, allx.var(0), rtol=1e-3, atol=1e-3)


def test_normalize_observation__uses_running_stats_for_obs_and_final_obs():
    """Returned obs and final_observation equal (x - mean) / std with the post-update stats."""
    env, params = hordax.make("CartPole-v1")
    raw = VecEnv(env, 8)
    norm = NormalizeObservation(VecEnv(env, 8))
    key = jax.random.key(3)
    obs_raw, s_raw = raw.reset(key, params)
    obs_n, s_n = norm.reset(key, params)
    # One compiled step each: an eager VecEnv step compiles part of itself again on every call.
    raw_step, norm_step = jax.jit(raw.step), jax.jit(norm.step)
    action = jnp.ones(8, jnp.int32)
    seen = [np.asarray(obs_raw)]
    for t in range(30):
        k = jax.random.key(100 + t)
        obs_raw, s_raw, _, _, _, info_raw = raw_step(k, s_raw, action, params)
        obs_n, s_n, _, _, _, info_n = norm_step(k, s_n, action, params)
        seen.append(np.asarray(obs_raw))
    allx = np.concatenate(seen)
    mean, std = allx.mean(0), np.sqrt(allx.var(0) + 1e-8)
    np.testing.assert_allclose(obs_n, np.clip((obs_raw - mean) / std, -10, 10), atol=2e-3)
    np.testing.assert_allclose(
        info_n["final_observation"],
        np.clip((info_raw["final_observation"] - mean) / std, -10, 10),
        atol=2e-3,
    )


def test_normalize_reward__matches_numpy_discounted_return_scaling():
    """Scaled reward = r / std(discounted returns seen so far), returns reset at episode ends."""
    env, params = hordax.make("CartPole-v1", max_steps_in_episode=7)
    gamma = 0.9
    raw = VecEnv(env, 4)
    norm = NormalizeReward(VecEnv(env, 4), gamma=gamma)
    key = jax.random.key(0)
    _, s_raw = raw.reset(key, params)
    _, s_n = norm.reset(key, params)
    raw_step, norm_step = jax.jit(raw.step), jax.jit(norm.step)  # compiled once each
    g = np.zeros(4)
    returns = []
    for t in range(20):
        k = jax.random.key(t)
        a = jnp.full(4, t % 2, jnp.int32)
        _, s_raw, r, te, tr, _ = raw_step(k, s_raw, a, params)
        _, s_n, r_n, *_ = norm_step(k, s_n, a, params)
        g = gamma * g + np.asarray(r)
        returns.append(g.copy())
        allg = np.concatenate(returns)
        # RunningStats starts from a prior (mean 0, var 1, count 1e-4); merge it exactly.
        c0, n, m = 1e-4, allg.size, allg.mean()
        var = (c0 * 1.0 + ((allg - m) ** 2).sum() + m**2 * c0 * n / (c0 + n)) / (c0 + n)
        np.testing.assert_allclose(
            r_n, np.clip(np.asarray(r) / np.sqrt(var + 1e-8), -10, 10), rtol=2e-3
        )
        g = np.where(np.asarray(te | tr), 0.0, g)


def test_vec_env__equals_separate_calls_and_supports_batched_params():
    """VecEnv(step) equals per-env calls; params_batched=True vmaps over params (DR)."""
    env, params = hordax.make("Pendulum-v1")
    key = jax.random.key(7)
    batch = VecEnv(env, 3)
    obs, state = batch.reset(key, params)
    keys = jax.random.split(key, 3)
    for i in range(3):
        o_i, _ = env.reset(keys[i], params)
        np.testing.assert_allclose(obs[i], o_i)
    many = jax.tree.map(lambda x: jnp.stack([jnp.asarray(x)] * 3), params)
    many = many.replace(g=jnp.array([5.0, 10.0, 20.0]))
    dr = VecEnv(env, 3, params_batched=True)
    obs, state = dr.reset(key, many)
    action = jnp.zeros((3, 1))
    obs2, _, *_ = dr.step(key, state, action, many)
    step_keys = jax.random.split(key, 3)
    for i, g in enumerate([5.0, 10.0, 20.0]):
        s_i = jax.tree.map(lambda x, i=i: x[i], state)
        o_i, *_ = env.step(step_keys[i], s_i, action[i], params.replace(g=g))
        np.testing.assert_allclose(obs2[i], o_i, rtol=1e-6)
    with pytest.raises(ValueError, match="num_envs=0"):
        VecEnv(env, 0)


def test_vec_env__batched_params_without_the_env_axis_name_the_field():
    """``params_batched=True`` with one params instance, or a field left unbatched: a
    ``ValueError`` naming the field and num_envs (was jax.vmap's "rank should be at least
    1, but is only 0"), from reset and from step."""
    env, params = hordax.make("Pendulum-v1")
    dr = VecEnv(env, 3, params_batched=True)
    with pytest.raises(
        ValueError, match=r"params\.max_steps_in_episode has shape \(\): params_batched"
    ):
        dr.reset(jax.random.key(0), params)
    half = params.replace(g=jnp.array([5.0, 10.0, 20.0]))  # only g batched
    with pytest.raises(
        ValueError, match=r"params\.max_steps_in_episode has shape \(\).*num_envs=3"
    ):
        dr.reset(jax.random.key(0), half)
    many = jax.tree.map(lambda x: jnp.stack([jnp.asarray(x)] * 3), params)
    obs, state = dr.reset(jax.random.key(0), many)
    wrong = jax.tree.map(lambda x: x[:2], many)
    with pytest.raises(ValueError, match=r"has shape \(2,\).*num_envs=3"):
        dr.step(jax.random.key(1), state, jnp.zeros((3, 1)), wrong)
