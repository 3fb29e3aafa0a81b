"""Checkpoint/resume and the NaN guard.

- ``hordax train`` SIGKILLed after its first checkpoint and resumed with ``resume=DIR`` ends
  with the params_checksum of an uninterrupted run (bit-exact);
- a half-written checkpoint (what a kill during a write leaves) is skipped; a corrupt,
  missing or incompatible one gives a one-line error naming what is wrong;
- a non-finite loss stops the run naming the quantity and the update, and the last good
  checkpoint stays loadable.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import hordax
from hordax.agents.ppo import PPOConfig
from hordax.envs.debug.point_mass import PointMass
from hordax.training.checkpoint import Checkpointer, CheckpointError
from hordax.training.config import (
    CheckpointConfig,
    OnPolicyTrainerConfig,
    TrainConfig,
    validate,
)
from hordax.training.on_policy import OnPolicyTrainer
from hordax.training.run import NonFiniteError, make_programs, train_and_log

# 16 chunks of one update each (a checkpoint after every one, ~0.15 s each): long enough to
# be killed mid-run (the kill follows the first checkpoint within a poll of 20 ms), short to
# finish.
N = 16
RUN = [
    "env=Debug-PointMass-v0",
    "trainer.num_envs=8",
    "trainer.rollout_length=32",
    f"trainer.total_env_steps={8 * 32 * N}",
    f"trainer.num_chunks={N}",
    "agent.num_minibatches=2",
    "agent.normalize_obs=true",
    "agent.normalize_reward=true",
    "checkpoint.every=1",
    "checkpoint.keep=2",
    "progress=false",
]


def _env():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("XLA_FLAGS", None)  # the CLI's own device setup, as a user gets it
    return env


def _cli(args, cwd, check=True, timeout=400):
    proc = subprocess.run(
        [sys.executable, "-m", "hordax.training.cli", "train", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(),
    )
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])
    return proc


def _committed_steps(run_dir: Path) -> list[int]:
    ckpt = run_dir / "checkpoints"
    if not ckpt.is_dir():
        return []
    return sorted(int(p.name) for p in ckpt.iterdir() if p.name.isdigit())


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("full")
    return _cli([*RUN, f"hydra.run.dir={cwd / 'run'}"], cwd)


def test_resume__after_sigkill_gives_the_uninterrupted_checksum(uninterrupted, tmp_path):
    """Kill -9 right after the first checkpoint, resume=DIR, same final params bit for bit."""
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "hordax.training.cli", "train", *RUN, f"hydra.run.dir={run_dir}"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    deadline = time.monotonic() + 300
    while not _committed_steps(run_dir) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (run_dir / "summary.json").exists()
    killed_at = max(_committed_steps(run_dir))
    assert 1 <= killed_at < N

    resumed = _cli([f"resume={run_dir}"], tmp_path)
    assert resumed["resumed_from_chunk"] >= killed_at
    assert resumed["params_checksum"] == uninterrupted["params_checksum"]
    assert resumed["final_return"] == pytest.approx(uninterrupted["final_return"])
    rows = [json.loads(r) for r in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["chunk"] for r in rows] == list(range(N))
    # keep=2: only the two newest checkpoints are left.
    assert _committed_steps(run_dir) == [N - 1, N]


def test_resume__skips_a_half_written_checkpoint_and_reports_damage(uninterrupted, tmp_path):
    """A checkpoint folder without orbax's commit marker is ignored; a damaged committed one
    gives one 'corrupt or unreadable' line; a missing run dir is named."""
    src = Path(uninterrupted["run_dir"])
    run_dir = tmp_path / "run"
    shutil.copytree(src, run_dir)
    ckpts = run_dir / "checkpoints"
    shutil.rmtree(ckpts / str(N))
    # What a kill during the write of checkpoint N leaves: orbax's temporary folder.
    tmp = ckpts / f"{N}.orbax-checkpoint-tmp-1"
    shutil.copytree(ckpts / str(N - 1), tmp)
    (tmp / "commit_success.txt").unlink(missing_ok=True)
    resumed = _cli([f"resume={run_dir}"], tmp_path)
    assert resumed["resumed_from_chunk"] == N - 1
    assert resumed["params_checksum"] == uninterrupted["params_checksum"]

    for f in (ckpts / str(N)).rglob("*"):
        if f.is_file() and f.stat().st_size > 64 and f.suffix != ".json":
            f.write_bytes(b"\0garbage" * 8)
    proc = _cli([f"resume={run_dir}"], tmp_path, check=False)
    err = proc.stderr.strip()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert err.startswith("hordax: error: resume: checkpoint ") and f"{N} is corrupt" in err, err
    assert len(err.splitlines()) == 1

    proc = _cli([f"resume={tmp_path / 'nope'}"], tmp_path, check=False)
    assert proc.returncode == 2 and "no hordax run there" in proc.stderr


def test_resume__incompatible_config_names_the_difference(uninterrupted):
    """Another network width or env batch is refused, naming key and both values."""
    run_dir = Path(uninterrupted["run_dir"])
    config = (run_dir / "config.yaml").read_text()
    proc = _cli(
        [f"resume={run_dir}", "agent.network.hidden_sizes=[32,32]"], run_dir.parent, check=False
    )
    assert proc.returncode == 2
    assert "agent.network.hidden_sizes=[64, 64] in the checkpoint, [32, 32] now" in proc.stderr
    assert _committed_steps(run_dir) == [N - 1, N], "a refused resume must not touch the run"
    assert (run_dir / "config.yaml").read_text() == config
    # Resuming a run whose last chunk is checkpointed reports that run's result.
    again = _cli([f"resume={run_dir}"], run_dir.parent)
    assert again["resumed_from_chunk"] == N
    assert again["params_checksum"] == uninterrupted["params_checksum"]
    assert again["final_return"] == pytest.approx(uninterrupted["final_return"])


class NaNAtTime40(PointMass):
    """PointMass whose reward is NaN on the 40th step of an episode."""

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return obs, state, jnp.where(state.time == 40, jnp.nan, reward), terminated, info


def test_nan_guard__stops_naming_quantity_and_update_keeps_last_checkpoint(tmp_path):
    """Rollouts of 16 steps: step 40 falls in update 3, so the guard names update 3 and the
    checkpoint after update 2 is the newest, and it restores."""
    env = NaNAtTime40()
    params = env.default_params.replace(max_steps_in_episode=100, goal_radius=1e-6)
    cfg = TrainConfig(
        trainer=OnPolicyTrainerConfig(
            num_envs=4, rollout_length=16, total_env_steps=4 * 16 * 6, num_chunks=6
        ),
        agent=PPOConfig(num_minibatches=2, num_epochs=1),
        checkpoint=CheckpointConfig(every=1, keep=5),
        run_dir=str(tmp_path),
        progress=False,
    )
    resolved = validate(cfg)
    with pytest.raises(NonFiniteError) as exc:
        train_and_log(cfg, env, params, resolved)
    msg = str(exc.value)
    assert msg.startswith("non-finite loss and gradient and parameters at update 3;"), msg
    assert msg.endswith(f"last good checkpoint: {tmp_path / 'checkpoints' / '2'}"), msg
    ckpt = Checkpointer(str(tmp_path))
    assert ckpt.latest_step() == 2
    progs = make_programs(
        cfg, OnPolicyTrainer(cfg.trainer, cfg.agent, env, params, resolved), resolved
    )
    step, state = ckpt.restore(progs.abstract, progs.shardings)
    assert step == 2 and int(state.update_idx) == 2
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(state.agent.params))
    ckpt.close()


def test_checkpoint__missing_meta_is_a_clear_error(tmp_path):
    """A folder that is not a hordax checkpoint is named as such."""
    env, params = hordax.make("Debug-PointMass-v0")
    ckpt = Checkpointer(str(tmp_path))
    with pytest.raises(CheckpointError, match=r"meta.json is missing \(not a hordax checkpoint\)"):
        ckpt.check_compatible({}, {})
    ckpt.close()
