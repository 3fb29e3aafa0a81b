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
    # a live agent's missing action is refused, not sent as zeros
    with pytest.raises(ValueError, match=r"no action for live agents \['agent_1'\]"):
        env.step({a: np.zeros(2, np.float32) for a in ("agent_0", "agent_2")})
    # a live agent without an action: refused (it silently acted with zeros)
    with pytest.raises(ValueError, match=r"no action for live agents \['agent_1', 'agent_2'\]"):
        env.step({"agent_0": np.zeros(2, np.float32)})
    with pytest.raises(ValueError, match="single-agent"):
        PettingZooParallelEnv("CartPole-v1")


# parallel_api_test warns when an episode ends before every possible agent ended: the padding
# slot is a possible agent (another scene may fill it) that never acts in this scene.
@pytest.mark.filterwarnings("ignore:No agents present but not all possible_agents")
def test_pettingzoo__inactive_slots_are_never_live_agents():
    """A slot inactive from the start (``agent_mask`` False: padding, e.g. a GPUDrive scene
    with fewer controllable vehicles than ``num_agents``) is not a live agent: PettingZoo's
    ``agents`` lists the agents that act, so it is not in ``agents``, the observations,
    rewards or done dicts, and an action for it is refused. Live agents end as before."""
    from hordax.envs.driving.env import DriveLog

    raw = DriveLog(num_agents=4, max_objects=8, max_partners=4, max_road_points=16)
    env = PettingZooParallelEnv(raw)
    obs, infos = env.reset(seed=0)
    mask = np.asarray(raw.agent_mask(env._state, env.params))
    assert mask.tolist() == [True, True, True, False]  # slot 3: padding
    assert env.agents == ["agent_0", "agent_1", "agent_2"]
    assert set(obs) == set(infos) == set(env.agents)
    with pytest.raises(ValueError, match="not live"):
        env.step({"agent_3": 45})
    for _ in range(3):
        live = list(env.agents)
        obs, rew, term, trunc, info = env.step({a: 45 for a in live})
        assert set(obs) == set(rew) == set(term) == set(trunc) == set(info) == set(live)
        assert "agent_3" not in env.agents
    short = raw.default_params.replace(max_steps_in_episode=10)
    parallel_api_test(PettingZooParallelEnv(raw, short), num_cycles=25)


def test_pettingzoo__observations_and_metrics_are_each_agents_own_writable_copies():
    """A caller may edit what it is handed (gymnasium and PettingZoo's envs return arrays the
    caller owns): ``np.asarray`` of a jax array is a read-only view, so ``obs[a][0] = x`` once
    raised 'assignment destination is read-only'. An edit to one agent's observation leaves
    the other agents' untouched."""
    env = _make()
    obs, _ = env.reset(seed=1)
    before = {a: o.copy() for a, o in obs.items()}
    obs["agent_0"][:] = 99.0
    assert np.array_equal(obs["agent_1"], before["agent_1"])
    obs, _, _, _, info = env.step({a: np.zeros(2, np.float32) for a in env.agents})
    for a in env.agents:
        obs[a][0] = -1.0
        assert obs[a].flags.writeable
        for leaf in info[a]["metrics"].values():
            assert np.asarray(leaf).flags.writeable or np.ndim(leaf) == 0
