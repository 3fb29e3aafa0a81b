"""``MPE-SimpleTag-v0``: slower adversaries chase faster good agents around obstacles
(PettingZoo's ``simple_tag_v3``, predator-prey)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.mpe import world
from hordax.envs.mpe.base import Landmarks, ParticleWorld, Team, check_count
from hordax.envs.mpe.world import MPEParams, MPEState

CATCH_REWARD = 10.0


class SimpleTag(ParticleWorld):
    """``num_adversaries`` adversaries (default 3: radius 0.075, accel 3, max speed 1),
    ``num_good`` good agents (default 1: radius 0.05, accel 4, max speed 1.3) and
    ``num_obstacles`` obstacles (default 2: radius 0.2, drawn in ``[-0.9, 0.9]^2``); every
    entity collides (contact forces).

    - agents: ``adversary_0 ..``, then ``agent_0 ..``; silent.
    - observation: ``[own velocity, own position, obstacles - own position, other agents -
      own position, the other good agents' velocities]``: ``f32[16]`` for adversaries,
      ``f32[14]`` for the good agent at the defaults (stacked ``f32[4, 16]``).
    - action: ``MultiDiscrete([5] * n)`` or ``f32[n, 5]``.
    - reward: good agent ``-10`` per adversary touching it minus the boundary penalty of its
      position (:func:`hordax.envs.mpe.world.boundary_penalty`); every adversary ``+10`` per
      (good agent, adversary) pair touching, the whole team's catches (PettingZoo's rule).
    - termination: never; truncation at ``params.max_steps_in_episode`` (25).
    - metrics: ``catches`` (touching pairs). reward_terms: ``catches`` and ``boundary``
      (``f32[n]``, unscaled; 0 for adversaries).
    """

    def __init__(
        self,
        num_good: int = 1,
        num_adversaries: int = 3,
        num_obstacles: int = 2,
        continuous_actions: bool = False,
    ):
        self.num_good = check_count("num_good", num_good, 1)
        self.num_adversaries = check_count("num_adversaries", num_adversaries, 1)
        obstacles = check_count("num_obstacles", num_obstacles, 0)
        chaser = {"collide": True, "color": (0.85, 0.35, 0.35)}
        super().__init__(
            teams=[
                Team("adversary", num_adversaries, 0.075, accel=3.0, max_speed=1.0, **chaser),
                Team(
                    "agent",
                    num_good,
                    0.05,
                    accel=4.0,
                    max_speed=1.3,
                    collide=True,
                    color=(0.35, 0.85, 0.35),
                ),
            ],
            landmarks=[
                Landmarks(obstacles, size=0.2, collide=True, spawn=0.9, color=(0.25, 0.25, 0.25))
            ],
            dim_c=2,
            continuous_actions=continuous_actions,
        )

    def team_observations(self, state: MPEState, params: MPEParams) -> list[jax.Array]:
        n, a = self.num_agents, self.num_adversaries
        good = np.arange(a, n)
        common = jnp.concatenate(
            [
                state.vel,
                state.pos,
                world.relative(state.landmarks, state.pos),
                world.relative_others(state.pos, np.arange(n), world.others(n)),
            ],
            -1,
        )
        good_vel = state.vel[good].reshape(1, -1)
        adversaries = jnp.concatenate([common[:a], jnp.repeat(good_vel, a, 0)], -1)
        other_good = world.others(self.num_good) + a  # [g, g - 1] other good agents
        agents = jnp.concatenate([common[a:], state.vel[other_good].reshape(len(good), -1)], -1)
        return [adversaries, agents]

    def _catches(self, state: MPEState, params: MPEParams) -> jax.Array:
        """``bool[a, g]``: adversary touching good agent."""
        a = self.num_adversaries
        size = params.agent_size
        return world.touching(state.pos[:a], state.pos[a:], size[:a], size[a:])

    def reward(self, state: MPEState, params: MPEParams) -> jax.Array:
        catches = self._catches(state, params)
        caught = jnp.sum(catches, 0).astype(jnp.float32)  # [g]
        good = -CATCH_REWARD * caught - world.boundary_penalty(state.pos[self.num_adversaries :])
        adversary = CATCH_REWARD * jnp.sum(catches).astype(jnp.float32)
        return jnp.concatenate([jnp.full((self.num_adversaries,), adversary), good])

    def info_terms(self, state: MPEState, params: MPEParams):
        catches = self._catches(state, params)
        total = jnp.sum(catches).astype(jnp.float32)
        a = self.num_adversaries
        per_agent = jnp.concatenate(
            [jnp.full((a,), total), jnp.sum(catches, 0).astype(jnp.float32)]
        )
        boundary = jnp.concatenate([jnp.zeros(a), world.boundary_penalty(state.pos[a:])])
        return {"catches": total}, {"catches": per_agent, "boundary": boundary}
