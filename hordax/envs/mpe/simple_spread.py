"""``MPE-SimpleSpread-v0``: agents cover every landmark without colliding (PettingZoo's
``simple_spread_v3``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.mpe import world
from hordax.envs.mpe.base import Landmarks, ParticleWorld, Team, check_count
from hordax.envs.mpe.world import MPEState, SharedRewardParams, mix_rewards

#: A landmark counts as occupied when an agent is closer than this (PettingZoo's benchmark).
OCCUPIED_RADIUS = 0.1


class SimpleSpread(ParticleWorld):
    """``num_agents`` agents (PettingZoo's ``N``, default 3) and as many landmarks; agents
    collide with each other (contact forces, radius 0.15), not with landmarks.

    - agents: ``agent_0 ..``; silent (the channel of size 2 carries zeros).
    - observation ``f32[N, 4 + 2 N + 4 (N - 1)]`` (``f32[3, 18]``): ``[own velocity, own
      position, landmarks - own position, other agents - own position, other agents'
      utterances]``.
    - action: ``MultiDiscrete([5] * N)`` or ``f32[N, 5]``.
    - reward: global ``-sum_landmarks min_agents d(agent, landmark)``; own ``-1`` per other
      agent it touches; agent ``i`` gets ``(1 - local_ratio) global + local_ratio own``
      (``params.local_ratio``, 0.5).
    - termination: never; truncation at ``params.max_steps_in_episode`` (25).
    - metrics: ``occupied_landmarks`` (landmarks with an agent within 0.1), ``collisions``
      (touching agent pairs), ``min_dists`` (the sum of landmark-to-nearest-agent distances).
    - reward_terms: ``global`` (``f32[]``), ``collisions`` (``f32[n]``, the own term).
    """

    def __init__(self, num_agents: int = 3, continuous_actions: bool = False):
        count = check_count("num_agents", num_agents, 1)
        super().__init__(
            teams=[Team("agent", count, size=0.15, collide=True, color=(0.35, 0.35, 0.85))],
            landmarks=[Landmarks(count)],
            dim_c=2,
            continuous_actions=continuous_actions,
        )

    @property
    def default_params(self) -> SharedRewardParams:
        return SharedRewardParams.extend(super().default_params)

    def team_observations(self, state: MPEState, params: SharedRewardParams) -> list[jax.Array]:
        n = self.num_agents
        rows, cols = np.arange(n), world.others(n)
        return [
            jnp.concatenate(
                [
                    state.vel,
                    state.pos,
                    world.relative(state.landmarks, state.pos),
                    world.relative_others(state.pos, rows, cols),
                    state.comm[cols].reshape(n, -1),
                ],
                -1,
            )
        ]

    def _terms(self, state: MPEState, params: SharedRewardParams):
        """``(global f32[], own f32[n], touching bool[n, n], nearest f32[L])``."""
        nearest = jnp.min(world.distances(state.landmarks, state.pos), -1)  # [L]
        touch = world.touching(state.pos, state.pos, params.agent_size, params.agent_size)
        touch = touch & ~np.eye(self.num_agents, dtype=bool)
        return -jnp.sum(nearest), -jnp.sum(touch, -1).astype(jnp.float32), touch, nearest

    def reward(self, state: MPEState, params: SharedRewardParams) -> jax.Array:
        global_, own, _, _ = self._terms(state, params)
        return mix_rewards(own, global_, params.local_ratio)

    def info_terms(self, state: MPEState, params: SharedRewardParams):
        global_, own, touch, nearest = self._terms(state, params)
        metrics = {
            "occupied_landmarks": jnp.sum(nearest < OCCUPIED_RADIUS).astype(jnp.float32),
            "collisions": jnp.sum(touch).astype(jnp.float32) / 2,
            "min_dists": jnp.sum(nearest),
        }
        return metrics, {"global": global_, "collisions": own}
