"""``MPE-SimplePush-v0``: a good agent goes to its goal landmark while an adversary pushes it
away (PettingZoo's ``simple_push_v3``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.mpe import world
from hordax.envs.mpe.base import Landmarks, ParticleWorld, Team
from hordax.envs.mpe.world import MPEParams, MPEState

#: Landmark colours: grey with 0.8 added to channel ``i + 1`` (PettingZoo's, rounded to f32).
LANDMARK_COLORS = (np.full((2, 3), 0.1) + 0.8 * np.eye(3)[1:]).astype(np.float32)


def agent_color(goal: jax.Array) -> jax.Array:
    """``f32[3]`` the good agent's colour: grey with 0.5 added to channel ``goal + 1``."""
    table = (np.full((2, 3), 0.25) + 0.5 * np.eye(3)[1:]).astype(np.float32)
    return jnp.asarray(table)[goal]


class SimplePush(ParticleWorld):
    """One adversary, one good agent, two landmarks; the goal landmark is drawn at reset.
    Both agents collide with each other (contact forces), not with landmarks.

    - agents: ``adversary_0``, ``agent_0``; silent, radius 0.05.
    - observation: adversary ``f32[8]`` = ``[own velocity, landmarks - own position, other -
      own position]``; agent ``f32[19]`` = ``[own velocity, goal - own position, own colour
      (3), landmarks - own position, landmark colours (2 x 3), other - own position]``
      (stacked ``f32[2, 19]``).
    - action: ``MultiDiscrete([5, 5])`` or ``f32[2, 5]``.
    - reward: agent ``-d(agent, goal)``; adversary ``d(agent, goal) - d(adversary, goal)``.
    - termination: never; truncation at ``params.max_steps_in_episode`` (25).
    - metrics: ``agent_distance``, ``adversary_distance`` (to the goal).
    """

    num_goals = 1

    def __init__(self, continuous_actions: bool = False):
        super().__init__(
            teams=[
                Team("adversary", 1, size=0.05, collide=True, color=(0.75, 0.25, 0.25)),
                Team("agent", 1, size=0.05, collide=True),
            ],
            landmarks=[Landmarks(2)],
            dim_c=2,
            continuous_actions=continuous_actions,
        )

    def sample_goal(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (1,), 0, self.num_landmarks)

    def team_observations(self, state: MPEState, params: MPEParams) -> list[jax.Array]:
        pos, vel = state.pos, state.vel
        rel_marks = world.relative(state.landmarks, pos)  # [2, 4]
        other = pos[::-1] - pos  # [2, 2]: the other agent relative to each
        adversary = jnp.concatenate([vel[:1], rel_marks[:1], other[:1]], -1)
        goal = state.landmarks[state.goal[0]]
        agent = jnp.concatenate(
            [
                vel[1:],
                (goal - pos[1])[None],
                agent_color(state.goal[0])[None],
                rel_marks[1:],
                jnp.asarray(LANDMARK_COLORS).reshape(1, -1),
                other[1:],
            ],
            -1,
        )
        return [adversary, agent]

    def _goal_distances(self, state: MPEState) -> jax.Array:
        return world.distances(state.pos, state.landmarks[state.goal])[:, 0]

    def reward(self, state: MPEState, params: MPEParams) -> jax.Array:
        dist = self._goal_distances(state)
        return jnp.stack([dist[1] - dist[0], -dist[1]])

    def info_terms(self, state: MPEState, params: MPEParams):
        dist = self._goal_distances(state)
        return {"agent_distance": dist[1], "adversary_distance": dist[0]}, {}

    def entity_colors(self, state: MPEState) -> np.ndarray:
        colors = super().entity_colors(state)
        colors[1] = np.asarray(agent_color(int(state.goal[0])))
        colors[self.num_agents :] = LANDMARK_COLORS
        return colors
