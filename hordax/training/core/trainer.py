"""What every single-agent trainer shares: the update loop (``run_chunk`` and ``train``
written once) and the host-facing defaults of the :class:`~hordax.training.core.types.Trainer`
protocol for a run of one member."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax

from hordax.envs.core import env_name, is_multi_agent
from hordax.training.core import report
from hordax.training.core.env_stack import make_env_stack
from hordax.training.core.normalization import normalizer_stats
from hordax.training.core.types import Resolved
from hordax.validation import need


class UpdateLoop:
    """A single-agent trainer: subclasses define ``init(key) -> state`` and
    ``update(state) -> (state, metrics)`` (one rollout and one learning step).

    Args:
        trainer_cfg: batch and budget sizes (``hordax.training.config.TrainerConfig``).
        agent_cfg: the agent's config.
        env, env_params: the raw environment and its params; ``self.env`` is the env stack
            (:func:`~hordax.training.core.env_stack.make_env_stack`) with the normalization
            ``stack_cfg`` asks for (default ``agent_cfg``; None = none).
        resolved: derived sizes.
    """

    name = "single-agent"  # the algorithm's name in messages
    members = 1
    member_axis = False
    seed_axis = 1
    driver = "jit"
    #: Whether this trainer handles multi-agent envs (the agent axis folded into its batch).
    multi_agent_ok = False

    def __init__(
        self,
        trainer_cfg: Any,
        agent_cfg: Any,
        env: Any,
        env_params: Any,
        resolved: Resolved,
        stack_cfg: Any = "agent",
    ):
        need(
            self.multi_agent_ok or not is_multi_agent(env),
            "agent.name",
            getattr(agent_cfg, "name", self.name.lower()),
            f"the {self.name} trainer supports single-agent envs, and "
            f"{env_name(env)} is multi-agent "
            "(use agent=ippo or agent=mappo)",
        )
        self.cfg, self.agent_cfg, self.resolved = trainer_cfg, agent_cfg, resolved
        self.env_params = env_params
        stack_cfg = agent_cfg if stack_cfg == "agent" else stack_cfg
        self.env = make_env_stack(
            env,
            stack_cfg,
            trainer_cfg.num_envs,
            trainer_cfg.reset_pool,
            stagger=trainer_cfg.stagger_starts,
        )

        self.obs_shape = tuple(env.observation_space(env_params).shape)
        self.action_space = env.action_space(env_params)

    def init(self, key: jax.Array) -> Any:
        raise NotImplementedError

    def update(self, state: Any) -> tuple[Any, dict]:
        raise NotImplementedError

    @contextlib.contextmanager
    def using_env_params(self, env_params: Any) -> Iterator[None]:
        """Trace with ``env_params`` (e.g. holding traced fields: a curriculum's level)
        instead of the constant ones: ``init``/``update`` read ``self.env_params`` at trace
        time."""
        saved, self.env_params = self.env_params, env_params
        try:
            yield
        finally:
            self.env_params = saved

    def init_key(self, seed: int) -> jax.Array:
        return jax.random.key(seed)

    def run_chunk(self, state: Any, num_updates: int | None = None) -> tuple[Any, dict]:
        """``num_updates`` updates (default: one chunk) in one scan; metrics stacked
        ``[num_updates]``."""
        n = self.resolved.chunk_updates if num_updates is None else num_updates
        return jax.lax.scan(lambda s, _: self.update(s), state, None, length=n)

    def train(self, key: jax.Array) -> tuple[Any, dict]:
        """The whole run: pure, jittable and vmappable over keys."""
        return self.run_chunk(self.init(key), self.resolved.num_updates)

    def saved_agent(self, state: Any) -> dict[str, Any]:
        """Parameters plus normalizer statistics."""
        return {"params": state.agent.params, "normalizer": normalizer_stats(state)}

    def label(self) -> str:
        return ""

    def chunk_row(self, metrics: dict) -> dict:
        return report.summarize_chunk(metrics)

    def check_finite(self, metrics: dict, first_update: int) -> None:
        report.check_finite(metrics, first_update, population=False)

    def summary(self, saved: dict, row: dict) -> dict:
        return {}
