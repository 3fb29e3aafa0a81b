"""Checkpoints of a whole training state with orbax, and the checks that make resume safe.

A checkpoint is the complete :class:`~hordax.training.on_policy.TrainState` (agent
parameters, optimizer state and traced hyperparameters, batch env state with wrapper and
normalizer statistics, current observations, the run's key and the update counter) after
a whole number of chunks, so a resumed run continues the same computation bit for bit.

Layout in the run directory::

    checkpoints/<chunks done>/...   orbax's StandardCheckpointer (written to a temporary
                                    folder and renamed when complete: a kill during a
                                    write leaves the previous checkpoint loadable)
    checkpoints/meta.json           what the checkpoints are compatible with (config and
                                    the state's leaf shapes), checked before restoring

PRNG key arrays are stored as their raw ``uint32`` data and re-wrapped on restore.
"""

from __future__ import annotations

import json
import os
from typing import Any

import jax
import numpy as np

#: Config keys that must be equal for a checkpoint to continue a run (dotted paths into the
#: resolved TrainConfig as a dict). Logging, progress and checkpoint cadence may change.
COMPAT_KEYS = ("env", "agent", "trainer", "population", "seed")


class CheckpointError(ValueError):
    """A checkpoint is missing, partial, corrupt or incompatible; the message says which."""


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def to_saveable(tree: Any) -> Any:
    """Typed PRNG keys -> their ``uint32`` key data (orbax stores plain arrays)."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def from_saveable(tree: Any, like: Any) -> Any:
    """Inverse of :func:`to_saveable`, using ``like`` (the abstract state) to find keys."""
    return jax.tree.map(
        lambda x, ref: (
            jax.random.wrap_key_data(x)  # the default impl, as at save time
            if _is_key(ref)
            else x
        ),
        tree,
        like,
    )


def abstract_saveable(abstract_state: Any, shardings: Any | None = None) -> Any:
    """``ShapeDtypeStruct`` tree of what is stored (keys as ``uint32`` data)."""

    def leaf(x: Any, sharding: Any = None) -> Any:
        if _is_key(x):
            data = jax.eval_shape(jax.random.key_data, x)
            return jax.ShapeDtypeStruct(data.shape, data.dtype, sharding=sharding)
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)

    if shardings is None:
        return jax.tree.map(leaf, abstract_state)
    return jax.tree.map(leaf, abstract_state, shardings)


def leaf_signature(abstract_state: Any) -> dict[str, str]:
    """``{leaf path: "dtype[shape]"}`` of a state, to name what differs on resume."""
    flat, _ = jax.tree_util.tree_flatten_with_path(abstract_state)
    return {
        jax.tree_util.keystr(path): f"{np.dtype(x.dtype) if not _is_key(x) else 'key'}"
        f"{list(x.shape)}"
        for path, x in flat
    }


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: d}


def compat_config(cfg_dict: dict) -> dict[str, Any]:
    """The part of a config (as a plain dict) that a checkpoint must agree with, flattened."""
    flat = _flatten({k: cfg_dict.get(k) for k in COMPAT_KEYS})
    return {k: v for k, v in flat.items() if not k.startswith("trainer.num_chunks")}


class Checkpointer:
    """Save and restore whole train states under ``<run_dir>/checkpoints``.

    Args:
        run_dir: the run directory.
        keep: how many of the newest checkpoints to keep (>= 1).
    """

    def __init__(self, run_dir: str, keep: int = 2):
        import orbax.checkpoint as ocp

        self.dir = os.path.abspath(os.path.join(run_dir, "checkpoints"))
        self.meta_path = os.path.join(self.dir, "meta.json")
        self._ocp = ocp
        self.manager = ocp.CheckpointManager(
            self.dir,
            options=ocp.CheckpointManagerOptions(max_to_keep=int(keep), create=True),
        )

    # --- writing ------------------------------------------------------------------------
    def write_meta(self, cfg_dict: dict, abstract_state: Any) -> None:
        meta = {"config": compat_config(cfg_dict), "leaves": leaf_signature(abstract_state)}
        tmp = self.meta_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(meta, f, indent=1, default=str)
        os.replace(tmp, self.meta_path)

    def save(self, step: int, state: Any) -> None:
        """Write the state after ``step`` chunks and wait until it is committed on disk."""
        self.manager.save(step, args=self._ocp.args.StandardSave(to_saveable(state)))
        self.manager.wait_until_finished()

    def latest_step(self) -> int | None:
        self.manager.reload()
        return self.manager.latest_step()

    def close(self) -> None:
        self.manager.close()

    # --- reading ------------------------------------------------------------------------
    def check_compatible(self, cfg_dict: dict, abstract_state: Any) -> None:
        """Raise :class:`CheckpointError` naming the first config keys or leaves that differ."""
        if not os.path.isfile(self.meta_path):
            raise CheckpointError(f"resume: {self.meta_path} is missing (not a hordax checkpoint)")
        try:
            with open(self.meta_path) as f:
                meta = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise CheckpointError(f"resume: {self.meta_path} is unreadable ({e})") from None
        ours = json.loads(json.dumps(compat_config(cfg_dict), default=str))
        theirs = meta.get("config", {})
        diffs = [
            f"{k}={theirs.get(k, '<absent>')!r} in the checkpoint, {ours.get(k, '<absent>')!r} now"
            for k in sorted(set(ours) | set(theirs))
            if ours.get(k) != theirs.get(k)
        ]
        if diffs:
            raise CheckpointError(
                f"resume: checkpoint in {self.dir} is incompatible with this config: "
                + "; ".join(diffs[:5])
                + (f" (and {len(diffs) - 5} more)" if len(diffs) > 5 else "")
            )
        leaves, stored = leaf_signature(abstract_state), meta.get("leaves", {})
        diffs = [
            f"{k}: {stored.get(k, '<absent>')} in the checkpoint, {leaves.get(k, '<absent>')} now"
            for k in sorted(set(leaves) | set(stored))
            if leaves.get(k) != stored.get(k)
        ]
        if diffs:
            raise CheckpointError(
                f"resume: checkpoint in {self.dir} holds a state of another shape: "
                + "; ".join(diffs[:5])
            )

    def restore(self, abstract_state: Any, shardings: Any | None = None) -> tuple[int, Any]:
        """``(chunks done, state)`` from the newest complete checkpoint."""
        step = self.latest_step()
        if step is None:
            raise CheckpointError(f"resume: no complete checkpoint in {self.dir}")
        target = abstract_saveable(abstract_state, shardings)
        try:
            raw = self.manager.restore(step, args=self._ocp.args.StandardRestore(target))
        except Exception as e:  # orbax raises many types for damaged files
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise CheckpointError(
                f"resume: checkpoint {os.path.join(self.dir, str(step))} is corrupt or "
                f"unreadable: {first[:300]}"
            ) from None
        return step, from_saveable(raw, abstract_state)
