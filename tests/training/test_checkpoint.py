"""Checkpoint/resume, the run directory's safety, and the NaN guard.

- fault injection: a run SIGKILLed at every phase (writing its first files, before compile,
  mid-chunk, mid-checkpoint-write, while rewriting metrics on resume, while writing the
  final files), interrupted once with SIGINT (Ctrl-C: exit 130, one line, no traceback) and
  resumed each time ends with the params, summary and metrics rows of an uninterrupted run,
  and after every interruption no file of the run is lost or half-written;
- a fresh run refuses a directory that holds a run (nothing of it is touched);
  ``overwrite=true`` replaces it without mixing; resume then continues the new run;
- resume falls back past corrupt checkpoints and checkpoints of another run (one stderr
  line each), and damage everywhere gives one error line; an incompatible config (network,
  chunking) is named; a run with no checkpoint yet says so;
- a non-finite loss stops the run naming the quantity and the update, and the last good
  checkpoint stays loadable.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
import yaml
from flax import serialization

from hordax.agents.ppo import PPOConfig
from hordax.envs.debug.point_mass import PointMass
from hordax.training.config import CheckpointConfig, TrainConfig, TrainerConfig
from hordax.training.core.report import NonFiniteError
from hordax.training.host.checkpoint import (
    Checkpointer,
    CheckpointError,
    NoCheckpointError,
    committed_steps,
    compat_defaults,
)
from hordax.training.host.loop import train_and_log
from hordax.training.host.programs import make_programs
from hordax.training.host.rundir import RunDirError
from hordax.training.trainers import make_trainer, validate

# 16 chunks of one update each with a checkpoint after every one (~0.15 s each): long
# enough to be interrupted mid-run, short to finish. A small network keeps compiles short
# (every process compiles its own program).
N = 16
RUN = [
    "env=Debug-PointMass-v0",
    "trainer.num_envs=8",
    "trainer.rollout_length=32",
    f"trainer.total_env_steps={8 * 32 * N}",
    f"trainer.num_chunks={N}",
    "agent.num_minibatches=2",
    "agent.num_epochs=1",
    "agent.network.hidden_sizes=[16]",
    "agent.normalize_obs=true",
    "agent.normalize_reward=true",
    "checkpoint.every=1",
    "checkpoint.keep=3",
    "progress=false",
]
#: Row fields that are timings (they differ between any two runs).
TIMING = ("wall_s", "sps")


def _env(fault: str | None = None, fault_signal: str | None = None):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("XLA_FLAGS", None)  # the CLI's own device setup, as a user gets it
    env.pop("HORDAX_FAULT_AT", None)
    env.pop("HORDAX_FAULT_SIGNAL", None)
    if fault:
        env["HORDAX_FAULT_AT"] = fault
    if fault_signal:
        env["HORDAX_FAULT_SIGNAL"] = fault_signal
    return env


def _cmd(args):
    return [sys.executable, "-m", "hordax.training.cli", "train", *args]


def _cli(args, cwd, check=True, timeout=400, fault=None, fault_signal=None):
    proc = subprocess.run(
        _cmd(args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env=_env(fault, fault_signal),
    )  # fmt: skip
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])
    return proc


def _killed(args, cwd, fault):
    """Run until the fault hook SIGKILLs the process at ``fault``."""
    proc = _cli(args, cwd, check=False, fault=fault)
    assert proc.returncode == -signal.SIGKILL, (fault, proc.returncode, proc.stderr[-2000:])


def _committed_steps(run_dir: Path) -> list[int]:
    ckpt = run_dir / "checkpoints"
    if not ckpt.is_dir():
        return []
    return sorted(int(p.name) for p in ckpt.iterdir() if p.name.isdigit())


def _rows(run_dir: Path) -> list[dict]:
    """metrics.jsonl rows; every line must be whole JSON."""
    text = (run_dir / "metrics.jsonl").read_text()
    assert text == "" or text.endswith("\n"), "a half-written metrics line"
    return [json.loads(line) for line in text.splitlines()]


def _untimed(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


class RunFiles:
    """What must hold after any interruption: every file of the run that exists is whole,
    and nothing the run had written (a file, a checkpoint, a metrics row) is lost."""

    def __init__(self, run_dir: Path):
        self.run_dir, self.kept, self.newest = run_dir, set(), 0

    def check(self):
        d = self.run_dir
        for name in ("overrides.json", "summary.json", "checkpoints/meta.json"):
            if (d / name).exists():
                json.loads((d / name).read_text())
        if (d / "config.yaml").exists():
            assert isinstance(yaml.safe_load((d / "config.yaml").read_text()), dict)
        if (d / "params.msgpack").exists():
            serialization.msgpack_restore((d / "params.msgpack").read_bytes())
        rows = _rows(d) if (d / "metrics.jsonl").exists() else []
        assert [r["chunk"] for r in rows] == list(range(len(rows))), "rows lost or repeated"
        steps = _committed_steps(d)
        newest = max(steps, default=0)
        assert newest >= self.newest, f"checkpoint {self.newest} was lost"
        assert len(rows) >= newest, "a checkpointed chunk has no metrics row"
        present = {
            n for n in ("config.yaml", "overrides.json", "params.msgpack") if (d / n).exists()
        }
        assert self.kept <= present, f"lost {self.kept - present}"
        self.kept, self.newest = present, newest
        return newest


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("full")
    return _cli([*RUN, f"hydra.run.dir={cwd / 'run'}"], cwd)


def _interrupted(args, cwd, fault):
    """Run until the fault hook sends SIGINT (Ctrl-C) at ``fault``: an exact phase, so the
    run cannot finish before the interrupt arrives (a poll for a new checkpoint followed by
    an outside SIGINT lost that race on a loaded machine: the run exited 0).

    The child starts with SIGINT handled, as from a terminal: a pytest started in the
    background by a script ignores SIGINT, a child inherits that, and Python then never
    raises KeyboardInterrupt (the run finishes with exit 0). A handler set here is reset to
    the default in the child by exec."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = _cli(args, cwd, check=False, fault=fault, fault_signal="SIGINT")
    finally:
        signal.signal(signal.SIGINT, old)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_fault_injection__killed_at_every_phase_and_resumed_ends_as_uninterrupted(
    uninterrupted, tmp_path
):
    """SIGKILL at each phase of a run (HORDAX_FAULT_AT) and one Ctrl-C, then what a user
    would do next (resume, or start again where there is no checkpoint yet); the run ends
    with the uninterrupted run's parameters (bit for bit), summary, metrics rows and files."""
    run_dir = tmp_path / "run"
    fresh = [*RUN, f"hydra.run.dir={run_dir}"]
    resume = [f"resume={run_dir}"]
    files = RunFiles(run_dir)

    # Killed while writing overrides.json: config.yaml is whole, overrides.json absent.
    _killed(fresh, tmp_path, "write:overrides.json")
    files.check()
    assert not (run_dir / "overrides.json").exists()
    proc = _cli(resume, tmp_path, check=False)
    assert proc.returncode == 2 and "no hordax run there" in proc.stderr, proc.stderr

    # Started again over it; killed before compiling (meta.json written, no checkpoint).
    _killed([*fresh, "overwrite=true"], tmp_path, "compile")
    files = RunFiles(run_dir)  # overwrite=true replaced the first attempt's files
    files.check()
    proc = _cli(resume, tmp_path, check=False)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert f"resume: {run_dir} has no checkpoint yet" in err, err
    restart = shlex.split(err.split("start it again with: ", 1)[1])
    assert restart[:2] == ["hordax", "train"] and "overwrite=true" in restart, restart

    # The suggested command, killed mid-write of its third checkpoint (orbax writes it
    # to a temporary folder, renamed when complete).
    _killed(restart[2:], tmp_path, "checkpoint:3")
    assert files.check() == 2
    # Killed after logging the second chunk it ran, before checkpointing it.
    _killed(resume, tmp_path, "metrics:2")
    assert files.check() == 3 and len(_rows(run_dir)) == 4
    # Killed while rewriting metrics.jsonl without the row past the checkpoint.
    _killed(resume, tmp_path, "write:metrics.jsonl")
    assert files.check() == 3 and len(_rows(run_dir)) == 4
    # Ctrl-C while orbax writes the run's second checkpoint since resuming (its 5th): a
    # clean stop with one line saying how to continue, exit 130.
    code, _, err = _interrupted(resume, tmp_path, "checkpoint:2")
    last = files.check()
    assert code == 130 and "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines() == [
        f"hordax: interrupted: last checkpoint after chunk {last}; continue with: "
        f"hordax train resume={run_dir}"
    ], err
    # Killed mid-chunk (computed, not yet logged).
    _killed(resume, tmp_path, "chunk:2")
    files.check()
    # Killed while writing the final files, each in turn.
    _killed(resume, tmp_path, "write:params.msgpack")
    assert files.check() == N and not (run_dir / "params.msgpack").exists()
    _killed(resume, tmp_path, "write:summary.json")
    assert files.check() == N and not (run_dir / "summary.json").exists()

    final = _cli(resume, tmp_path)
    files.check()
    full_dir = Path(uninterrupted["run_dir"])
    assert final["resumed_from_chunk"] == N and final["env_steps"] == uninterrupted["env_steps"]
    assert final["params_checksum"] == uninterrupted["params_checksum"]
    assert final["final_return"] == uninterrupted["final_return"]
    assert json.loads((run_dir / "summary.json").read_text()) == final
    assert (run_dir / "params.msgpack").read_bytes() == (full_dir / "params.msgpack").read_bytes()
    assert _untimed(_rows(run_dir)) == _untimed(_rows(full_dir))
    # The clock goes on over the resumes (rows: training time after compile, cumulative).
    walls = [r["wall_s"] for r in _rows(run_dir)]
    assert walls == sorted(walls) and final["wall_s"] >= walls[-1], (walls, final["wall_s"])
    assert sorted(p.name for p in run_dir.iterdir()) == sorted(p.name for p in full_dir.iterdir())
    assert not list(run_dir.rglob("*.tmp*")), "a temporary file was left behind"
    assert _committed_steps(run_dir) == [N - 2, N - 1, N]


