"""``MPE-SimpleCrypto-v0``: a speaker sends a message a listener must decode with a shared
key, while an eavesdropper tries to decode it without (PettingZoo's ``simple_crypto_v3``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.mpe.base import Landmarks, ParticleWorld, Team
from hordax.envs.mpe.world import MPEParams, MPEState, TalkParams

DIM_C = 4


class SimpleCrypto(ParticleWorld):
    """Three agents that only talk (none moves): ``eve_0`` (adversary), ``bob_0`` (listener),
    ``alice_0`` (speaker); two landmarks whose colours are one-hot words of the 4-word channel.

    At reset the goal word (a landmark colour) and the key (a landmark colour) are drawn
    independently (``state.goal = [goal, key]``).

    - observation: eve ``f32[4]`` = alice's utterance; bob ``f32[8]`` = ``[key, alice's
      utterance]``; alice ``f32[8]`` = ``[goal word, key]`` (stacked ``f32[3, 8]``).
    - action: ``MultiDiscrete([4, 4, 4])`` (the word) or ``f32[3, 4]`` (the utterance itself).
    - reward: with ``err(x) = |x - goal word|^2`` counted only when ``x`` is not all zeros, eve
      ``-err(eve)``, bob and alice ``err(eve) - err(bob)``.
    - termination: never; truncation at ``params.max_steps_in_episode`` (25).
    - params: :class:`~hordax.envs.mpe.world.TalkParams` (only the episode length).
    - metrics: ``bob_error``, ``eve_error``.
    """

    num_goals = 2

    def __init__(self, continuous_actions: bool = False):
        talker = {"movable": False, "silent": False}
        super().__init__(
            teams=[
                Team("eve", 1, size=0.05, color=(0.75, 0.25, 0.25), **talker),
                Team("bob", 1, size=0.05, **talker),
                Team("alice", 1, size=0.05, **talker),
            ],
            landmarks=[Landmarks(2)],
            dim_c=DIM_C,
            continuous_actions=continuous_actions,
        )

    @property
    def default_params(self) -> TalkParams:
        """Nothing moves, so only the episode length (no physics params)."""
        return TalkParams()

    def sample_goal(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (2,), 0, self.num_landmarks)

    def team_observations(self, state: MPEState, params: MPEParams) -> list[jax.Array]:
        goal_word = jax.nn.one_hot(state.goal[:1], DIM_C, dtype=jnp.float32)
        key = jax.nn.one_hot(state.goal[1:], DIM_C, dtype=jnp.float32)
        alice_says = state.comm[2:3]
        return [
            alice_says,
            jnp.concatenate([key, alice_says], -1),
            jnp.concatenate([goal_word, key], -1),
        ]

    def _errors(self, state: MPEState) -> jax.Array:
        """``f32[3]`` squared error of each agent's utterance to the goal word (0 when the
        utterance is all zeros: PettingZoo skips silent guesses)."""
        goal_word = jax.nn.one_hot(state.goal[0], DIM_C, dtype=jnp.float32)
        err = jnp.sum(jnp.square(state.comm - goal_word), -1)
        return jnp.where(jnp.all(state.comm == 0, -1), 0.0, err)

    def reward(self, state: MPEState, params: MPEParams) -> jax.Array:
        err = self._errors(state)
        good = err[0] - err[1]
        return jnp.stack([-err[0], good, good])

    def info_terms(self, state: MPEState, params: MPEParams):
        err = self._errors(state)
        return {"bob_error": err[1], "eve_error": err[0]}, {}

    def entity_colors(self, state: MPEState) -> np.ndarray:
        colors = super().entity_colors(state)
        colors[self.num_agents :] = np.eye(3, dtype=np.float32)[: self.num_landmarks] * 0.8
        return colors
