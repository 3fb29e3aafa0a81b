"""``MPE-Simple-v0``: one agent, one landmark (PettingZoo's ``simple_v3``, for debugging)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hordax.envs.mpe import world
from hordax.envs.mpe.base import Landmarks, ParticleWorld, Team
from hordax.envs.mpe.world import MPEParams, MPEState


class Simple(ParticleWorld):
    """One agent must reach one landmark.

    - agents: ``agent_0`` (team ``agent``); silent, no contacts.
    - observation ``f32[1, 4]``: ``[own velocity, landmark - own position]``.
    - action: ``MultiDiscrete([5])`` or ``f32[1, 5]`` in ``[0, 1]``.
    - reward ``f32[1]``: ``-|landmark - position|^2``.
    - termination: never; truncation at ``params.max_steps_in_episode`` (25).
    - metrics: ``distance`` to the landmark.
    """

    def __init__(self, continuous_actions: bool = False):
        super().__init__(
            teams=[Team("agent", 1, size=0.05)],
            landmarks=[Landmarks(1, color=(0.75, 0.25, 0.25))],
            dim_c=0,
            continuous_actions=continuous_actions,
        )

    def team_observations(self, state: MPEState, params: MPEParams) -> list[jax.Array]:
        return [jnp.concatenate([state.vel, world.relative(state.landmarks, state.pos)], -1)]

    def reward(self, state: MPEState, params: MPEParams) -> jax.Array:
        return -jnp.sum(jnp.square(state.pos - state.landmarks[0]), -1)

    def info_terms(self, state: MPEState, params: MPEParams):
        distance = world.distances(state.pos, state.landmarks)[0, 0]
        return {"distance": distance}, {}
