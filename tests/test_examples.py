"""The README's quick start (examples/quickstart.py) runs and learns."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quickstart__runs_and_trains():
    """The quick start prints 4096-env shapes and a learned CartPole return above 150."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "(4096, 4) (4096, 4)" in proc.stdout
    ret = float(re.search(r"last 10 updates: ([\d.]+)", proc.stdout).group(1))
    assert ret > 150, proc.stdout


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
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "grid_gif.py"),
            "--steps",
            "4096",
            "--episodes",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
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
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "manip_gif.py"),
            "--steps",
            "8192",
            "--episodes",
            "1",
            "--run-dir",
            str(run_dir),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=580,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    frames = int(re.search(r"wrote (\d+) frames", proc.stdout).group(1))
    assert frames == 51
    assert (run_dir / "params.msgpack").is_file() and (run_dir / "eval.json").is_file()
    with Image.open(out) as im:
        assert im.format == "GIF" and im.size == (320, 240) and 2 <= im.n_frames <= frames