def _digest(run_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_run_dir__reuse_is_refused_overwrite_replaces_and_resume_never_mixes(
    uninterrupted, tmp_path
):
    """Issue #18 item 1: a second fresh run in a directory holding a run is refused (the
    first run untouched, its .hydra included); with overwrite=true it replaces the first
    run wholly; resume then continues the second run, not the first."""
    run_dir = tmp_path / "run"
    shutil.copytree(uninterrupted["run_dir"], run_dir)
    before = _digest(run_dir)
    first_id = json.loads((run_dir / "checkpoints" / "meta.json").read_text())["run_id"]
    second = [
        *[a for a in RUN if not a.startswith(("trainer.total_env_steps", "trainer.num_chunks"))],
        f"trainer.total_env_steps={8 * 32 * 4}",
        "trainer.num_chunks=4",
        f"hydra.run.dir={run_dir}",
    ]
    proc = _cli(second, tmp_path, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"hordax: error: hydra.run.dir={run_dir}: already holds a run (checkpoints, "
        "config.yaml, metrics.jsonl, overrides.json, params.msgpack, summary.json); pass "
        "overwrite=true to replace it, choose a new directory, or continue it with "
        f"resume={run_dir}"
    ]
    assert _digest(run_dir) == before, "a refused run must not touch the directory"

    replaced = _cli([*second, "overwrite=true"], tmp_path)
    assert replaced["env_steps"] == 8 * 32 * 4
    assert [r["chunk"] for r in _rows(run_dir)] == [0, 1, 2, 3]
    assert _committed_steps(run_dir) == [2, 3, 4]
    meta = json.loads((run_dir / "checkpoints" / "meta.json").read_text())
    assert meta["run_id"] != first_id and meta["config"]["trainer.num_chunks"] == 4
    for step in (2, 3, 4):
        stored = json.loads(
            (run_dir / "checkpoints" / str(step) / "_CHECKPOINT_METADATA").read_text()
        )
        assert stored["custom_metadata"]["run_id"] == meta["run_id"]
    assert json.loads((run_dir / "summary.json").read_text()) == replaced
    assert "trainer.num_chunks=4" in json.loads((run_dir / "overrides.json").read_text())

    resumed = _cli([f"resume={run_dir}"], tmp_path)
    assert resumed["resumed_from_chunk"] == 4 and resumed["env_steps"] == 8 * 32 * 4
    assert resumed["params_checksum"] == replaced["params_checksum"]
    # Nothing left to run: the finished run's timings stay (no zero or negative rates).
    assert [resumed[k] for k in ("wall_s", "compile_s", "sps")] == [
        replaced[k] for k in ("wall_s", "compile_s", "sps")
    ]


def _tiny(run_dir: Path, seed: int, **kw) -> TrainConfig:
    """Two chunks of one PPO update on PointMass (~1 s to compile and run)."""
    cfg = TrainConfig(
        trainer=TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=64, num_chunks=2),
        agent=PPOConfig(num_minibatches=1, num_epochs=1, normalize_obs=True),
        seed=seed,
        run_dir=str(run_dir),
        progress=False,
        **kw,
    )
    cfg.env.id = "Debug-PointMass-v0"
    return cfg


