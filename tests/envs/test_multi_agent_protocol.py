"""The multi-agent protocol's heterogeneous pieces: ``MultiDiscrete``, teams, per-agent
(unpadded) spaces, the critic observation, and the adapters' per-agent view of them.

``TwoTeams`` is a tiny env with two agent types of different observation sizes and action
counts (a "speaker" that sees 2 values and picks 1 of 3, two "movers" that see 4 and pick 1
of 5), the shape of MPE's speaker/listener scenarios.
"""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnax.environments import spaces
from pettingzoo.test import parallel_api_test, parallel_seed_test

from hordax import testing
from hordax.envs.core import EnvParams, MultiAgentEnvironment, empty_info, row_space
from hordax.envs.gymnasium_adapter import check_action, to_gym_space
from hordax.envs.pettingzoo_adapter import PettingZooParallelEnv
from hordax.envs.spaces import MultiDiscrete
from hordax.envs.wrappers.clip import clip_action

KEY = jax.random.key(0)


@struct.dataclass
class TwoTeamsState:
    value: jax.Array  # f32 [3, 4]
    time: jax.Array  # i32 []


class TwoTeams(MultiAgentEnvironment[TwoTeamsState, EnvParams]):
    """Agent 0 (speaker): obs 2, Discrete(3); agents 1-2 (movers): obs 4, Discrete(5).

    Each agent's action adds ``action / 10`` to its values; reward is the sum of its values.
    """

    num_agents = 3
    team_names = ("speaker", "mover")
    team_index = (0, 1, 1)
    SIZES = (2, 4, 4)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams(max_steps_in_episode=5)

    def _obs(self, state: TwoTeamsState) -> jax.Array:
        mask = jnp.arange(4)[None, :] < jnp.asarray(self.SIZES)[:, None]
        return jnp.where(mask, state.value, 0.0)

    def reset_env(self, key, params):
        state = TwoTeamsState(jax.random.uniform(key, (3, 4), minval=-1, maxval=1), jnp.int32(0))
        return self._obs(state), state

    def step_env(self, key, state, action, params):
        action = clip_action(action, self.action_space(params))
        value = jnp.clip(state.value + action[:, None] / 10.0, -5.0, 5.0)
        state = TwoTeamsState(value, state.time + 1)
        obs = self._obs(state)
        info = {
            **empty_info(),
            "agent_terminated": jnp.zeros(3, bool),
            "agent_mask": jnp.ones(3, bool),
        }
        return obs, state, obs.sum(-1), jnp.array(False), info

    def observation_space(self, params):
        return spaces.Box(-5.0, 5.0, (3, 4), jnp.float32)

    def action_space(self, params):
        return MultiDiscrete([3, 5, 5])

    def agent_observation_space(self, i, params):
        return spaces.Box(-5.0, 5.0, (self.SIZES[i],), jnp.float32)

    def critic_observation(self, state, params):
        return jnp.broadcast_to(state.value.reshape(-1), (3, 12))

    def critic_observation_space(self, params):
        return spaces.Box(-5.0, 5.0, (3, 12), jnp.float32)


def test_multi_discrete__samples_contains_and_clips_per_entry():
    space = MultiDiscrete([2, 5, 1])
    draws = jax.vmap(space.sample)(jax.random.split(KEY, 2000))
    assert draws.dtype == jnp.int32 and draws.shape == (2000, 3)
    for i, k in enumerate((2, 5, 1)):
        assert set(np.unique(np.asarray(draws[:, i]))) == set(range(k))
    assert bool(space.contains(jnp.array([1, 4, 0])))
    assert not bool(space.contains(jnp.array([2, 0, 0])))
    assert not bool(space.contains(jnp.array([0, 0, -1])))
    clipped = clip_action(jnp.array([7, -3, 9]), space)
    np.testing.assert_array_equal(clipped, [1, 0, 0])
    assert clipped.dtype == jnp.int32
    with pytest.raises(ValueError, match=r"nvec=\[3, 0\]: every entry must be >= 1"):
        MultiDiscrete([3, 0])


def test_row_space__rows_of_stacked_spaces():
    assert row_space(MultiDiscrete([3, 5]), 1).n == 5
    box = spaces.Box(jnp.array([[-1.0, -2.0], [-3.0, -4.0]]), 1.0, (2, 2), jnp.float32)
    row = row_space(box, 1)
    assert row.shape == (2,)
    np.testing.assert_array_equal(row.low, [-3.0, -4.0])
    np.testing.assert_array_equal(row.high, [1.0, 1.0])


def test_contract__two_teams_pass_the_multi_agent_checks():
    """The contract checks accept a correct heterogeneous env (padding zero, teams equal)."""
    env = TwoTeams()
    testing.check_multi_agent(env, env.default_params, KEY)
    testing.check_critic_observation(env, env.default_params, KEY)


def test_gymnasium__multi_discrete_maps_and_actions_are_checked():
    gym_space = to_gym_space(MultiDiscrete([3, 5]))
    assert isinstance(gym_space, gymnasium.spaces.MultiDiscrete)
    np.testing.assert_array_equal(gym_space.nvec, [3, 5])
    np.testing.assert_array_equal(check_action(np.array([2, 4]), gym_space), [2, 4])
    with pytest.raises(ValueError, match="outside MultiDiscrete"):
        check_action(np.array([3, 0]), gym_space)
    with pytest.raises(ValueError, match="integer dtype"):
        check_action(np.array([1.0, 0.0]), gym_space)


def test_pettingzoo__per_agent_unpadded_spaces_and_stacked_actions():
    env = PettingZooParallelEnv(TwoTeams())
    assert env.observation_space("agent_0").shape == (2,)
    assert env.observation_space("agent_1").shape == (4,)
    assert env.action_space("agent_0") == gymnasium.spaces.Discrete(3)
    assert env.action_space("agent_2") == gymnasium.spaces.Discrete(5)
    obs, _ = env.reset(seed=3)
    assert obs["agent_0"].shape == (2,) and obs["agent_1"].shape == (4,)
    before = {a: o.copy() for a, o in obs.items()}
    obs, rewards, *_ = env.step({"agent_0": 2, "agent_1": 4, "agent_2": 0})
    # each agent's own action moved its own values (speaker +0.2, mover 1 +0.4, mover 2 +0)
    np.testing.assert_allclose(obs["agent_0"], before["agent_0"] + 0.2, atol=1e-6)
    np.testing.assert_allclose(obs["agent_1"], before["agent_1"] + 0.4, atol=1e-6)
    np.testing.assert_allclose(obs["agent_2"], before["agent_2"], atol=1e-6)
    assert rewards["agent_0"] == pytest.approx(float(obs["agent_0"].sum()), abs=1e-5)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step({"agent_0": 3})


def test_pettingzoo__api_and_seed_tests_pass_with_two_teams():
    parallel_api_test(PettingZooParallelEnv(TwoTeams()), num_cycles=20)
    parallel_seed_test(lambda: PettingZooParallelEnv(TwoTeams()))
