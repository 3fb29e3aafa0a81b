"""The run directory: what marks it as holding a run, whole-or-nothing file writes, and the
fault-injection hook of the kill tests.

- A fresh run refuses a directory that already holds a run (one of :data:`RUN_FILES`);
  with ``overwrite=true`` that run's files are removed first (:func:`clear`), so two runs
  are never mixed in one directory. Files that are not a run's (a user's notes) are left.
  :func:`claim` does both for every entry point (the host loop calls it for a fresh run).
- :func:`locked` holds an exclusive lock on the directory while a run uses it: a second run
  there (a fresh one with ``overwrite=true``, a ``resume=``) is refused while the first
  trains, instead of removing its files or writing a second stream of checkpoints beside
  its. The kernel drops the lock when the process ends, however it ends.
- :func:`write_atomic` writes a file whole or not at all (temporary file + ``os.replace``):
  a run killed at any moment leaves the old file or the new one, never half of one.
- :func:`open_metrics` opens ``metrics.jsonl`` for a fresh or resumed run (rows a killed run
  logged past its last checkpoint are dropped).
- :func:`fault_point` kills the process with SIGKILL at a named phase when
  ``HORDAX_FAULT_AT=<phase>[:<n>]`` is set (the n-th time this process reaches it), so the
  fault-injection test covers every phase deterministically; ``HORDAX_FAULT_SIGNAL=SIGINT``
  sends a Ctrl-C there instead (the user's interrupt at an exact phase, with no race
  against the run finishing first). Unset, it does nothing.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import uuid
from collections.abc import Iterator
from typing import Any

#: What a run writes into its directory, in the order :func:`clear` removes it: outputs
#: first, the run's identity (``overrides.json``, ``config.yaml``) last, so a kill during
#: ``clear`` leaves a directory that still says it holds a run (and needs overwrite=true).
RUN_FILES = (
    "summary.json",
    "params.msgpack",
    "metrics.jsonl",
    "wandb",
    "checkpoints",
    "config.yaml",
    "overrides.json",
)
#: Outputs written beside a run about its agent: ``hordax backtest``'s ``backtest_<split>/``
#: and ``hordax eval``'s ``eval[_<split>][.<n>].json`` (``hordax suite`` reuses an
#: ``eval.json`` of matching settings: one of a replaced run would describe another agent).
_RUN_GLOBS = ("backtest_*", "eval.json", "eval.*.json", "eval_*.json")
_TMP = ".tmp"


class RunDirError(ValueError):
    """The run directory already holds another run; the message names it."""


def new_run_id() -> str:
    """A fresh random id that binds a run's checkpoints to it (16 hex digits)."""
    return uuid.uuid4().hex[:16]


def run_files(run_dir: str) -> list[str]:
    """Names of the run files in ``run_dir`` (empty if it holds no run or does not exist)."""
    if not os.path.isdir(run_dir):
        return []
    return [n for n in RUN_FILES if os.path.lexists(os.path.join(run_dir, n))]


#: The overrides a run was started with (written once, at a fresh start; read to resume it
#: and by ``hordax suite`` to tell its own runs).
OVERRIDES_FILE = "overrides.json"


def read_overrides(run_dir: str) -> list[str]:
    """The overrides the run in ``run_dir`` was started with; :class:`RunDirError` naming the
    file if it is missing, unreadable or not a JSON list of strings."""
    path = os.path.join(run_dir, OVERRIDES_FILE)
    if not os.path.isfile(path):
        raise RunDirError(f"no hordax run there ({path} is missing)")
    try:
        with open(path) as f:
            stored = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RunDirError(
            f"{path} is unreadable ({e}); it should be a JSON list of overrides"
        ) from None
    if not isinstance(stored, list) or not all(isinstance(o, str) for o in stored):
        raise RunDirError(f"{path} is not a JSON list of override strings")
    return stored


#: Files only a hordax run writes: one of them beside the :data:`RUN_FILES` makes them a
#: hordax run's (``config.yaml`` alone does when it is a hordax config: a run killed while
#: writing ``overrides.json``).
OWN_FILES = (
    "overrides.json",
    "metrics.jsonl",
    "params.msgpack",
    "summary.json",
    "checkpoints/meta.json",
)


def _foreign(run_dir: str, found: list[str]) -> bool:
    """Whether the run files ``found`` in ``run_dir`` are not a hordax run's (a user's own
    ``wandb/``, ``checkpoints/`` or ``config.yaml``): overwrite must not remove them."""
    if any(os.path.lexists(os.path.join(run_dir, n)) for n in OWN_FILES):
        return False
    path = os.path.join(run_dir, "config.yaml")
    if os.path.isfile(path):
        try:
            import yaml

            with open(path) as f:
                cfg = yaml.safe_load(f)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            cfg = None
        if isinstance(cfg, dict) and {"env", "agent", "trainer"} <= set(cfg):
            return False
    paths = [os.path.join(run_dir, n) for n in found]
    # an empty folder is no one's loss (a run killed before its first checkpoint's meta.json)
    return any(not (os.path.isdir(p) and not os.listdir(p)) for p in paths)


def check_free(run_dir: str, overwrite: bool, key: str = "hydra.run.dir") -> None:
    """Raise :class:`RunDirError` if ``run_dir`` holds a run and ``overwrite`` is false, or
    holds run files that no hordax run wrote (:func:`_foreign`), whatever ``overwrite``."""
    found = run_files(run_dir)
    if found and _foreign(run_dir, found):
        raise RunDirError(
            f"{key}={run_dir}: holds {', '.join(sorted(found))} that no hordax run wrote (no "
            f"{', '.join(OWN_FILES[:-1])} or {OWN_FILES[-1]} beside them); choose another "
            "directory"
        )
    if found and not overwrite:
        raise RunDirError(
            f"{key}={run_dir}: already holds a run ({', '.join(sorted(found))}); pass "
            f"overwrite=true to replace it, choose a new directory, or continue it with "
            f"resume={run_dir}"
        )