def _tiny_env():
    env = PointMass()
    return env, env.default_params.replace(max_steps_in_episode=6)


@pytest.mark.timeout(300)
def test_train_and_log__refuses_a_finished_run_overwrite_replaces_resume_continues(tmp_path):
    """The host loop itself (not only the CLI) claims a fresh run's directory: a second run
    into a finished one (checkpoint.every=0: no checkpoint guard) is refused naming the
    directory and overwrite=true, nothing touched; with overwrite the first run's files go
    (its config.yaml too: nothing mixed; ``files`` are the new run's), a user's file stays;
    resume continues the new run."""
    run_dir = tmp_path / "run"
    env, params = _tiny_env()

    def train(cfg, files=None):
        kw = {"files": files} if files else {}
        return train_and_log(cfg, env, params, validate(cfg), **kw)

    run_dir.mkdir()
    first = train(_tiny(run_dir, 0))
    (run_dir / "config.yaml").write_text("seed: 0\n")  # as the CLI leaves it
    (run_dir / "notes.txt").write_text("mine")
    before = _digest(run_dir)
    with pytest.raises(RunDirError) as exc:
        train(_tiny(run_dir, 1))
    assert str(exc.value) == (
        f"run_dir={run_dir}: already holds a run (config.yaml, metrics.jsonl, params.msgpack, "
        "summary.json); pass overwrite=true to replace it, choose a new directory, or "
        f"continue it with resume={run_dir}"
    )
    assert _digest(run_dir) == before, "a refused run must not touch the directory"

    ckpt = CheckpointConfig(every=1, keep=2)
    files = {"config.yaml": "seed: 1\n", "overrides.json": '["seed=1"]'}
    second = train(_tiny(run_dir, 1, overwrite=True, checkpoint=ckpt), files)
    assert second["params_checksum"] != first["params_checksum"]
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "checkpoints", "config.yaml", "metrics.jsonl", "notes.txt", "overrides.json",
        "params.msgpack", "summary.json",
    ]  # fmt: skip
    assert (run_dir / "config.yaml").read_text() == "seed: 1\n"
    assert json.loads((run_dir / "summary.json").read_text()) == second

    shutil.rmtree(run_dir / "checkpoints" / "2")  # as if stopped after chunk 1's checkpoint
    resumed = train(_tiny(run_dir, 1, resume=str(run_dir), checkpoint=ckpt))
    assert resumed["resumed_from_chunk"] == 1 and resumed["sps"] > 0
    assert resumed["params_checksum"] == second["params_checksum"]
    assert [r["chunk"] for r in _rows(run_dir)] == [0, 1]
    assert (run_dir / "config.yaml").read_text() == "seed: 1\n"  # kept by the resume


