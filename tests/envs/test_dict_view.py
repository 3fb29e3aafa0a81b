"""The JaxMARL-style dict view equals the stacked (array) view it wraps, inside jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.envs.dict_view import DictView

KEY = jax.random.key(0)


@pytest.mark.parametrize("env_id", ["MPE-SimpleWorldComm-v0", "MPE-SimpleWorldComm-Continuous-v0"])
def test_dict_view__equals_the_array_view_through_an_auto_reset(env_id):
    """Heterogeneous teams (34/28-wide observations, 20 or 5 discrete actions, 9 or 5
    continuous ones): per-agent dicts hold the unpadded rows of the stacked arrays; the
    episode's truncation sets every done and ``__all__``; the auto-reset is the env's."""
    env, params = hordax.make(env_id, max_steps_in_episode=3)
    view = DictView(env)
    assert view.agents == env.agents
    space = env.action_space(params)

    @jax.jit
    def both(key, state, stacked):
        actions = {}
        for i, name in enumerate(view.agents):  # each agent's own action, unpadded
            own = view.action_space(name, params)
            actions[name] = stacked[i] if not own.shape else stacked[i, : own.shape[0]]
        return view.step(key, state, actions, params), env.step(key, state, stacked, params)

    obs_d, state = jax.jit(view.reset)(KEY, params)
    obs_a, state_a = env.reset(KEY, params)
    for i, name in enumerate(view.agents):
        np.testing.assert_array_equal(obs_d[name], obs_a[i, : env.agent_obs_size(i)])
    for t in range(4):
        k_act, k_step = jax.random.split(jax.random.fold_in(KEY, t))
        stacked = space.sample(k_act)
        if env.continuous_actions:  # the stacked array's padding is ignored: zero it
            widths = jnp.asarray(env.layout.continuous_actions())
            stacked = jnp.where(jnp.arange(space.shape[1]) < widths[:, None], stacked, 0.0)
        (obs_d, state, rew_d, done_d, info_d), out = both(k_step, state, stacked)
        obs_a, state_a, rew_a, term, trunc, info_a = out
        jax.tree.map(np.testing.assert_array_equal, state, state_a)
        for i, name in enumerate(view.agents):
            assert obs_d[name].shape == view.observation_space(name, params).shape
            np.testing.assert_array_equal(obs_d[name], obs_a[i, : env.agent_obs_size(i)])
            assert rew_d[name] == rew_a[i] and rew_d[name].shape == ()
            assert bool(done_d[name]) == bool(term | trunc)
        assert bool(done_d["__all__"]) == bool(trunc) == (t == 2)
        assert set(info_d) == set(info_a)


def test_dict_view__bad_actions_and_single_agent_envs_are_refused():
    env, params = hordax.make("MPE-SimpleSpeakerListener-v0")
    view = DictView(env)
    _, state = view.reset(KEY, params)
    with pytest.raises(ValueError, match=r"missing \['listener_0'\]"):
        view.step(KEY, state, {"speaker_0": 1}, params)
    with pytest.raises(ValueError, match=r"unknown \['bob'\]"):
        view.step(KEY, state, {"speaker_0": 1, "listener_0": 2, "bob": 0}, params)
    with pytest.raises(ValueError, match="single-agent"):
        DictView(hordax.make("CartPole-v1")[0])


def test_dict_view__an_inactive_agent_stays_done():
    """JaxMARL's convention (SMAX's dead agents): an agent that does not act is done on every
    step, not only on the step it ended. A GPUDrive scene's padding slot (``agent_mask``
    False from the reset on, ``agent_terminated`` never True) is done on every step; the
    live agents are not until they end."""
    from hordax.envs.driving.env import DriveLog

    env = DriveLog(num_agents=4, max_objects=8, max_partners=4, max_road_points=16)
    params = env.default_params
    view = DictView(env)
    _, state = view.reset(KEY, params)
    assert np.asarray(env.agent_mask(state, params)).tolist() == [True, True, True, False]
    step = jax.jit(view.step)
    actions = {name: jnp.int32(45) for name in view.agents}  # accel 0, straight
    for t in range(3):
        _, state, rewards, dones, info = step(jax.random.key(t), state, actions, params)
        assert not bool(info["agent_terminated"][3]) and not bool(info["agent_mask"][3])
        assert bool(dones["agent_3"]) and float(rewards["agent_3"]) == 0.0
        assert not any(bool(dones[a]) for a in ("agent_0", "agent_1", "agent_2", "__all__"))
