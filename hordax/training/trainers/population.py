"""Populations: several training runs (seeds and/or hyperparameter settings) in one program.

Member ``i`` of a population of size ``P`` is the run with seed ``seed + i`` and the
hyperparameters of column ``i`` of ``population.hparams`` (``{name: [P values]}``, names
from the algorithm's traced hyperparameters); every member's state gets a leading ``[P]``
axis and the trainer's init and chunk functions are ``jax.vmap``-ed over it, so member ``i``
computes what a separate run with those settings computes.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from hordax.training.core import report


def member_keys(seed: int, size: int) -> jax.Array:
    """``key[P]``: member ``i`` gets ``jax.random.key(seed + i)``."""
    return jnp.stack([jax.random.key(seed + i) for i in range(size)])


class PopulationTrainer:
    """``size`` members of ``trainer`` side by side: the :class:`Trainer` protocol over a
    leading member axis (``init(keys [P])``, ``run_chunk(state [P])``, ...).

    Args:
        trainer: a single-member trainer (``init``, ``run_chunk``, ``saved_agent``).
        size: members.
        seed: member ``i`` has seed ``seed + i`` (:meth:`init_key`).
        hparams: ``{name: [size values]}`` of traced hyperparameters that vary per member.
    """

    member_axis = True
    driver = "jit"

    def __init__(self, trainer: Any, size: int, seed: int, hparams: dict | None = None):
        self.trainer = trainer
        self.resolved = trainer.resolved
        self.members = self.seed_axis = int(size)
        self.seed = int(seed)
        self.hparams_lists = {k: list(v) for k, v in (hparams or {}).items()}

    def member_hparams(self) -> dict[str, jax.Array]:
        """``{name: f32[P]}`` of the hyperparameters that vary across members."""
        return {k: jnp.asarray(v, jnp.float32) for k, v in self.hparams_lists.items()}

    def init_key(self, seed: int) -> jax.Array:
        return member_keys(seed, self.members)

    def init(self, keys: jax.Array) -> Any:
        """``state [P]`` from ``keys [P]``, each member with its hyperparameters."""

        def one(key: jax.Array, hparams: dict) -> Any:
            state = self.trainer.init(key)
            agent = state.agent.replace(hparams={**state.agent.hparams, **hparams})
            return state.replace(agent=agent)

        return jax.vmap(one)(keys, self.member_hparams())

    def run_chunk(self, state: Any, num_updates: int | None = None) -> tuple[Any, dict]:
        return jax.vmap(lambda s: self.trainer.run_chunk(s, num_updates))(state)

    def train(self, keys: jax.Array) -> tuple[Any, dict]:
        return self.run_chunk(self.init(keys), self.resolved.num_updates)

    def saved_agent(self, state: Any) -> dict:
        return self.trainer.saved_agent(state)  # field access: stacked [P] leaves

    def label(self) -> str:
        return f" x{self.members}"

    def member_rows(self, metrics: dict) -> list[dict]:
        return [
            report.summarize_chunk({k: v[i] for k, v in metrics.items()})
            for i in range(self.members)
        ]

    def chunk_row(self, metrics: dict) -> dict:
        members = self.member_rows(metrics)
        best = report.best_index([m["episode_return"] for m in members])
        return {"episode_return": members[best]["episode_return"], "members": members}

    def check_finite(self, metrics: dict, first_update: int) -> None:
        report.check_finite(metrics, first_update, population=True)

    def member_summaries(self, saved: Any, row: dict) -> list[dict]:
        """One dict per member: seed, hyperparameters, final return, checksum (``saved``:
        the population's saved agent, on the host)."""
        out = []
        for i in range(self.members):
            member = jax.tree.map(lambda x, i=i: x[i], saved)
            out.append(
                {
                    "member": i,
                    "seed": self.seed + i,
                    "hparams": {k: v[i] for k, v in self.hparams_lists.items()},
                    "final_return": row["members"][i].get("episode_return", math.nan),
                    "final_episode_length": row["members"][i].get("episode_length", math.nan),
                    "params_checksum": report.params_checksum(member),
                }
            )
        return out

    def summary(self, saved: dict, row: dict) -> dict:
        members = self.member_summaries(saved, row)
        best = members[report.best_index([m["final_return"] for m in members])]
        return {
            "final_return": best["final_return"],
            "final_episode_length": best["final_episode_length"],
            "population_size": self.members,
            "members": members,
            "best_member": best["member"],
        }
