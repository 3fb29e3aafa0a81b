"""The curriculum hook of the host loop: after every chunk, the rule of ``curriculum.name``
(:data:`hordax.training.config.curriculum.CURRICULA`) maps the chunk row's task metric to
the next level, which goes into the train state (``CurriculumState.level``) before the
checkpoint is saved. The row gets ``curriculum/level`` (the level the chunk trained at) and
``curriculum/next``; the summary a ``curriculum`` block."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hordax.training.config.curriculum import next_level


class CurriculumHook:
    def __init__(self, cfg: Any):
        self.cfg = cfg

    def after_chunk(self, driver: Any, row: dict) -> None:
        cc = self.cfg
        level = int(jax.device_get(driver.state.level))
        new = next_level(cc, level, row.get(f"task/{cc.metric}"))
        row["curriculum/level"], row["curriculum/next"] = level, new
        if new != level:
            old = driver.state.level
            driver.state = driver.state.replace(level=jax.device_put(jnp.int32(new), old.sharding))

    def summary(self, driver: Any, saved: dict) -> dict:
        cc = self.cfg
        level = int(jax.device_get(driver.state.level))  # also for a run resumed at its end
        return {
            "curriculum": {
                "name": cc.name,
                "field": cc.field,
                "metric": cc.metric,
                "final_level": level,
            }
        }


def task_metrics(env: Any, env_params: Any) -> list[str]:
    """Names of the env's task metrics (``info["metrics"]``), from an abstract trace of one
    reset and step (nothing runs)."""

    def one_step(key: jax.Array) -> dict:
        _, state = env.reset(key, env_params)
        action = env.action_space(env_params).sample(key)
        return env.step(key, state, action, env_params)[-1].get("metrics", {})

    return sorted(jax.eval_shape(one_step, jax.random.key(0)))


def make_curriculum(cfg: Any, env: Any, env_params: Any) -> CurriculumHook | None:
    """The run's curriculum hook (None for ``curriculum.name=none``); ``ValueError`` naming
    ``curriculum.metric`` when the env reports no such task metric (the level would never
    move: the rule keeps it when the row has no value)."""
    if cfg.curriculum.name == "none":
        return None
    metrics = task_metrics(env, env_params)
    if cfg.curriculum.metric not in metrics:
        raise ValueError(
            f"curriculum.metric={cfg.curriculum.metric!r}: env {cfg.env.id} reports no task "
            f"metric of that name (info['metrics']); allowed: {metrics}"
        )
    return CurriculumHook(cfg.curriculum)
