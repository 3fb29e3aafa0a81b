"""``MPE-SimpleWorldComm-v0``: predator-prey with food, forests that hide agents, and a
leader adversary who sees everything and talks to the others (PettingZoo's
``simple_world_comm_v3``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.mpe import world
from hordax.envs.mpe.base import Landmarks, ParticleWorld, Team, check_count
from hordax.envs.mpe.world import MPEParams, MPEState

CATCH_REWARD = 5.0
FOOD_REWARD = 2.0


class SimpleWorldComm(ParticleWorld):
    """``num_adversaries`` adversaries (default 4; the first is the leader, who talks on a
    4-word channel), ``num_good`` good agents (default 2), ``num_obstacles`` obstacles (1,
    radius 0.2, collide), ``num_food`` food (2, radius 0.03) and ``num_forests`` forests (2,
    radius 0.3); landmarks are drawn in ``[-0.9, 0.9]^2``, in that order. Adversaries: radius
    0.075, accel 3, max speed 1; good agents: radius 0.045, accel 4, max speed 1.3; agents
    and obstacles collide (contact forces).

    Forests hide: agent ``i`` sees agent ``j``'s position (and velocity, for good ``j``) when
    they share a forest, when neither is in any forest, or when ``i`` is the leader; else
    zeros.

    - agents: ``leadadversary_0``, ``adversary_0 ..``, ``agent_0 ..``.
    - observation: adversaries and leader ``[own velocity, own position, landmarks - own
      position, other agents - own position, other good agents' velocities, in-forest flags
      (+-1 per forest), the leader's utterance (4)]`` (``f32[34]`` at the defaults); good
      agents ``[own velocity, own position, landmarks - own position, other agents - own
      position, in-forest flags, other good agents' velocities]`` (``f32[28]``).
    - action: leader ``move + 5 word`` (``20`` discrete, ``f32[9]`` continuous), the others 5.
    - reward: good agent ``-5`` per adversary touching it, ``-2 x`` the boundary penalty,
      ``+2`` per food it touches, ``-0.05 x`` the distance to the nearest food; every
      adversary ``-0.1 x`` the distance to the nearest good agent ``+5`` per (good agent,
      adversary) pair touching.
    - termination: never; truncation at ``params.max_steps_in_episode`` (25).
    - metrics: ``catches``, ``food`` (good agents touching food).
    """

    def __init__(
        self,
        num_good: int = 2,
        num_adversaries: int = 4,
        num_obstacles: int = 1,
        num_food: int = 2,
        num_forests: int = 2,
        continuous_actions: bool = False,
    ):
        self.num_good = check_count("num_good", num_good, 1)
        self.num_adversaries = check_count("num_adversaries", num_adversaries, 1)
        self.num_obstacles = check_count("num_obstacles", num_obstacles, 0)
        self.num_food = check_count("num_food", num_food, 1)
        self.num_forests = check_count("num_forests", num_forests, 0)
        chaser = {"size": 0.075, "accel": 3.0, "max_speed": 1.0, "collide": True}
        teams = [
            Team("leadadversary", 1, silent=False, color=(0.65, 0.15, 0.15), **chaser),
            Team("adversary", self.num_adversaries - 1, color=(0.95, 0.45, 0.45), **chaser),
            Team(
                "agent",
                self.num_good,
                0.045,
                accel=4.0,
                max_speed=1.3,
                collide=True,
                color=(0.45, 0.95, 0.45),
            ),
        ]
        super().__init__(
            teams=[t for t in teams if t.count],
            landmarks=[
                Landmarks(
                    self.num_obstacles, 0.2, collide=True, spawn=0.9, color=(0.25, 0.25, 0.25)
                ),
                Landmarks(self.num_food, 0.03, spawn=0.9, color=(0.15, 0.15, 0.65)),
                Landmarks(self.num_forests, 0.3, spawn=0.9, color=(0.6, 0.9, 0.6)),
            ],
            dim_c=4,
            continuous_actions=continuous_actions,
        )

    def _slices(self) -> tuple[slice, slice]:
        """Landmark index ranges of the food and the forests."""
        food = self.num_obstacles + self.num_food
        return slice(self.num_obstacles, food), slice(food, food + self.num_forests)

    def team_observations(self, state: MPEState, params: MPEParams) -> list[jax.Array]:
        n, a = self.num_agents, self.num_adversaries
        food, forest = self._slices()
        size = params.agent_size
        in_forest = world.touching(
            state.pos, state.landmarks[forest], size, params.landmark_size[forest]
        )  # [n, F]
        hidden = jnp.any(in_forest, -1)
        shared = jnp.any(in_forest[:, None, :] & in_forest[None, :, :], -1)  # [n, n]
        leader = np.arange(n) == 0
        visible = shared | (~hidden[:, None] & ~hidden[None, :]) | leader[:, None]
        cols = world.others(n)
        seen = visible[np.arange(n)[:, None], cols]  # [n, n - 1]
        other_pos = jnp.where(seen[..., None], state.pos[cols] - state.pos[:, None], 0.0)

        # the other good agents' velocities, in agent order, hidden like their positions
        def good_velocities(rows: np.ndarray, good_cols: np.ndarray) -> jax.Array:
            seen_good = visible[rows[:, None], good_cols][..., None]
            return jnp.where(seen_good, state.vel[good_cols], 0.0).reshape(len(rows), -1)

        good = np.arange(a, n)
        chaser_vel = good_velocities(np.arange(a), np.tile(good, (a, 1)))
        good_vel = good_velocities(good, world.others(self.num_good) + a)
        flags = jnp.where(in_forest, 1.0, -1.0)
        common = [
            state.vel,
            state.pos,
            world.relative(state.landmarks, state.pos),
            other_pos.reshape(n, -1),
        ]
        chasers = jnp.concatenate(
            [p[:a] for p in common]
            + [chaser_vel, flags[:a], jnp.broadcast_to(state.comm[0], (a, 4))],
            -1,
        )
        agents = jnp.concatenate([p[a:] for p in common] + [flags[a:], good_vel], -1)
        parts = [chasers[:1], chasers[1:], agents]
        return [p for p in parts if p.shape[0]]

    def _touching(self, state: MPEState, params: MPEParams) -> tuple[jax.Array, jax.Array]:
        """``(catches bool[a, g], eating bool[g, food])``."""
        a, size = self.num_adversaries, params.agent_size
        food, _ = self._slices()
        catches = world.touching(state.pos[:a], state.pos[a:], size[:a], size[a:])
        eating = world.touching(
            state.pos[a:], state.landmarks[food], size[a:], params.landmark_size[food]
        )
        return catches, eating

    def reward(self, state: MPEState, params: MPEParams) -> jax.Array:
        a = self.num_adversaries
        food, _ = self._slices()
        catches, eating = self._touching(state, params)
        good_pos = state.pos[a:]
        good = (
            -CATCH_REWARD * jnp.sum(catches, 0)
            - 2 * world.boundary_penalty(good_pos)
            + FOOD_REWARD * jnp.sum(eating, -1)
            - 0.05 * jnp.min(world.distances(good_pos, state.landmarks[food]), -1)
        )
        nearest_good = jnp.min(world.distances(state.pos[:a], good_pos), -1)
        adversary = -0.1 * nearest_good + CATCH_REWARD * jnp.sum(catches)
        return jnp.concatenate([adversary, good]).astype(jnp.float32)

    def info_terms(self, state: MPEState, params: MPEParams):
        catches, eating = self._touching(state, params)
        return {
            "catches": jnp.sum(catches).astype(jnp.float32),
            "food": jnp.sum(eating).astype(jnp.float32),
        }, {}
