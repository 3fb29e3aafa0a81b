"""``MPE-SimpleReference-v0``: two agents each tell the other which landmark to reach
(PettingZoo's ``simple_reference_v3``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.mpe import world
from hordax.envs.mpe.base import Landmarks, ParticleWorld, Team
from hordax.envs.mpe.world import MPEParams, MPEState, SharedRewardParams, mix_rewards

#: Landmark colours (red, green, blue), rounded to f32.
LANDMARK_COLORS = np.array([[0.75, 0.25, 0.25], [0.25, 0.75, 0.25], [0.25, 0.25, 0.75]], np.float32)


class SimpleReference(ParticleWorld):
    """Two agents that move and talk (10 words), three landmarks. Agent ``i``'s goal is for
    the *other* agent to reach landmark ``state.goal[i]``, which only agent ``i`` knows (as
    its colour), so each must tell the other.

    - agents: ``agent_0``, ``agent_1``; no contacts.
    - observation ``f32[2, 21]``: ``[own velocity, landmarks - own position (3 x 2), own goal
      landmark's colour (3), the other agent's utterance (10)]``.
    - action: ``MultiDiscrete([50, 50])`` (``move + 5 word``) or ``f32[2, 15]`` (5 move
      entries, 10 utterance values).
    - reward: own ``r_i = -d(other agent, landmark goal[i])``; global ``(r_0 + r_1) / 2``;
      agent ``i`` gets ``(1 - local_ratio) global + local_ratio r_i``
      (``params.local_ratio``, 0.5).
    - termination: never; truncation at ``params.max_steps_in_episode`` (25).
    - metrics: ``distance`` (mean of both goal distances).
    """

    num_goals = 2

    def __init__(self, continuous_actions: bool = False):
        super().__init__(
            teams=[Team("agent", 2, size=0.05, silent=False)],
            landmarks=[Landmarks(3)],
            dim_c=10,
            continuous_actions=continuous_actions,
        )

    @property
    def default_params(self) -> SharedRewardParams:
        return SharedRewardParams.extend(super().default_params)

    def sample_goal(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (2,), 0, self.num_landmarks)

    def team_observations(self, state: MPEState, params: MPEParams) -> list[jax.Array]:
        goal_color = jnp.asarray(LANDMARK_COLORS)[state.goal]  # [2, 3]
        return [
            jnp.concatenate(
                [
                    state.vel,
                    world.relative(state.landmarks, state.pos),
                    goal_color,
                    state.comm[::-1],  # the other agent's utterance
                ],
                -1,
            )
        ]

    def _own_rewards(self, state: MPEState) -> jax.Array:
        goal = state.landmarks[state.goal]  # [2, 2]: agent i's goal landmark
        return -jnp.sqrt(jnp.sum(jnp.square(state.pos[::-1] - goal), -1))

    def reward(self, state: MPEState, params: SharedRewardParams) -> jax.Array:
        own = self._own_rewards(state)
        return mix_rewards(own, (own[0] + own[1]) / 2, params.local_ratio)

    def info_terms(self, state: MPEState, params: MPEParams):
        return {"distance": -jnp.mean(self._own_rewards(state))}, {}

    def entity_colors(self, state: MPEState) -> np.ndarray:
        colors = super().entity_colors(state)
        goal = np.asarray(state.goal)
        colors[:2] = LANDMARK_COLORS[goal[::-1]]  # each agent wears the colour it must reach
        colors[self.num_agents :] = LANDMARK_COLORS
        return colors
