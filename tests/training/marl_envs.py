"""Small multi-agent envs for the multi-agent trainer's tests: padding slots with garbage
data, and two teams that differ in observation size and action count."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import spaces

from hordax.envs.core import EnvParams, MultiAgentEnvironment, empty_info
from hordax.envs.debug.multi_point_mass import MultiPointMass
from hordax.envs.spaces import MultiDiscrete
from hordax.envs.wrappers.clip import clip_action


class Padded(MultiAgentEnvironment):
    """``MultiPointMass(n_real)`` plus ``pad`` padding slots (last) whose observations,
    rewards and terminal flags are large random garbage and whose ``agent_mask`` is False:
    a trainer that masks correctly sees exactly the unpadded env."""

    def __init__(self, n_real: int, pad: int):
        super().__init__()
        self.inner, self.pad = MultiPointMass(n_real), pad

    @property
    def num_agents(self) -> int:
        return self.inner.num_agents + self.pad

    @property
    def default_params(self):
        return self.inner.default_params

    def _junk(self, key, obs):
        k1, k2, k3 = jax.random.split(jax.random.fold_in(key, 12345), 3)
        shape = (self.pad, obs.shape[-1])
        return (
            jnp.concatenate([obs, 50.0 * jax.random.normal(k1, shape)]),
            100.0 * jax.random.normal(k2, (self.pad,)),
            jax.random.bernoulli(k3, 0.5, (self.pad,)),
        )

    def reset_env(self, key, params):
        obs, state = self.inner.reset_env(key, params)
        return self._junk(key, obs)[0], state

    def step_env(self, key, state, action, params):
        n = self.inner.num_agents
        obs, state, reward, terminated, info = self.inner.step_env(key, state, action[:n], params)
        obs, junk_reward, junk_term = self._junk(key, obs)
        info = {
            **info,
            "agent_terminated": jnp.concatenate([info["agent_terminated"], junk_term]),
            "agent_mask": jnp.concatenate([info["agent_mask"], jnp.zeros(self.pad, bool)]),
        }
        return obs, state, jnp.concatenate([reward, junk_reward]), terminated, info

    def agent_mask(self, state, params):
        return jnp.concatenate([self.inner.agent_mask(state, params), jnp.zeros(self.pad, bool)])

    def observation_space(self, params):
        d = self.inner.observation_space(params).shape[-1]
        return spaces.Box(-jnp.inf, jnp.inf, (self.num_agents, d), jnp.float32)

    def action_space(self, params):
        return spaces.Box(-1.0, 1.0, (self.num_agents, 2), jnp.float32)


@struct.dataclass
class TwoTeamsState:
    value: jax.Array  # f32 [3, 4]
    time: jax.Array


class TwoTeams(MultiAgentEnvironment):
    """Slot 0: team ``a`` (observation size 2, 3 actions); slots 1-2: team ``b`` (size 4,
    5 actions). Reward: agent ``i`` is paid for action 1 (team a) or 4 (team b)."""

    num_agents = 3
    team_names = ("a", "b")
    team_index = (0, 1, 1)
    SIZES = (2, 4, 4)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams(max_steps_in_episode=8)

    def _obs(self, state):
        mask = jnp.arange(4)[None, :] < jnp.asarray(self.SIZES)[:, None]
        return jnp.where(mask, state.value, 0.0)

    def reset_env(self, key, params):
        state = TwoTeamsState(jax.random.uniform(key, (3, 4), minval=-1, maxval=1), jnp.int32(0))
        return self._obs(state), state

    def step_env(self, key, state, action, params):
        action = clip_action(action, self.action_space(params))
        value = jnp.clip(state.value + action[:, None] / 10.0, -5.0, 5.0)
        state = TwoTeamsState(value, state.time + 1)
        reward = (action == jnp.array([1, 4, 4])).astype(jnp.float32)
        info = {
            **empty_info(),
            "agent_terminated": jnp.zeros(3, bool),
            "agent_mask": jnp.ones(3, bool),
        }
        return self._obs(state), state, reward, jnp.array(False), info

    def observation_space(self, params):
        return spaces.Box(-5.0, 5.0, (3, 4), jnp.float32)

    def agent_observation_space(self, i, params):
        return spaces.Box(-5.0, 5.0, (self.SIZES[i],), jnp.float32)

    def action_space(self, params):
        return MultiDiscrete([3, 5, 5])

    def critic_observation(self, state, params):
        return jnp.broadcast_to(
            jnp.concatenate([state.value.reshape(-1), state.time[None] / 8.0]), (3, 13)
        )

    def critic_observation_space(self, params):
        return spaces.Box(-5.0, 5.0, (3, 13), jnp.float32)
