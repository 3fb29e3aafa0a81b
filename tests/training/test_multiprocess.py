"""`hordax train distributed=true` with two processes on localhost (JAX's multi-controller
runtime, CPU collectives over gloo), 2 host devices each.

- the 2-process run equals the 1-process run on 4 host devices (same mesh: the env batch
  over 4 devices): final params and per-chunk losses within float tolerance; both processes
  end with the same params checksum; process 0 alone writes the one run directory;
- every process holds part of the mesh (fake devices: the mesh takes the same number of
  devices from each process, also when the data axis is trimmed);
- a 2-process run resumed from its first checkpoint ends with the uninterrupted checksum;
- agent=ensemble over several processes is refused with a one-line error.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from flax import serialization

from hordax.training.host import sharding

# 8 envs over 4 devices, 4 updates of 128 steps in 2 chunks, a small network: compile-bound.
ARGS = [
    "env=CartPole-v1",
    "trainer.num_envs=8",
    "trainer.rollout_length=16",
    "trainer.total_env_steps=512",
    "trainer.num_chunks=2",
    "agent.num_epochs=1",
    "agent.network.hidden_sizes=[16]",
    "mesh.data=4",
    "progress=false",
    "seed=5",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(devices: int, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env.update(XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", **extra)
    return env


def _summary(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def _two_processes(args: list[str], cwd: Path, timeout: float = 400) -> list[dict]:
    """Both processes' JSON summaries; a failure or a hang kills both (a process left alone
    would wait at the next collective)."""
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "hordax.training.cli", "train", "distributed=true", *args],
            cwd=cwd,
            env=_env(
                2,
                JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
                JAX_NUM_PROCESSES="2",
                JAX_PROCESS_ID=str(i),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=timeout))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for i, (p, (out, err)) in enumerate(zip(procs, outs, strict=True)):
        assert p.returncode == 0, f"process {i}:\n{out[-1500:]}\n{err[-3000:]}"
    return [_summary(out) for out, _ in outs]


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("two")
    return _two_processes([*ARGS, "checkpoint.every=1"], cwd), cwd


@pytest.fixture(scope="module")
def one_process_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("one")
    proc = subprocess.run(
        [sys.executable, "-m", "hordax.training.cli", "train", *ARGS],
        cwd=cwd,
        env=_env(4),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return _summary(proc.stdout)


def _params(run_dir: str) -> dict:
    return serialization.msgpack_restore(Path(run_dir, "params.msgpack").read_bytes())


def _rows(run_dir: str) -> list[dict]:
    return [json.loads(r) for r in Path(run_dir, "metrics.jsonl").read_text().splitlines()]


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_two_processes__equal_the_one_process_4_device_run(two_process_run, one_process_run):
    (s0, s1), cwd = two_process_run
    one = one_process_run
    assert (s0["processes"], s0["devices"], one["processes"], one["devices"]) == (2, 4, 1, 4)
    timed = ("wall_s", "compile_s", "sps")  # differ between processes; all else is equal
    untimed = lambda s: {  # noqa: E731
        **{k: v for k, v in s.items() if k not in timed},
        "eval": {k: v for k, v in s["eval"].items() if k not in timed},
    }
    assert untimed(s0) == untimed(s1)
    # Process 0 wrote the run directory; process 1's hydra wrote nothing (its own, empty
    # directory, if it named another timestamp, is gone).
    assert [p.name for p in (cwd / "runs" / "CartPole-v1" / "ppo").iterdir()] == [
        Path(s0["run_dir"]).name
    ]
    assert {"config.yaml", "metrics.jsonl", "params.msgpack", "summary.json", "checkpoints"} <= {
        p.name for p in Path(s0["run_dir"]).iterdir()
    }
    ours, ref = _params(s0["run_dir"]), _params(one["run_dir"])
    flat_ours = dict(_flat(ours))
    assert flat_ours.keys() == dict(_flat(ref)).keys()
    for name, b in _flat(ref):
        np.testing.assert_allclose(flat_ours[name], b, rtol=1e-4, atol=1e-6, err_msg=name)
    rows, ref_rows = _rows(s0["run_dir"]), _rows(one["run_dir"])
    assert [r["chunk"] for r in rows] == [r["chunk"] for r in ref_rows] == [0, 1]
    for r, q in zip(rows, ref_rows, strict=True):
        for key in ("loss", "value_loss", "entropy", "episode_return", "episodes"):
            assert r[key] == pytest.approx(q[key], rel=1e-4, abs=1e-6), key
    assert s0["final_return"] == pytest.approx(one["final_return"], rel=1e-5)


def _flat(tree, prefix=""):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _flat(v, f"{prefix}/{k}")
    else:
        yield prefix, np.asarray(tree)


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_two_processes__resume_from_a_checkpoint_gives_the_same_checksum(two_process_run, tmp_path):
    """Both processes restore their shards of checkpoint 1 and finish bit for bit."""
    (s0, _), _ = two_process_run
    run_dir = tmp_path / "run"
    shutil.copytree(s0["run_dir"], run_dir)
    shutil.rmtree(run_dir / "checkpoints" / "2")  # as if killed before the last checkpoint
    resumed = _two_processes([f"resume={run_dir}"], tmp_path)
    for r in resumed:
        assert r["resumed_from_chunk"] == 1 and r["run_dir"] == str(run_dir)
        assert r["params_checksum"] == s0["params_checksum"]
    assert [r["chunk"] for r in _rows(str(run_dir))] == [0, 1]


class _FakeDevice:
    def __init__(self, i: int, process: int):
        self.id, self.process_index = i, process

    def __repr__(self) -> str:
        return f"p{self.process_index}d{self.id}"


def _fake_mesh(grid):
    from jax.sharding import Mesh

    arr = np.empty(len(grid) * len(grid[0]), dtype=object)
    arr[:] = [d for row in grid for d in row]
    return Mesh(arr.reshape(len(grid), len(grid[0])), (sharding.SEED_AXIS, sharding.DATA_AXIS))


def test_mesh__every_process_holds_the_same_share():
    """2 processes x 4 devices: meshes take the first devices of each process; a trimmed
    data axis keeps both processes; shapes that cannot be shared evenly are refused."""
    devs = [_FakeDevice(i, i // 4) for i in range(8)]
    names = lambda grid: [[repr(d) for d in row] for row in grid]  # noqa: E731
    assert names(sharding._device_grid(devs, 1, 4)) == [["p0d0", "p0d1", "p1d4", "p1d5"]]
    # A population over 2 processes: each process holds whole rows (members).
    assert names(sharding._device_grid(devs, 2, 2)) == [["p0d0", "p0d1"], ["p1d4", "p1d5"]]
    with pytest.raises(ValueError, match=r"mesh.seed \* mesh.data = 3 \* 1: a run over 2 proc"):
        sharding._device_grid(devs, 3, 1)
    with pytest.raises(ValueError, match=r"at most 4 from each process"):
        sharding._device_grid(devs, 1, 10)
    full = _fake_mesh([devs])
    # 8 envs, >= 128 per device wanted: the fewest devices that keep both processes in.
    assert names(sharding.fit_data_axis(full, 8, 128).devices) == [["p0d0", "p1d4"]]
    assert names(sharding.fit_data_axis(full, 12, 1).devices) == [
        ["p0d0", "p0d1", "p0d2", "p1d4", "p1d5", "p1d6"]
    ]
    with pytest.raises(ValueError, match=r"trainer.num_envs=3: a run over 2 processes"):
        sharding.fit_data_axis(full, 3, 1)
    one_process = _fake_mesh([[_FakeDevice(i, 0) for i in range(8)]])
    assert names(sharding.fit_data_axis(one_process, 8, 128).devices) == [["p0d0"]]


def test_ensemble_over_several_processes_is_refused(monkeypatch):
    """agent=ensemble (members evaluated on one host afterwards) names what is unsupported."""
    import jax

    from hordax.training.config import TrainConfig
    from hordax.training.ensemble import EnsembleConfig
    from hordax.training.host.loop import train_and_log

    monkeypatch.setattr(jax, "process_count", lambda: 2)
    cfg = TrainConfig(ensemble=EnsembleConfig(enabled=True), distributed=True)
    with pytest.raises(ValueError) as exc:
        train_and_log(cfg, None, None, None)
    assert str(exc.value) == (
        "distributed=true over 2 processes: agent=ensemble is not supported yet "
        "(run it in one process)"
    )
