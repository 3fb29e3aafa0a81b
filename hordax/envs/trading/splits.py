"""Deterministic full-split episodes of the trading envs (backtests and ensemble validation):
from a split's first row, with no time limit, so an episode trades the whole split."""

from __future__ import annotations

from typing import Any

from hordax.envs.registry import constructor_accepts, make

#: Time limit of a full-split episode: longer than any split, so only the split's end stops it.
NO_TIME_LIMIT = 10**7


def supports_split(env_id: str) -> bool:
    """Whether the env's constructor takes ``split`` and ``random_start`` (trading envs)."""
    return constructor_accepts(env_id, ["split", "random_start"])


def full_split_steps(env_params: Any) -> int | None:
    """Steps of a fixed-start episode over a whole split (trading envs), else ``None``."""
    if all(hasattr(env_params, f) for f in ("start_lo", "end")):
        return int(env_params.end) - 1 - int(env_params.start_lo)
    return None


def split_env(env_id: str, kwargs: dict, params: dict, split: str) -> tuple[Any, Any, int | None]:
    """``(env, env_params, num_steps)`` for a deterministic full-split episode: from the
    split's first row, with no time limit whatever the run's ``env.params`` or
    ``env.kwargs`` set (``make`` applies ``params`` after the constructor, so the lifted
    limit goes into ``params``: a run trained with ``env.params.max_steps_in_episode=63``
    is still evaluated over its whole split)."""
    kw = {k: v for k, v in kwargs.items() if k != "max_steps_in_episode"}
    kw |= {"split": split, "random_start": False}
    if constructor_accepts(env_id, ["max_steps_in_episode"]):  # else a params field only
        kw["max_steps_in_episode"] = NO_TIME_LIMIT  # (make refuses a field given twice)
    env, env_params = make(env_id, params={**params, "max_steps_in_episode": NO_TIME_LIMIT}, **kw)
    return env, env_params, full_split_steps(env_params)


def split_params(env_id: str, kwargs: dict, params: dict, split: str) -> tuple[Any, int]:
    """``(env_params, first row)`` of the deterministic full-split episode of ``split``."""
    _, env_params, _ = split_env(env_id, kwargs, params, split)
    return env_params, int(env_params.start_lo)
