"""Wrappers that own their state (never shared ``info`` keys).

Per-env wrappers (applied before ``vmap``): :class:`ClipAction`, :class:`LogEpisode`.
Batch-level wrappers (applied to a :class:`VecEnv`): :class:`NormalizeObservation`,
:class:`NormalizeReward`; their running statistics are shared by the whole batch and
travel with the agent (they are part of the wrapper state the trainer saves).

Canonical stack, innermost first::

    VecEnv(LogEpisode(ClipAction(env)), num_envs) -> NormalizeObservation -> NormalizeReward
"""

from hordax.envs.wrappers.base import Wrapper
from hordax.envs.wrappers.clip import ClipAction
from hordax.envs.wrappers.log import LogEpisode, LogEpisodeState
from hordax.envs.wrappers.normalize import (
    NormalizeObservation,
    NormalizeObservationState,
    NormalizeReward,
    NormalizeRewardState,
    RunningStats,
)
from hordax.envs.wrappers.vector import VecEnv

__all__ = [
    "ClipAction",
    "LogEpisode",
    "LogEpisodeState",
    "NormalizeObservation",
    "NormalizeObservationState",
    "NormalizeReward",
    "NormalizeRewardState",
    "RunningStats",
    "VecEnv",
    "Wrapper",
]
