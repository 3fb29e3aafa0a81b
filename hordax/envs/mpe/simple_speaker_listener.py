"""``MPE-SimpleSpeakerListener-v0``: a static speaker names the goal landmark to a listener
that cannot see it (PettingZoo's ``simple_speaker_listener_v4``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.mpe import world
from hordax.envs.mpe.base import Landmarks, ParticleWorld, Team
from hordax.envs.mpe.world import MPEParams, MPEState

#: Landmark colours (red, green, blue), rounded to f32.
LANDMARK_COLORS = np.array([[0.65, 0.15, 0.15], [0.15, 0.65, 0.15], [0.15, 0.15, 0.65]], np.float32)


class SimpleSpeakerListener(ParticleWorld):
    """A speaker (talks, 3 words, cannot move) sees the goal landmark's colour; a listener
    (moves, silent) hears the speaker and must reach the goal. Three landmarks, no contacts.

    - agents: ``speaker_0``, ``listener_0`` (radius 0.075); landmarks radius 0.04.
    - observation: speaker ``f32[3]`` = goal colour; listener ``f32[11]`` = ``[own velocity,
      landmarks - own position (3 x 2), the speaker's utterance (3)]`` (stacked ``f32[2, 11]``).
    - action: ``MultiDiscrete([3, 5])`` or ``f32[2, 5]`` (the speaker uses the first 3).
    - reward (both): ``-|listener - goal|^2``.
    - termination: never; truncation at ``params.max_steps_in_episode`` (25).
    - metrics: ``distance`` from the listener to the goal.
    """

    num_goals = 1

    def __init__(self, continuous_actions: bool = False):
        super().__init__(
            teams=[
                Team("speaker", 1, size=0.075, movable=False, silent=False),
                Team("listener", 1, size=0.075),
            ],
            landmarks=[Landmarks(3, size=0.04)],
            dim_c=3,
            continuous_actions=continuous_actions,
        )

    def sample_goal(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (1,), 0, self.num_landmarks)

    def team_observations(self, state: MPEState, params: MPEParams) -> list[jax.Array]:
        speaker = jnp.asarray(LANDMARK_COLORS)[state.goal]  # [1, 3]
        listener = jnp.concatenate(
            [state.vel[1:], world.relative(state.landmarks, state.pos[1:]), state.comm[:1]], -1
        )
        return [speaker, listener]

    def reward(self, state: MPEState, params: MPEParams) -> jax.Array:
        dist2 = jnp.sum(jnp.square(state.pos[1] - state.landmarks[state.goal[0]]))
        return jnp.full((2,), -dist2)

    def info_terms(self, state: MPEState, params: MPEParams):
        distance = world.distances(state.pos[1:], state.landmarks[state.goal])[0, 0]
        return {"distance": distance}, {}

    def entity_colors(self, state: MPEState) -> np.ndarray:
        colors = super().entity_colors(state)
        colors[1] = LANDMARK_COLORS[int(state.goal[0])] + 0.45
        colors[self.num_agents :] = LANDMARK_COLORS
        return colors
