"""The env stack every trainer rolls out in: the canonical wrappers around a raw env.

Extension point: a trainer that needs more from the env than ``(obs, reward, terminated,
truncated, info)`` (e.g. a multi-agent trainer's ``info["agent_mask"]``, or a critic
observation ``env.critic_observation(state, params)``) gets it through the stack's
``info``, so :func:`~hordax.training.core.rollout.rollout` keeps one shape; see
``docs/training.md``.
"""

from __future__ import annotations

from typing import Any

from hordax.envs.wrappers import (
    ClipAction,
    LogEpisode,
    NormalizeObservation,
    NormalizeReward,
    VecEnv,
)


def make_env_stack(
    env: Any, agent_cfg: Any, num_envs: int, reset_pool: int = -1, stagger: bool = False
) -> Any:
    """``VecEnv(LogEpisode(ClipAction(env)))`` (see ``hordax.envs.wrappers``), then
    normalization as the agent config asks (fields ``normalize_obs``, ``normalize_reward``;
    absent or ``agent_cfg=None`` = off); ``reset_pool`` as ``VecEnv`` takes it
    (``trainer.reset_pool``: -1 auto, 0 off); ``stagger`` as ``VecEnv`` takes it
    (``trainer.stagger_starts``). ``agent_cfg.critic_obs`` (absent = off): the
    observations are ``{"actor", "critic"}`` pairs with the env's critic observation
    (``VecEnv(critic_obs=True)``), normalized with their own statistics."""
    critic_obs = bool(getattr(agent_cfg, "critic_obs", False))
    batch_env = VecEnv(
        LogEpisode(ClipAction(env)),
        num_envs,
        reset_pool=reset_pool,
        critic_obs=critic_obs,
        stagger=stagger,
    )
    if getattr(agent_cfg, "normalize_obs", False):
        batch_env = NormalizeObservation(batch_env)
    if getattr(agent_cfg, "normalize_reward", False):
        batch_env = NormalizeReward(batch_env, gamma=agent_cfg.gamma)
    return batch_env
