"""The PettingZoo adapter passes PettingZoo's own parallel API and seed tests on a hordax
multi-agent env, and its dicts agree with the stacked env."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from hordax.envs.pettingzoo_adapter import PettingZooParallelEnv


def _make():
    return PettingZooParallelEnv("Debug-MultiPointMass-v0", max_steps_in_episode=25)


def test_pettingzoo__parallel_api_test_passes():
    """pettingzoo.test.parallel_api_test over 60 cycles (through episode ends)."""
    parallel_api_test(_make(), num_cycles=60)


def test_pettingzoo__parallel_seed_test_passes():
    """Same seed, same trajectories (pettingzoo.test.parallel_seed_test)."""
    parallel_seed_test(_make)


def test_pettingzoo__agent_dicts_and_the_time_limit_truncates_all():
    env = _make()
    obs, infos = env.reset(seed=3)
    assert env.agents == ["agent_0", "agent_1", "agent_2"] and set(obs) == set(env.agents)
    assert obs["agent_1"].shape == (10,) and env.observation_space("agent_1").contains(
        obs["agent_1"]
    )
    for _ in range(25):
        live = list(env.agents)
        acts = {a: np.full(2, 0.3, np.float32) for a in live}
        obs, rew, term, trunc, info = env.step(acts)
        assert set(rew) == set(live) and all(isinstance(r, float) for r in rew.values())
    assert all(trunc.values()) and env.agents == []
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({})


def test_pettingzoo__bad_actions_and_single_agent_env_are_refused():
    env = _make()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action has shape \(3,\), expected \(2,\)"):
        env.step({"agent_0": np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match="not live"):
        env.step({"agent_9": np.zeros(2, np.float32)})
    # a live agent without an action: refused (it silently acted with zeros)
    with pytest.raises(ValueError, match=r"no action for live agents \['agent_1', 'agent_2'\]"):
        env.step({"agent_0": np.zeros(2, np.float32)})
    with pytest.raises(ValueError, match="single-agent"):
        PettingZooParallelEnv("CartPole-v1")
