"""A trainer's init and chunk as ``jax.jit`` programs laid out over the run's device mesh,
and the driver that runs them for the host loop (:mod:`hordax.training.host.loop`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import jax

from hordax.training.config import TrainConfig
from hordax.training.host import sharding
from hordax.training.host.checkpoint import Checkpointer
from hordax.training.host.rundir import new_run_id


@dataclasses.dataclass
class Programs:
    """The jitted programs of a run and how their state is laid out over devices."""

    mesh: Any  # jax.sharding.Mesh, axes ("seed", "data")
    abstract: Any  # ShapeDtypeStruct tree of the trainer's state
    shardings: Any  # NamedSharding tree matching ``abstract``
    init: Any  # jitted init(*init_args) -> state, laid out by ``shardings``
    init_args: tuple  # (trainer.init_key(seed),)
    chunk: Any  # jitted chunk(state) -> (state, metrics [chunk_updates] or [P, ...])


def _strongly_typed(init_fn):
    """``init_fn`` with weak-typed state leaves (e.g. an env's ``time = 0``) made strong.

    A checkpoint stores no weak types, so without this a resumed state's types differ from a
    fresh one's and ``chunk.lower(state)`` compiles a second program instead of hitting the
    persistent compilation cache. The values are unchanged (same dtype).
    """

    def strong(x):
        return jax.lax.convert_element_type(x, x.dtype) if jax.typeof(x).weak_type else x

    return lambda *args: jax.tree.map(strong, init_fn(*args))


def make_programs(cfg: TrainConfig, trainer: Any) -> Programs:
    """``trainer``'s init and one chunk of updates as ``jax.jit`` programs sharded over the
    run's mesh: the env batch split over the mesh's ``data`` axis, members (a population, a
    mixed ensemble's groups) over ``seed``, everything else replicated (see
    :mod:`hordax.training.host.sharding`)."""
    mesh = sharding.train_mesh(cfg.mesh, cfg.trainer.num_envs, trainer.seed_axis)
    init_fn = _strongly_typed(trainer.init)
    init_args = (trainer.init_key(cfg.seed),)
    abstract = jax.eval_shape(init_fn, *init_args)
    shardings = sharding.train_state_shardings(
        abstract, mesh, cfg.trainer.num_envs, trainer.member_axis
    )
    return Programs(
        mesh=mesh,
        abstract=abstract,
        shardings=shardings,
        init=jax.jit(init_fn, out_shardings=shardings),
        init_args=init_args,
        chunk=jax.jit(
            trainer.run_chunk, in_shardings=(shardings,), out_shardings=(shardings, None)
        ),
    )


class JitDriver:
    """Runs a jittable trainer for the host loop: init or restore, compile, then one
    compiled chunk per call; supports checkpoints and resume.

    Driver interface (what :func:`hordax.training.host.loop.train_and_log` calls):
    ``start(ckpt)`` -> first chunk to run, ``compile(start_chunk)``, ``chunks(start_chunk)``
    yielding ``(chunk index, host metrics)``, ``row(metrics)``, ``check_finite(metrics,
    chunk)``, ``saved()``, and ``label``, ``devices``, ``compile_s``, ``run_s``,
    ``checkpoints``, ``summary`` attributes.
    """

    checkpoints = True
    compile_s: float | None = None  # None: the host loop's time from start to compiled
    run_s: float | None = None  # None: the host loop's time of the chunks
    summary: dict = {}

    def __init__(self, cfg: TrainConfig, trainer: Any):
        self.cfg, self.trainer = cfg, trainer
        self.progs = make_programs(cfg, trainer)
        self.devices = int(self.progs.mesh.devices.size)
        self.label = trainer.label()
        self.chunk = self.progs.chunk
        self.state: Any = None

    def start(self, ckpt: Checkpointer | None, cfg: Any) -> int:
        """The first chunk to run: 0 for a fresh start (the state initialized, a fresh run
        bound to the checkpoint folder), or the restored checkpoint's chunk count."""
        progs = self.progs
        mesh = [int(n) for n in progs.mesh.devices.shape]  # [seed, data]
        if self.cfg.resume:
            assert ckpt is not None
            quiet = {} if sharding.is_primary() else {"warn": None}  # one line, process 0's
            ckpt.check_compatible(cfg, progs.abstract, mesh, **quiet)
            start_chunk, self.state = ckpt.restore(progs.abstract, progs.shardings)
            return start_chunk
        if ckpt is not None:
            # One run id for every process (process 0's); process 0 writes meta.json.
            run_id = sharding.primary_str(new_run_id())
            if sharding.is_primary():
                ckpt.start(cfg, progs.abstract, run_id, mesh)
            else:
                ckpt.run_id = run_id
        self.state = progs.init(*progs.init_args)
        return 0

    def compile(self, start_chunk: int, num_chunks: int) -> None:
        if start_chunk < num_chunks:  # a run resumed after its last chunk runs none
            self.chunk = self.chunk.lower(self.state).compile()

    def chunks(self, start_chunk: int, num_chunks: int) -> Iterator[tuple[int, Any]]:
        for c in range(start_chunk, num_chunks):
            self.state, metrics = self.chunk(self.state)
            yield c, sharding.to_host(metrics)  # blocks: timings are real

    def row(self, metrics: Any) -> dict:
        return self.trainer.chunk_row(metrics)

    def check_finite(self, metrics: Any, chunk: int) -> None:
        self.trainer.check_finite(metrics, chunk * self.trainer.resolved.chunk_updates + 1)

    def not_kept(self) -> str:
        """What the NaN guard's message says when no checkpoint was kept ('' = nothing: a
        trainer that cannot checkpoint, a mixed ensemble)."""
        if getattr(self.trainer, "checkpoints", True):
            return "no checkpoint kept (set checkpoint.every >= 1)"
        return ""

    def saved(self) -> dict:
        return sharding.to_host(self.trainer.saved_agent(self.state))
