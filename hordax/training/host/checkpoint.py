"""Checkpoints of a whole training state with orbax, and the checks that make resume safe.

A checkpoint is the complete train state (:class:`~hordax.training.core.types.TrainState`: agent
parameters, optimizer state and traced hyperparameters, batch env state with wrapper and
normalizer statistics, current observations, the run's key and the update counter) after
a whole number of chunks, so a resumed run continues the same computation bit for bit.

Layout in the run directory::

    checkpoints/<chunks done>/...   orbax's StandardCheckpointer (written to a temporary
                                    folder and renamed when complete: a kill during a
                                    write leaves the previous checkpoint loadable)
    checkpoints/meta.json           what the checkpoints are compatible with (config and
                                    the state's leaf shapes), checked before restoring,
                                    the run id of the run that wrote them and its device
                                    mesh (another one resumes with a warning: the run goes
                                    on within float tolerance, not bit for bit)

Checkpoints are bound to their run: a fresh run draws a run id, writes it into
``meta.json`` and into every checkpoint (orbax's ``custom_metadata``), and refuses a
``checkpoints/`` folder that already holds checkpoints. Resume restores the newest
checkpoint that carries the run id of ``meta.json`` and restores intact; newer ones that
belong to another run or are corrupt are skipped (one line on stderr says which and why)
and removed, so the continued run's own checkpoints replace them.

PRNG key arrays are stored as their raw ``uint32`` data and re-wrapped on restore.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hordax import strict_json
from hordax.training.host.rundir import fault_point, write_atomic

#: Config keys that must be equal for a checkpoint to continue a run (dotted paths into the
#: resolved TrainConfig as a dict). Logging, progress and checkpoint cadence may change;
#: ``trainer.num_chunks`` may not: a checkpoint counts chunks of the run's chunk size; nor
#: may the curriculum's rule and levels, which set the env the next chunks train on.
COMPAT_KEYS = ("env", "agent", "trainer", "population", "curriculum", "seed")
#: Compared only when the checkpoint records them (older hordax versions did not).
_COMPAT_IF_RECORDED = ("trainer.num_chunks",)


class CheckpointError(ValueError):
    """A checkpoint is missing, partial, corrupt or incompatible; the message says which."""


class NoCheckpointError(CheckpointError):
    """The run has no checkpoint yet (it stopped before its first one, or never wrote any)."""


#: orbax's per-checkpoint metadata file (JSON; ``custom_metadata`` holds hordax's run id).
_STEP_METADATA = "_CHECKPOINT_METADATA"


def _warn(message: str) -> None:
    print(f"hordax: warning: {message}", file=sys.stderr, flush=True)


def _drop_closed_loop_reports() -> None:
    """Silence the echo of a failed orbax restore, and nothing else.

    When orbax gives up on a damaged checkpoint it closes its event loop while tensorstore
    still has reads in flight; each of them then reports ``RuntimeError: Event loop is
    closed`` through ``sys.unraisablehook`` (dozens of tracebacks after hordax's one-line
    message). This hook drops exactly those reports and passes every other one on.
    """
    previous = sys.unraisablehook
    if getattr(previous, "hordax_filter", False):
        return

    def hook(report: Any) -> None:
        exc = report.exc_value
        if isinstance(exc, RuntimeError) and str(exc) == "Event loop is closed":
            return
        previous(report)

    hook.hordax_filter = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _is_empty(x: Any) -> bool:
    return not _is_key(x) and math.prod(x.shape) == 0


def to_saveable(tree: Any) -> Any:
    """Typed PRNG keys -> their ``uint32`` key data (orbax stores plain arrays); arrays with
    no elements (a grid env's empty rule table, ``[0, 7]``) -> one zero of their dtype, as
    orbax refuses zero-size arrays (their shape is the abstract state's on restore)."""

    def leaf(x: Any) -> Any:
        if _is_key(x):
            return jax.random.key_data(x)
        return jnp.zeros((1,), x.dtype) if _is_empty(x) else x

    return jax.tree.map(leaf, tree)


def from_saveable(tree: Any, like: Any) -> Any:
    """Inverse of :func:`to_saveable`, using ``like`` (the abstract state) to find keys and
    the shapes of the arrays with no elements."""

    def leaf(x: Any, ref: Any) -> Any:
        if _is_key(ref):
            return jax.random.wrap_key_data(x)  # the default impl, as at save time
        return x[:0].reshape(ref.shape) if _is_empty(ref) else x

    return jax.tree.map(leaf, tree, like)


def abstract_saveable(abstract_state: Any, shardings: Any | None = None) -> Any:
    """``ShapeDtypeStruct`` tree of what is stored (keys as ``uint32`` data, arrays with no
    elements as one element, replicated)."""

    def leaf(x: Any, sharding: Any = None) -> Any:
        if _is_key(x):
            data = jax.eval_shape(jax.random.key_data, x)
            return jax.ShapeDtypeStruct(data.shape, data.dtype, sharding=sharding)
        if _is_empty(x):
            if sharding is not None and hasattr(sharding, "mesh"):
                sharding = jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec())
            return jax.ShapeDtypeStruct((1,), x.dtype, sharding=sharding)
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
    return _flatten({k: cfg_dict.get(k) for k in COMPAT_KEYS})


def plain_config(cfg: Any) -> dict:
    """A typed config (a dataclass tree) as a plain JSON-able dict."""
    return json.loads(strict_json.dumps(dataclasses.asdict(cfg), default=str))


def default_config(cfg: Any) -> Any:
    """``cfg`` with every field at its class's default, keeping the class of each nested
    config (a PQN run's ``agent`` gives ``PQNConfig()``'s defaults, not PPO's). A config class
    that cannot be built without arguments keeps its values (no default known)."""
    try:
        fresh = type(cfg)()
    except TypeError:
        return cfg
    return dataclasses.replace(
        fresh,
        **{
            f.name: default_config(getattr(cfg, f.name))
            for f in dataclasses.fields(cfg)
            if f.init and _is_config(getattr(cfg, f.name))
        },
    )


def _is_config(x: Any) -> bool:
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def compat_defaults(cfg: Any) -> dict[str, Any]:
    """:func:`compat_config` of :func:`default_config`: each compared key's default."""
    return compat_config(plain_config(default_config(cfg)))


def config_changes(
    saved: dict[str, Any], now: dict[str, Any], defaults: dict[str, Any]
) -> list[tuple[str, Any, Any]]:
    """``(key, saved value, value now)`` for each flattened key that differs, ``'<absent>'``
    standing for a missing key. A key the saved config lacks is no change when its value now
    is its default: an option that hordax added after the run was saved, left as it was."""
    missing = "<absent>"
    return [
        (k, saved.get(k, missing), now.get(k, missing))
        for k in sorted(set(saved) | set(now))
        if saved.get(k, missing) != now.get(k, missing)
        and not (k not in saved and k in defaults and now[k] == defaults[k])
    ]


def committed_steps(run_dir: str) -> list[int]:
    """The committed checkpoint steps of a run, oldest first, read from the folder names alone.

    Orbax writes a checkpoint under a temporary name and renames it to the plain step number
    when it is committed, so a folder named by digits alone is whole. This needs no
    ``CheckpointManager``: a new manager stats every step folder and fails while another
    manager of the same process (one stopped by Ctrl-C mid-save) is still renaming one.
    """
    ckpt_dir = os.path.join(run_dir, "checkpoints")
    try:
        names = os.listdir(ckpt_dir)
    except FileNotFoundError:
        return []
    return sorted(int(n) for n in names if n.isdigit() and os.path.isdir(os.path.join(ckpt_dir, n)))


class Checkpointer:
    """Save and restore whole train states under ``<run_dir>/checkpoints``.

    Args:
        run_dir: the run directory.
        keep: how many of the newest checkpoints to keep (>= 1).
    """

    def __init__(self, run_dir: str, keep: int = 2):
        import orbax.checkpoint as ocp

        self.run_dir = run_dir
        self.dir = os.path.abspath(os.path.join(run_dir, "checkpoints"))
        self.meta_path = os.path.join(self.dir, "meta.json")
        self.run_id: str | None = None  # set by start() or check_compatible()
        self._ocp = ocp
        self.manager = ocp.CheckpointManager(
            self.dir,
            options=ocp.CheckpointManagerOptions(max_to_keep=int(keep), create=True),
        )

    # --- writing ------------------------------------------------------------------------
    def start(
        self, cfg: Any, abstract_state: Any, run_id: str, mesh: list[int] | None = None
    ) -> None:
        """Bind this folder to a fresh run (``cfg``: its typed config; ``mesh``: its
        ``[seed, data]`` device counts): refuse old checkpoints, write ``meta.json``."""
        old = self.all_steps()
        if old:
            raise CheckpointError(
                f"{self.dir} already holds checkpoints {old} of another run; start a fresh "
                "run in a new run directory (or remove that run first: overwrite=true)"
            )
        self.run_id = run_id
        self.write_meta(cfg, abstract_state, mesh)

    def write_meta(self, cfg: Any, abstract_state: Any, mesh: list[int] | None = None) -> None:
        meta = {
            "run_id": self.run_id,
            "config": compat_config(plain_config(cfg)),
            "leaves": leaf_signature(abstract_state),
            **({"mesh": list(mesh)} if mesh is not None else {}),
        }
        write_atomic(self.meta_path, strict_json.dumps(meta, indent=1, default=str))

    def save(self, step: int, state: Any) -> None:
        """Write the state after ``step`` chunks and wait until it is committed on disk."""
        self.manager.save(
            step,
            args=self._ocp.args.StandardSave(to_saveable(state)),
            custom_metadata={"run_id": self.run_id},
        )
        fault_point("checkpoint")  # orbax is writing in the background now
        self.manager.wait_until_finished()

    def all_steps(self) -> list[int]:
        """Committed checkpoints, oldest first."""
        self.manager.reload()
        return sorted(self.manager.all_steps())

    def latest_step(self) -> int | None:
        steps = self.all_steps()
        return steps[-1] if steps else None

    def close(self) -> None:
        self.manager.close()

    # --- reading ------------------------------------------------------------------------
    def check_compatible(
        self,
        cfg: Any,
        abstract_state: Any,
        mesh: list[int] | None = None,
        warn: Callable[[str], None] | None = _warn,
    ) -> None:
        """Raise :class:`CheckpointError` naming the first config keys (of the typed config
        ``cfg``; see :func:`config_changes`) or leaves that differ (:class:`NoCheckpointError`
        if the run has no checkpoint); take the run id. A ``mesh`` (``[seed, data]``) other
        than the recorded one is no error (a run may move to another machine) but is
        reported through ``warn``: the resumed run is not bit for bit the uninterrupted
        one."""
        if not os.path.isfile(self.meta_path):
            if not self.all_steps():
                raise NoCheckpointError(f"resume: {self.run_dir} has no checkpoint yet")
            raise CheckpointError(f"resume: {self.meta_path} is missing (not a hordax checkpoint)")
        meta = self._read_meta()
        self.run_id = meta.get("run_id")
        ours = compat_config(plain_config(cfg))
        theirs = meta.get("config", {})
        diffs = [
            f"{k}={saved!r} in the checkpoint, {now!r} now"
            for k, saved, now in config_changes(theirs, ours, compat_defaults(cfg))
            if k in theirs or k not in _COMPAT_IF_RECORDED
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
        saved = meta.get("mesh")
        if warn and mesh is not None and isinstance(saved, list) and saved != list(mesh):
            before, now = " x ".join(map(str, saved)), " x ".join(map(str, mesh))
            restore = f"mesh.seed={saved[0]} mesh.data={saved[-1]}"
            warn(
                f"resume: the checkpoint was written on a mesh of seed x data = {before} "
                f"devices, this run uses {now}: it continues the run within float tolerance, "
                f"not bit for bit ({restore} restores the layout)"
            )

    def _read_meta(self) -> dict:
        try:
            with open(self.meta_path) as f:
                meta = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CheckpointError(f"resume: {self.meta_path} is unreadable ({e})") from None
        if not isinstance(meta, dict):
            raise CheckpointError(f"resume: {self.meta_path} is not a hordax checkpoint index")
        return meta

    def step_run_id(self, step: int) -> str | None:
        """The run id stored in checkpoint ``step`` (None if it has none: older hordax)."""
        path = os.path.join(self.dir, str(step), _STEP_METADATA)
        with open(path) as f:
            return (json.load(f).get("custom_metadata") or {}).get("run_id")

    def _restore_step(self, step: int, target: Any) -> tuple[Any, str | None]:
        """``(raw state, None)`` or ``(None, why checkpoint step cannot be used)``."""
        try:
            owner = self.step_run_id(step)
        except (OSError, UnicodeDecodeError, ValueError, AttributeError) as e:
            return None, f"is corrupt or unreadable: its {_STEP_METADATA} is unreadable ({e})"
        if owner != self.run_id:
            return None, f"belongs to another run (run id {owner}, this run is {self.run_id})"
        try:
            raw = self.manager.restore(step, args=self._ocp.args.StandardRestore(target))
        except Exception as e:  # orbax raises many types for damaged files
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return None, f"is corrupt or unreadable: {first[:300]}"
        return raw, None

    def restore(
        self,
        abstract_state: Any,
        shardings: Any | None = None,
        warn: Callable[[str], None] = _warn,
    ) -> tuple[int, Any]:
        """``(chunks done, state)`` from the newest intact checkpoint of this run.

        Newer checkpoints that are corrupt or belong to another run are skipped, reported
        through ``warn`` (one line each) and deleted, so that the continued run can write
        its own checkpoints under those numbers.
        """
        steps = self.all_steps()
        if not steps:
            raise NoCheckpointError(f"resume: {self.run_dir} has no checkpoint yet")
        if self.run_id is None and os.path.isfile(self.meta_path):  # not checked first
            self.run_id = self._read_meta().get("run_id")
        target = abstract_saveable(abstract_state, shardings)
        _drop_closed_loop_reports()  # before: the reports start while orbax still raises
        skipped: list[tuple[int, str]] = []
        for step in reversed(steps):
            raw, why = self._restore_step(step, target)
            if why is None:
                break
            skipped.append((step, why))
        else:
            raise CheckpointError(
                f"resume: no intact checkpoint in {self.dir}: "
                + "; ".join(f"checkpoint {s} {why}" for s, why in skipped)
            )
        for s, why in skipped:
            warn(
                f"resume: skipped checkpoint {os.path.join(self.dir, str(s))}: it {why}; "
                f"continuing from checkpoint {step} (the skipped one is removed)"
            )
            self.manager.delete(s)
        return step, from_saveable(raw, abstract_state)
