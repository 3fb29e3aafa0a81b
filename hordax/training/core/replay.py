"""A device-resident circular replay buffer (a pytree: it lives in the train state, so it
is jitted, vmapped over a population and checkpointed with everything else).

Rows are written at ``ptr, ptr+1, ...`` modulo the capacity; ``size`` counts the valid rows
(it stops at the capacity), and sampling draws uniformly from rows ``[0, size)`` only, so an
unwritten slot is never returned, and a row overwritten after a wrap-around is replaced by
its newer data (no stale copy survives anywhere).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class ReplayBuffer:
    data: Any  # pytree, every leaf [capacity, ...]
    ptr: jax.Array  # i32 []: next row to write
    size: jax.Array  # i32 []: valid rows, <= capacity

    @property
    def capacity(self) -> int:
        return int(jax.tree.leaves(self.data)[0].shape[0])


def init_buffer(example: Any, capacity: int) -> ReplayBuffer:
    """An empty buffer whose rows look like ``example`` (a pytree of one row, no batch axis)."""
    data = jax.tree.map(
        lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.asarray(x).dtype), example
    )
    return ReplayBuffer(data, jnp.int32(0), jnp.int32(0))


def add(buffer: ReplayBuffer, rows: Any, count: jax.Array | None = None) -> ReplayBuffer:
    """Write ``rows`` (every leaf ``[N, ...]``, ``N <= capacity``) after the newest row.

    ``count`` (``i32[]``, may be traced): write only the first ``count`` rows (the others are
    dropped, never written); default all ``N``.
    """
    cap = buffer.capacity
    n = int(jax.tree.leaves(rows)[0].shape[0])
    if n > cap:
        raise ValueError(f"cannot add {n} rows to a replay buffer of capacity {cap}")
    arange = jnp.arange(n, dtype=jnp.int32)
    idx = (buffer.ptr + arange) % cap
    if count is None:
        data = jax.tree.map(lambda d, r: d.at[idx].set(r.astype(d.dtype)), buffer.data, rows)
        return ReplayBuffer(data, (buffer.ptr + n) % cap, jnp.minimum(buffer.size + n, cap))
    count = jnp.asarray(count, jnp.int32)
    idx = jnp.where(arange < count, idx, cap)  # out of bounds: the write is dropped
    data = jax.tree.map(
        lambda d, r: d.at[idx].set(r.astype(d.dtype), mode="drop"), buffer.data, rows
    )
    return ReplayBuffer(data, (buffer.ptr + count) % cap, jnp.minimum(buffer.size + count, cap))


def sample(buffer: ReplayBuffer, key: jax.Array, batch_size: int) -> Any:
    """``batch_size`` rows drawn uniformly (with replacement) from the valid rows.

    The buffer must hold at least one row (the trainers add a rollout before sampling).
    """
    idx = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    return jax.tree.map(lambda d: d[idx], buffer.data)
