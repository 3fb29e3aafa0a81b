"""``agent.bootstrap_truncation=false``: a truncation ends the return like a termination.

One PPO update on TwoTeams (8-step episodes that only truncate) with the flag off equals,
to float rounding, the update on the same env reporting those ends as terminations. (With
the flag on, the truncated steps bootstrap from the randomly initialized critic's nonzero
values, which a termination does not, so a flag without effect fails this test.)"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from marl_envs import TwoTeams

from hordax.agents.ppo import IPPOConfig
from hordax.training.config import TrainerConfig
from hordax.training.trainers.ppo import PPOTrainer


class TwoTeamsTerminating(TwoTeams):
    """TwoTeams whose episode end (step 8) is a termination."""

    def step_env(self, key, state, action, params):
        obs, state, reward, _, info = super().step_env(key, state, action, params)
        return obs, state, reward, state.time >= params.max_steps_in_episode, info


def one_update(env, cfg):
    tc = TrainerConfig(num_envs=4, rollout_length=12, total_env_steps=48)
    trainer = PPOTrainer(tc, cfg, env, env.default_params)
    state = trainer.init(jax.random.key(3))
    new, _ = jax.jit(trainer.update)(state)
    return new.agent.params


@pytest.mark.timeout(600)  # two small update programs (minutes only on a loaded machine)
@pytest.mark.slow
def test_no_bootstrap_equals_termination():
    off = one_update(TwoTeams(), IPPOConfig(bootstrap_truncation=False, num_minibatches=2))
    term = one_update(TwoTeamsTerminating(), IPPOConfig(num_minibatches=2))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), off, term)
