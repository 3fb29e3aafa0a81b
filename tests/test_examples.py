"""The README's quick start (examples/quickstart.py) runs and learns."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_example(
    script: str, *args: str, timeout: int = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``examples/<script> args...`` in a fresh interpreter (``env``: extra environment
    variables); asserts it exited with 0."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else {**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


@pytest.mark.slow
def test_quickstart__runs_and_trains():
    """The quick start prints 4096-env shapes, a learned CartPole return above 150 and the
    four seeds' returns, which it reads before exiting (a script that exits while its last
    computation runs died of SIGSEGV in about 1 run in 10 on a loaded 2-core host)."""
    proc = _run_example("quickstart.py")
    assert "(4096, 4) (4096, 4)" in proc.stdout
    ret = float(re.search(r"last 10 updates: ([\d.]+)", proc.stdout).group(1))
    assert ret > 150, proc.stdout
    seeds = re.search(r"per seed: \[([^\]]*)\]", proc.stdout).group(1).split()
    assert len(seeds) == 4 and sum(map(float, seeds)) / 4 > 150, proc.stdout


def test_readme__quick_start_matches_example():
    """The README's Python quick start and examples/quickstart.py use the same calls."""
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / "examples" / "quickstart.py").read_text()
    for call in (
        'hordax.make("CartPole-v1")',
        "jax.vmap(env.reset, in_axes=(0, None))",
        "make_train(TrainerConfig(total_env_steps=200_000), PPOConfig(), env, params)",
        "jax.jit(jax.vmap(train))",
    ):
        assert call in readme and call in example, call


@pytest.mark.slow
def test_grid_gif__writes_a_gif_of_greedy_episodes(tmp_path):
    """examples/grid_gif.py trains briefly and writes an animated GIF of env.render frames
    (80x80: 5x5 tiles of 16 px) lasting as many 150 ms frames as it reports (Pillow merges
    identical consecutive frames, adding their durations)."""
    from PIL import Image

    out = tmp_path / "grid.gif"
    proc = _run_example("grid_gif.py", "--steps", "4096", "--episodes", "1", "--out", str(out))
    frames = int(re.search(r"wrote (\d+) frames", proc.stdout).group(1))
    with Image.open(out) as im:
        assert im.format == "GIF" and im.size == (80, 80) and frames >= 2
        total = 0
        for i in range(im.n_frames):
            im.seek(i)
            total += im.info["duration"]
        assert 2 <= im.n_frames <= frames and total == 150 * frames


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_manip_gif__trains_reach_and_writes_a_gif_of_the_policy(tmp_path):
    """examples/manip_gif.py runs ``hordax train env=Manip-Reach-v0`` (one update) in its
    process and writes the evaluation's first episode as a GIF of MuJoCo-rendered frames
    (320x240): one frame per step plus the first (Reach: 50 steps, never terminated)."""
    from PIL import Image

    out = tmp_path / "reach.gif"
    run_dir = tmp_path / "run"
    args = ("--steps", "8192", "--episodes", "1", "--run-dir", str(run_dir), "--out", str(out))
    # compiled without XLA's optimizations (tests/conftest.py's FAST_COMPILE_DIRS setting):
    # one update checks the pipeline, not a learned figure; 87 -> 67 CPU s on 2 cores
    proc = _run_example(
        "manip_gif.py", *args, timeout=580, env={"JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}
    )
    frames = int(re.search(r"wrote (\d+) frames", proc.stdout).group(1))
    assert frames == 51
    assert (run_dir / "params.msgpack").is_file() and (run_dir / "eval.json").is_file()
    with Image.open(out) as im:
        assert im.format == "GIF" and im.size == (320, 240) and 2 <= im.n_frames <= frames