@pytest.mark.timeout(300)
def test_train_and_log__a_run_directory_in_use_by_another_process_is_refused(tmp_path):
    """While a run trains in a directory (it holds a lock on it), a second run there is
    refused, nothing touched: ``overwrite=true`` would have removed the running run's files
    under it and ``resume=`` written a second stream of checkpoints and rows beside its; the
    lock goes with the run (the next one takes the directory)."""
    import fcntl

    run_dir = tmp_path / "run"
    env, params = _tiny_env()
    ckpt = CheckpointConfig(every=1, keep=2)

    def train(cfg):
        return train_and_log(cfg, env, params, validate(cfg))

    train(_tiny(run_dir, 0, checkpoint=ckpt))
    before = _digest(run_dir)
    fd = os.open(run_dir, os.O_RDONLY)  # the run of another process, still training
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for kw in ({"overwrite": True}, {"resume": str(run_dir)}):
            with pytest.raises(RunDirError, match=rf"^run_dir={run_dir}: in use by another"):
                train(_tiny(run_dir, 1 if kw.get("overwrite") else 0, checkpoint=ckpt, **kw))
            assert _digest(run_dir) == before, kw
    finally:
        os.close(fd)
    again = train(_tiny(run_dir, 0, checkpoint=ckpt, resume=str(run_dir)))
    assert again["resumed_from_chunk"] == 2