def claim(
    run_dir: str, overwrite: bool, files: dict[str, str] | None = None, key: str = "run_dir"
) -> None:
    """Make ``run_dir`` a fresh run's (created if absent): :class:`RunDirError` if it holds a
    run and ``overwrite`` is false (:func:`check_free`; ``key`` names the setting in the
    message), else that run's files are removed first (:func:`clear`); then ``files``
    (name -> text, e.g. ``config.yaml``) are written in order, each whole or not at all."""
    check_free(run_dir, overwrite, key)
    os.makedirs(run_dir, exist_ok=True)
    if overwrite:  # the old run goes first: nothing of it mixes with the new one
        clear(run_dir)
    for name, text in (files or {}).items():
        write_atomic(os.path.join(run_dir, name), text)


#: The run's identity among :data:`RUN_FILES`: removed last by :func:`clear`.
_IDENTITY = ("config.yaml", "overrides.json")


def clear(run_dir: str) -> None:
    """Remove the run files of ``run_dir`` (and their leftover temporary files, its
    evaluations and backtests); the run's identity goes last, so a kill at any point leaves
    a directory that still holds a run, never one that looks free beside the old agent's
    ``eval.json``."""
    outputs = [n for n in RUN_FILES if n not in _IDENTITY]
    paths = [os.path.join(run_dir, n) for n in outputs]
    for pattern in (*_RUN_GLOBS, *(n + _TMP for n in RUN_FILES)):
        paths += sorted(glob.glob(os.path.join(glob.escape(run_dir), pattern)))
    paths += [os.path.join(run_dir, n) for n in _IDENTITY]
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)


@contextlib.contextmanager
def locked(run_dir: str | None, create: bool = True, key: str = "run_dir") -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``run_dir`` (made first if ``create``; an absent one is
    not locked otherwise) for the ``with`` block; :class:`RunDirError` naming ``key`` if
    another process holds it. Where the file system offers no ``flock`` (some network file
    systems) or the platform has none, nothing is locked."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        fcntl = None  # type: ignore[assignment]
    if not run_dir or fcntl is None or not (create or os.path.isdir(run_dir)):
        yield
        return
    os.makedirs(run_dir, exist_ok=True)
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirError(
                f"{key}={run_dir}: in use by another process (a run there is still training); "
                "wait for it to end, or choose a new directory"
            ) from None
        except OSError:  # no flock on this file system: go on unlocked
            pass
        yield
    finally:
        os.close(fd)


def write_atomic(path: str, data: str | bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file, then os.replace).

    The fault point ``write:<file name>`` sits halfway through the temporary file, where a
    plain ``open(path, "w")`` would have left a half-written file.
    """
    raw = data.encode() if isinstance(data, str) else data
    tmp = path + _TMP
    with open(tmp, "wb") as f:
        f.write(raw[: len(raw) // 2])
        f.flush()
        fault_point(f"write:{os.path.basename(path)}")
        f.write(raw[len(raw) // 2 :])
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def fsync_dir(path: str) -> None:
    """Flush directory ``path``'s entries to disk: after ``os.replace`` the new name is in
    the kernel, and a power cut before the directory is written could still bring back
    the old file. Best effort: a file system that cannot fsync a directory is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_reached: dict[str, int] = {}


def fault_point(phase: str) -> None:
    """SIGKILL this process here if ``HORDAX_FAULT_AT`` names ``phase`` (testing hook).

    ``HORDAX_FAULT_AT=chunk:3`` kills the process the third time it reaches ``chunk``;
    ``HORDAX_FAULT_SIGNAL`` (a ``signal`` name, default ``SIGKILL``) picks another signal,
    e.g. ``SIGINT`` for a Ctrl-C at that point.
    """
    spec = os.environ.get("HORDAX_FAULT_AT")
    if not spec:
        return
    name, _, count = spec.rpartition(":") if spec[-1:].isdigit() else (spec, "", "1")
    if name != phase:
        return
    _reached[phase] = _reached.get(phase, 0) + 1
    if _reached[phase] == int(count):
        os.kill(os.getpid(), getattr(signal, os.environ.get("HORDAX_FAULT_SIGNAL", "SIGKILL")))


def open_metrics(run_dir: str | None, start_chunk: int) -> tuple[Any, dict]:
    """``(metrics.jsonl open for appending, last kept row)``; on resume, rows past the
    checkpoint are dropped (a killed run may have logged chunks it never checkpointed), and
    the last kept row stands for a run resumed after its final chunk. The kept rows are
    rewritten whole (a kill while rewriting leaves the old file)."""
    if not run_dir:
        return None, {}
    path = os.path.join(run_dir, "metrics.jsonl")
    kept: list[tuple[str, dict]] = []
    if start_chunk and os.path.isfile(path):
        with open(path) as f:
            kept = [(line, row) for line in f if (row := parse_row(line)) is not None]
        kept = [(line, row) for line, row in kept if row["chunk"] < start_chunk]
    write_atomic(path, "".join(line for line, _ in kept))
    f = open(path, "a")  # noqa: SIM115 (closed by the caller)
    return f, (kept[-1][1] if kept else {})


def parse_row(line: str) -> dict | None:
    """A whole metrics row, or None for a line a kill cut short (never checkpointed)."""
    if not line.endswith("\n"):
        return None
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    return row if isinstance(row, dict) and isinstance(row.get("chunk"), int) else None
