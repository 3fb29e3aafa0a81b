"""Asymmetric actor-critic on Manip-Reach-v0 (``agent.critic_obs=true``): a tiny PPO run's
critic reads Reach's privileged critic observation, and only it (the mechanism itself:
``tests/training/test_multi_agent.py``; the observation's content:
``test_manip_reach.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.agents.networks import NetworkConfig
from hordax.agents.ppo import PPOConfig
from hordax.envs.wrappers.normalize import normalize
from hordax.training.config import TrainerConfig
from hordax.training.trainers.ppo import PPOTrainer

ID = "Manip-Reach-v0"


@pytest.mark.slow  # two compiles of the MJX step inside PPO programs: 40-120 s on 2 cores
@pytest.mark.timeout(900)
def test_ppo_critic_reads_the_privileged_critic_observation():
    """2 updates of 4 envs x 8 steps, observations normalized as in the tuned config: the
    run is finite and moves the critic; the critic's input layer takes the 29 critic entries
    (the actor's the 27 observation entries); the observation pair the trainer carries holds
    the env's critic observation of the carried states (normalized with its own statistics);
    the value changes with the critic part and not with the actor part."""
    env, params = hordax.make(ID)
    ac = PPOConfig(
        critic_obs=True,
        normalize_obs=True,
        num_epochs=1,
        num_minibatches=2,
        network=NetworkConfig(hidden_sizes=[16]),
    )
    tc = TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=4 * 8 * 2, num_chunks=1)
    trainer = PPOTrainer(tc, ac, env, params)
    init = jax.jit(trainer.init)(jax.random.key(0))
    state, metrics = jax.jit(trainer.run_chunk)(init)  # the whole run: num_chunks=1
    assert int(state.update_idx) == 2
    assert all(np.all(np.isfinite(np.asarray(v))) for v in metrics.values())

    def fan_ins(net):  # input sizes of the network's dense layers
        return {x.shape[0] for x in jax.tree.leaves(state.agent.params[net]) if x.ndim == 2}

    assert 29 in fan_ins("critic") and 27 not in fan_ins("critic")
    assert 27 in fan_ins("actor") and 29 not in fan_ins("actor")
    moved = jax.tree.map(
        lambda a, b: float(jnp.max(jnp.abs(a - b))),
        init.agent.params["critic"],
        state.agent.params["critic"],
    )
    assert max(jax.tree.leaves(moved)) > 0.0
    # The carried pair: the env's critic observation of the carried states, normalized.
    raw = trainer.env.critic_observation(state.env_state, params)
    stats = state.env_state.obs_stats["critic"]
    expect = normalize(raw, stats.mean, stats.var, trainer.env.clip, trainer.env.eps)
    assert state.obs["critic"].shape == (4, 29) and state.obs["actor"].shape == (4, 27)
    np.testing.assert_allclose(state.obs["critic"], expect, rtol=1e-5, atol=1e-5)
    # The value reads the critic entry only.
    value = np.asarray(trainer.agent.value(state.agent, state.obs))
    other_actor = {**state.obs, "actor": state.obs["actor"] + 1.0}
    other_critic = {**state.obs, "critic": state.obs["critic"] + 1.0}
    np.testing.assert_array_equal(trainer.agent.value(state.agent, other_actor), value)
    assert np.all(np.asarray(trainer.agent.value(state.agent, other_critic)) != value)
    saved = trainer.saved_agent(state)
    assert saved["normalizer"]["obs_stats"]["critic"].mean.shape == (29,)