@pytest.mark.timeout(300)
def test_resume__continues_the_runs_wandb_run(tmp_path):
    """``logger=wandb``: a resumed run logs to the W&B run of the run it continues (the
    checkpoints' run id); it started a second W&B run, so one training run showed up as two,
    the first with the rows past its checkpoint that the resume computed again."""
    from hordax.training.config import LoggerConfig

    run_dir = tmp_path / "run"
    env, params = _tiny_env()
    ckpt = CheckpointConfig(every=1, keep=2)
    logger = LoggerConfig(name="wandb", mode="offline")

    def train(**kw):
        cfg = _tiny(run_dir, 0, checkpoint=ckpt, logger=logger, **kw)
        return train_and_log(cfg, env, params, validate(cfg))

    train()
    shutil.rmtree(run_dir / "checkpoints" / "2")  # as if killed after chunk 1's checkpoint
    train(resume=str(run_dir))
    runs = sorted(p.name for p in (run_dir / "wandb").glob("offline-run-*"))
    run_id = json.loads((run_dir / "checkpoints" / "meta.json").read_text())["run_id"]
    assert len(runs) == 2 and all(r.split("-")[3] == run_id for r in runs), runs


@pytest.mark.timeout(300)
def test_resume__on_another_device_layout_says_it_is_not_bit_for_bit(tmp_path, capsys):
    """A checkpoint written with the env batch over 2 devices, resumed over 1 (another
    machine, or ``mesh=auto`` with another core count): the run goes on, but its reductions
    run in another order, so it does not end with the uninterrupted run's checksum, which
    README promises; it said nothing. One stderr line now names both layouts."""
    from hordax.training.config import MeshConfig

    run_dir = tmp_path / "run"
    env, params = _tiny_env()
    ckpt = CheckpointConfig(every=1, keep=2)

    def train(data, **kw):
        mesh = MeshConfig(data=data, min_envs_per_device=1)
        cfg = _tiny(run_dir, 0, checkpoint=ckpt, mesh=mesh, **kw)
        return train_and_log(cfg, env, params, validate(cfg))

    train(2)
    capsys.readouterr()
    shutil.rmtree(run_dir / "checkpoints" / "2")
    train(2, resume=str(run_dir))
    assert capsys.readouterr().err == ""
    shutil.rmtree(run_dir / "checkpoints" / "2")
    train(1, resume=str(run_dir))
    assert capsys.readouterr().err.strip() == (
        "hordax: warning: resume: the checkpoint was written on a mesh of seed x data = 1 x 2"
        " devices, this run uses 1 x 1: it continues the run within float tolerance, not bit"
        " for bit (mesh.seed=1 mesh.data=2 restores the layout)"
    )


