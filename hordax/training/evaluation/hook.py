"""Evaluation during ``hordax train``: a chunk hook of the host loop
(:class:`~hordax.training.host.loop.ChunkHook`) that evaluates the current saved agent
every ``eval.every`` chunks and after the last one, adds ``eval/...`` fields to that chunk's
``metrics.jsonl`` row and an ``eval`` block to the summary.

It reads the train state (``driver.saved()``) and never writes it, and draws its keys from
the evaluation seed space, so a run's training (its key stream, checkpoints, resume) is the
same with evaluation on or off. An evaluation that fails (episodes still running at its step
cap) loses no training: one warning line on stderr, an ``error`` in the summary's ``eval``
block, and the run goes on to its checkpoint and files.
"""

from __future__ import annotations

import sys
from typing import Any

from hordax.training.evaluation.policy import STOCHASTIC
from hordax.training.evaluation.run import Evaluator, flat_fields


class EvalHook:
    """``eval.episodes`` fresh episodes of the run's env after chunk ``c`` when
    ``(c + 1) % eval.every == 0`` (``every > 0``) or ``c`` is the last chunk."""

    def __init__(self, cfg: Any, env: Any, env_params: Any, resolved: Any):
        ec = cfg.eval
        seed = cfg.seed if ec.seed < 0 else ec.seed
        self.every, self.num_chunks = int(ec.every), resolved.num_chunks
        self.run_dir = cfg.run_dir
        self.evaluator = Evaluator(cfg, env, env_params, ec.episodes, seed, ec.deterministic)
        self.result: dict | None = None
        self.chunk: int | None = None

    def after_chunk(self, driver: Any, row: dict) -> None:
        c = int(row["chunk"])
        due = self.every > 0 and (c + 1) % self.every == 0
        if not (due or c + 1 == self.num_chunks):
            return
        if getattr(driver, "state", None) is None:  # a host driver (PQL's parallel mode)
            return  # without a state between chunks: evaluated in summary()
        self._evaluate(driver.saved(), c)
        if "error" not in self.result:
            row.update(flat_fields(self.result))

    def _evaluate(self, saved: dict, chunk: int) -> None:
        self.chunk = chunk
        try:
            self.result = self.evaluator(saved)
        except ValueError as e:  # e.g. episodes still running at the step cap
            how = f"hordax eval {self.run_dir}" if self.run_dir else "hordax eval"
            self.result = {"error": f"{e} (the trained agent is kept: evaluate it with {how})"}
            print(
                f"hordax: warning: eval after chunk {chunk}: {self.result['error']}",
                file=sys.stderr,
                flush=True,
            )

    def summary(self, driver: Any, saved: dict) -> dict:
        """``{"eval": ...}`` of the newest evaluation; the final agent ``saved`` is evaluated
        here when no chunk ran in this process (a run resumed after its last chunk)."""
        if self.result is None:
            self._evaluate(saved, self.num_chunks - 1)
        return {"eval": {"chunk": self.chunk, **self.result}}


def train_hooks(cfg: Any, env: Any, env_params: Any, resolved: Any) -> tuple:
    """The chunk hooks a run's config asks for: its curriculum (first: evaluation then
    sees the row it wrote) and evaluation (``eval.episodes > 0``)."""
    from hordax.training.host.curriculum import make_curriculum

    hooks: list = []
    ec, ens = cfg.eval, cfg.ensemble
    algos = list(ens.algorithms) if ens.enabled and ens.algorithms else [cfg.agent.name]
    greedy = [a for a in algos if a not in STOCHASTIC]
    if ec.episodes > 0 and not ec.deterministic and greedy:  # else found after training
        raise ValueError(
            f"eval.deterministic={ec.deterministic}: agent.name={greedy[0]} has no stochastic"
            " policy to sample (only PPO's is); use eval.deterministic=true"
        )
    curriculum = make_curriculum(cfg, env, env_params)
    if curriculum is not None:
        hooks.append(curriculum)
    if cfg.eval.episodes > 0:
        hooks.append(EvalHook(cfg, env, env_params, resolved))
    return tuple(hooks)
