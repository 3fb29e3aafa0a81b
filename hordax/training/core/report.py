"""Host-side reading of a chunk's metrics: the row means, the NaN guard, the best member and
the parameter checksum (NumPy; shared by trainers and the host loop)."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import jax
import numpy as np

from hordax.training.core.metrics import NONFINITE_PREFIX, RUNNING_TOTALS


class NonFiniteError(RuntimeError):
    """Training produced a non-finite loss, gradient or parameter (the NaN guard)."""


def summarize_chunk(metrics: dict[str, np.ndarray]) -> dict[str, float]:
    """Chunk means: episode statistics weighted by episode count, running totals
    (:data:`~hordax.training.core.metrics.RUNNING_TOTALS`) their value after the chunk's
    last update, others plain means."""
    count = float(np.sum(metrics["episode_count"]))
    row: dict[str, float] = {"episodes": count}
    for name, value in metrics.items():
        if name == "episode_count" or name.startswith(NONFINITE_PREFIX):
            continue
        if name in RUNNING_TOTALS:
            row[name] = float(np.asarray(value).reshape(-1)[-1])
        elif name.endswith("_sum"):
            row[name[: -len("_sum")]] = float(np.sum(value)) / count if count else math.nan
        else:
            row[name] = float(np.mean(value))
    return row


def check_finite(metrics: dict[str, np.ndarray], first_update: int, population: bool) -> None:
    """The NaN guard: raise :class:`NonFiniteError` naming the first bad quantity and update.

    ``metrics["nonfinite/<quantity>"]`` are ``bool[chunk_updates]`` (``[P, chunk_updates]``
    for a population); ``first_update`` is the 1-based number of the chunk's first update.
    """
    flags = {
        k[len(NONFINITE_PREFIX) :]: np.asarray(v)
        for k, v in metrics.items()
        if k.startswith(NONFINITE_PREFIX)
    }
    if not flags or not any(f.any() for f in flags.values()):
        return
    per_update = {k: (f.any(axis=0) if population else f) for k, f in flags.items()}
    u = min(int(np.argmax(f)) for f in per_update.values() if f.any())
    order = ("loss", "gradient", "parameters")  # cause before effect
    names = sorted(
        (k for k, f in per_update.items() if f[u]),
        key=lambda k: order.index(k) if k in order else len(order),
    )
    where = f"update {first_update + u}"
    if population:
        members = sorted({int(m) for k in names for m in np.nonzero(flags[k][:, u])[0]})
        where += f", population member(s) {members}"
    raise NonFiniteError(f"non-finite {' and '.join(names)} at {where}")


def best_index(returns: list[float]) -> int:
    """Index of the highest return; NaN (no finished episode) counts as the lowest."""
    return max(
        range(len(returns)), key=lambda i: -math.inf if math.isnan(returns[i]) else returns[i]
    )


def params_checksum(tree: Any) -> str:
    """A stable hash of a pytree of arrays (leaf order, dtype, shape and bytes)."""
    h = hashlib.sha256()
    for leaf in jax.tree.leaves(jax.device_get(tree)):
        arr = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]