@pytest.mark.timeout(300)
def test_resume_after_the_last_chunk__keeps_the_finished_runs_timings(tmp_path):
    """A resume with nothing left to run trains nothing in its process: a finished run keeps
    its summary's wall_s, compile_s and sps (not 0.0 and the new process's compile);
    stopped while writing its final files (no summary.json), its last row's rate."""
    run_dir = tmp_path / "run"
    env, params = _tiny_env()
    ckpt = CheckpointConfig(every=1, keep=2)

    def train(**kw):
        cfg = _tiny(run_dir, 0, checkpoint=ckpt, **kw)
        return train_and_log(cfg, env, params, validate(cfg))

    done = train()
    again = train(resume=str(run_dir))
    assert again["resumed_from_chunk"] == 2
    assert again["params_checksum"] == done["params_checksum"]
    timings = ("wall_s", "compile_s", "sps")
    assert {k: again[k] for k in timings} == {k: done[k] for k in timings}
    assert json.loads((run_dir / "summary.json").read_text()) == again
    (run_dir / "summary.json").unlink()
    last = train(resume=str(run_dir))
    assert last["sps"] == round(_rows(run_dir)[-1]["sps"], 1) > 0


def _set_run_id(step_dir: Path, run_id: str) -> None:
    path = step_dir / "_CHECKPOINT_METADATA"
    meta = json.loads(path.read_text())
    meta["custom_metadata"] = {"run_id": run_id}
    path.write_text(json.dumps(meta))


