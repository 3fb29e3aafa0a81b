"""``MPE-SimpleAdversary-v0``: good agents hide which landmark is the goal from an adversary
(PettingZoo's ``simple_adversary_v3``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.mpe import world
from hordax.envs.mpe.base import Landmarks, ParticleWorld, Team, check_count
from hordax.envs.mpe.world import MPEParams, MPEState


class SimpleAdversary(ParticleWorld):
    """``num_good`` good agents (PettingZoo's ``N``, default 2), one adversary, ``num_good``
    landmarks; one landmark is the goal, known to the good agents only.

    - agents: ``adversary_0``, then ``agent_0 .. agent_{N-1}``; all silent, no contacts,
      radius 0.15.
    - observation: adversary ``f32[2 N + 2 N]`` = ``[landmarks - own position, other agents -
      own position]``; good agent ``f32[2 + 2 N + 2 N]`` = ``[goal - own position, landmarks -
      own position, other agents - own position]`` (stacked ``f32[N + 1, 4 N + 2]``).
    - action: ``MultiDiscrete([5] * (N + 1))`` or ``f32[N + 1, 5]``.
    - reward: adversary ``-d(adversary, goal)``; every good agent
      ``-min_good d(good, goal) + d(adversary, goal)``.
    - termination: never; truncation at ``params.max_steps_in_episode`` (25).
    - metrics: ``adversary_distance``, ``good_distance`` (the closest good agent's).
    """

    num_goals = 1

    def __init__(self, num_good: int = 2, continuous_actions: bool = False):
        self.num_good = check_count("num_good", num_good, 1)
        super().__init__(
            teams=[
                Team("adversary", 1, size=0.15, color=(0.85, 0.35, 0.35)),
                Team("agent", self.num_good, size=0.15, color=(0.35, 0.35, 0.85)),
            ],
            landmarks=[Landmarks(self.num_good, size=0.08, color=(0.15, 0.15, 0.15))],
            dim_c=2,
            continuous_actions=continuous_actions,
        )

    def sample_goal(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (1,), 0, self.num_landmarks)

    def team_observations(self, state: MPEState, params: MPEParams) -> list[jax.Array]:
        n = self.num_agents
        good = np.arange(1, n)
        adversary = jnp.concatenate(
            [
                world.relative(state.landmarks, state.pos[:1]),
                world.relative_others(state.pos, np.array([0]), world.others(n, [0])),
            ],
            -1,
        )
        goal = state.landmarks[state.goal[0]]
        agents = jnp.concatenate(
            [
                goal[None, :] - state.pos[good],
                world.relative(state.landmarks, state.pos[good]),
                world.relative_others(state.pos, good, world.others(n, good)),
            ],
            -1,
        )
        return [adversary, agents]

    def _goal_distances(self, state: MPEState) -> jax.Array:
        return world.distances(state.pos, state.landmarks[state.goal])[:, 0]

    def reward(self, state: MPEState, params: MPEParams) -> jax.Array:
        dist = self._goal_distances(state)
        good = -jnp.min(dist[1:]) + dist[0]
        return jnp.concatenate([-dist[:1], jnp.full((self.num_good,), good)])

    def info_terms(self, state: MPEState, params: MPEParams):
        dist = self._goal_distances(state)
        return {"adversary_distance": dist[0], "good_distance": jnp.min(dist[1:])}, {}

    def entity_colors(self, state: MPEState) -> np.ndarray:
        colors = super().entity_colors(state)
        colors[self.num_agents + int(state.goal[0])] = (0.15, 0.65, 0.15)
        return colors