def _cut_to_half(step_dir: Path) -> None:
    """What a disk-full or a copy cut short leaves: every array data file at half size."""
    for f in step_dir.rglob("*"):
        if f.is_file() and f.parent.name == "d":
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_resume__falls_back_past_corrupt_and_foreign_checkpoints(uninterrupted, tmp_path):
    """Checkpoint N cut to half size and N-1 of another run: resume says so (one stderr line
    each, no traceback), continues from N-2 and ends bit-exact; all three damaged: one error
    line, exit 2."""
    run_dir = tmp_path / "run"
    shutil.copytree(uninterrupted["run_dir"], run_dir)
    ckpts = run_dir / "checkpoints"
    _cut_to_half(ckpts / str(N))
    _set_run_id(ckpts / str(N - 1), "0123456789abcdef")
    proc = _cli([f"resume={run_dir}"], tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    resumed = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert lines[0].startswith(f"hordax: warning: resume: skipped checkpoint {ckpts / str(N)}: ")
    assert "it is corrupt or unreadable: " in lines[0]
    assert lines[1].startswith(
        f"hordax: warning: resume: skipped checkpoint {ckpts / str(N - 1)}: it belongs to "
        "another run (run id 0123456789abcdef, this run is "
    )
    assert all(
        line.endswith(f"continuing from checkpoint {N - 2} (the skipped one is removed)")
        for line in lines
    )
    assert resumed["resumed_from_chunk"] == N - 2
    assert resumed["params_checksum"] == uninterrupted["params_checksum"]
    assert _untimed(_rows(run_dir)) == _untimed(_rows(Path(uninterrupted["run_dir"])))
    assert _committed_steps(run_dir) == [N - 2, N - 1, N]  # rewritten by this run

    for step in (N - 2, N - 1, N):
        _cut_to_half(ckpts / str(step))
    proc = _cli([f"resume={run_dir}"], tmp_path, check=False)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err[-3000:]
    assert err.startswith(f"hordax: error: resume: no intact checkpoint in {ckpts}: ")
    assert all(f"checkpoint {s} is corrupt or unreadable" in err for s in (N - 2, N - 1, N))


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_resume__incompatible_config_names_the_difference(uninterrupted):
    """Another network width, chunking or curriculum is refused, naming key and both values; a
    key the checkpoint lacks (an option added since) is no change while at its default."""
    run_dir = Path(uninterrupted["run_dir"])
    config = (run_dir / "config.yaml").read_text()
    for override, named in [
        ("agent.network.hidden_sizes=[32,32]", "agent.network.hidden_sizes=[16] in the "
         "checkpoint, [32, 32] now"),
        ("trainer.num_chunks=4", f"trainer.num_chunks={N} in the checkpoint, 4 now"),
        ("curriculum.max_level=8", "curriculum.max_level=16 in the checkpoint, 8 now"),
    ]:  # fmt: skip
        proc = _cli([f"resume={run_dir}", override], run_dir.parent, check=False)
        assert proc.returncode == 2 and named in proc.stderr, proc.stderr[-2000:]
    # A checkpoint of an older hordax lacks the options added since: one at its default now
    # is no change, one set away from its default is still named.
    meta_path = run_dir / "checkpoints" / "meta.json"
    meta_text = meta_path.read_text()
    saved = json.loads(meta_text)["config"]
    defaults = compat_defaults(TrainConfig(agent=PPOConfig()))
    at_default = next(
        k for k in sorted(saved) if k.startswith("agent.") and saved[k] == defaults.get(k)
    )
    off_default = "agent.network.hidden_sizes"
    assert saved[off_default] != defaults[off_default]
    for dropped in (off_default, at_default):
        meta = json.loads(meta_text)
        del meta["config"][dropped]
        meta_path.write_text(json.dumps(meta))
        if dropped == off_default:
            proc = _cli([f"resume={run_dir}"], run_dir.parent, check=False)
            named = f"{off_default}='<absent>' in the checkpoint, [16] now"
            assert proc.returncode == 2 and named in proc.stderr, proc.stderr[-2000:]
    assert _committed_steps(run_dir) == [N - 2, N - 1, N], "a refused resume must not touch the run"
    assert (run_dir / "config.yaml").read_text() == config
    # Resuming a run whose last chunk is checkpointed reports that run's result (its
    # checkpoint lacking `at_default`).
    again = _cli([f"resume={run_dir}"], run_dir.parent)
    assert again["resumed_from_chunk"] == N
    assert again["params_checksum"] == uninterrupted["params_checksum"]
    assert again["final_return"] == pytest.approx(uninterrupted["final_return"])


@pytest.mark.timeout(120)
@pytest.mark.timeout(60)
def test_committed_steps__reads_whole_steps_only_while_a_save_is_in_flight(tmp_path):
    """What Ctrl-C's message names: digit folders only (orbax's temporary folder of a save in
    flight and other files are not steps), with no orbax manager opened on the folder."""
    assert committed_steps(str(tmp_path)) == []
    ckpt = tmp_path / "checkpoints"
    for name in ["10", "2", "3.orbax-checkpoint-tmp-1700000000"]:
        (ckpt / name).mkdir(parents=True)
    (ckpt / "meta.json").write_text("{}")
    (ckpt / "7").write_text("a file, not a step")
    assert committed_steps(str(tmp_path)) == [2, 10]


def test_resume__corrupt_overrides_json_is_one_line(tmp_path, capsys):
    """Issue #18 item 4: a corrupt overrides.json is named in one line, exit 2."""
    from hordax.training.cli import resume_overrides

    (tmp_path / "overrides.json").write_text('["env=CartPole-v1", ')
    with pytest.raises(SystemExit) as exc:
        resume_overrides([f"resume={tmp_path}"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1
    assert err.startswith(
        f"hordax: error: resume={tmp_path}: {tmp_path / 'overrides.json'} is unreadable"
    )
    (tmp_path / "overrides.json").write_text('{"env": 1}')
    with pytest.raises(SystemExit):
        resume_overrides([f"resume={tmp_path}"])
    assert "is not a JSON list of override strings" in capsys.readouterr().err


class NaNAtTime40(PointMass):
    """PointMass whose reward is NaN on the 40th step of an episode."""

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return obs, state, jnp.where(state.time == 40, jnp.nan, reward), terminated, info


def _nan_run(tmp_path, num_chunks: int):
    """NaNAtTime40 and a 6-update PPO run in ``num_chunks`` chunks, checkpointing each."""
    env = NaNAtTime40()
    params = env.default_params.replace(max_steps_in_episode=100, goal_radius=1e-6)
    cfg = TrainConfig(
        trainer=TrainerConfig(
            num_envs=4, rollout_length=16, total_env_steps=4 * 16 * 6, num_chunks=num_chunks
        ),
        agent=PPOConfig(num_minibatches=2, num_epochs=1),
        checkpoint=CheckpointConfig(every=1, keep=5),
        run_dir=str(tmp_path),
        progress=False,
    )
    return env, params, cfg


@pytest.mark.timeout(300)
def test_nan_guard__before_the_first_checkpoint_does_not_ask_to_enable_them(tmp_path):
    """checkpoint.every=1, NaN in the first chunk (update 3 of 3): "no checkpoint kept yet";
    it said "(set checkpoint.every >= 1)", already set."""
    env, params, cfg = _nan_run(tmp_path, num_chunks=2)
    with pytest.raises(NonFiniteError) as exc:
        train_and_log(cfg, env, params, validate(cfg))
    msg = str(exc.value)
    assert msg.startswith("non-finite loss and gradient and parameters at update 3;"), msg
    assert msg.endswith(
        "no checkpoint kept yet (checkpoint.every=1: the first is written after chunk 1 of 2)"
    ), msg


@pytest.mark.timeout(600)
def test_nan_guard__stops_naming_quantity_and_update_keeps_last_checkpoint(tmp_path):
    """Rollouts of 16 steps: step 40 falls in update 3, so the guard names update 3 and the
    checkpoint after update 2 is the newest, and it restores."""
    env, params, cfg = _nan_run(tmp_path, num_chunks=6)
    resolved = validate(cfg)
    with pytest.raises(NonFiniteError) as exc:
        train_and_log(cfg, env, params, resolved)
    msg = str(exc.value)
    assert msg.startswith("non-finite loss and gradient and parameters at update 3;"), msg
    assert msg.endswith(f"last good checkpoint: {tmp_path / 'checkpoints' / '2'}"), msg
    ckpt = Checkpointer(str(tmp_path))
    assert ckpt.latest_step() == 2
    progs = make_programs(cfg, make_trainer(cfg, env, params, resolved))
    step, state = ckpt.restore(progs.abstract, progs.shardings)
    assert step == 2 and int(state.update_idx) == 2
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(state.agent.params))
    ckpt.close()


@pytest.mark.timeout(120)
def test_checkpoint__no_checkpoint_yet_and_foreign_checkpoints_are_named(tmp_path):
    """A run with no checkpoint says so; a fresh start refuses another run's checkpoints."""
    ckpt = Checkpointer(str(tmp_path))
    with pytest.raises(NoCheckpointError, match=r"has no checkpoint yet"):
        ckpt.check_compatible(TrainConfig(), {})
    ckpt.start(TrainConfig(), {}, "aaaa")
    ckpt.save(1, {"x": jnp.arange(3)})
    assert ckpt.step_run_id(1) == "aaaa"
    ckpt.close()
    again = Checkpointer(str(tmp_path))
    with pytest.raises(CheckpointError, match=r"already holds checkpoints \[1\] of another run"):
        again.start(TrainConfig(), {}, "bbbb")
    again.close()


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_checkpoint__state_with_empty_arrays_saves_and_resumes(tmp_path):
    """A grid env's state holds an array with no elements (DoorKey's rule table, [0, 7]),
    which orbax refuses to save: every checkpointed DoorKey run died at its first
    checkpoint ("Cannot save arrays with zero size"). It now saves, and a run resumed from
    its chunk-3 checkpoint ends with the uninterrupted run's params."""
    run_dir = tmp_path / "dk"
    args = [
        "env=Grid-DoorKey-8x8-v0", "trainer.num_envs=8", "trainer.rollout_length=16",
        "trainer.total_env_steps=512", "trainer.num_chunks=4", "checkpoint.every=1",
        "eval.episodes=0", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    whole = _cli(args, tmp_path)
    for name in ("summary.json", "params.msgpack"):
        (run_dir / name).unlink()
    shutil.rmtree(run_dir / "checkpoints" / "4")
    again = _cli([f"resume={run_dir}"], tmp_path)
    assert again["resumed_from_chunk"] == 3
    assert again["params_checksum"] == whole["params_checksum"]
