"""`hordax bench`: one JSON line per measurement; a multirun sweep writes a CSV and a PNG.

Only what the harness computes is asserted (fields, step counts, the overhead formula, the
files); throughput figures themselves live in benchmarks/RESULTS.md, never in a test.
"""

import csv
import json
import os
import re
import subprocess
import sys

import pytest

from hordax.training.bench import BenchConfig, validate_bench


def _bench(args, cwd):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "hordax.training.cli", "bench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_bench__multirun_writes_json_lines_csv_and_png(tmp_path):
    """2 envs x 2 sizes: 4 JSON lines (hordax and bare-gymnax steps/s), 4 CSV rows, a PNG."""
    rows = _bench(
        ["-m", "env=CartPole-v1,Debug-PointMass-v0", "num_envs=8,16", "steps=10", "repeats=1"],
        tmp_path,
    )
    assert [(r["env"], r["num_envs"]) for r in rows] == [
        ("CartPole-v1", 8),
        ("CartPole-v1", 16),
        ("Debug-PointMass-v0", 8),
        ("Debug-PointMass-v0", 16),
    ]
    for r in rows:
        assert r["steps"] == 10 * r["num_envs"] and r["mode"] == "random"
        assert r["sps"] == pytest.approx(r["steps"] / r["run_s"], rel=0.02)
        # overhead_pct = time(hordax) / time(bare) - 1 = sps(bare) / sps(hordax) - 1
        assert r["overhead_pct"] == pytest.approx(
            100 * (r["baseline_sps"] / r["sps"] - 1), abs=0.5 + 0.02 * abs(r["overhead_pct"])
        )
        assert r["compile_s"] > 0
    (sweep,) = list((tmp_path / "bench").iterdir())
    with open(sweep / "results.csv") as f:
        table = list(csv.DictReader(f))
    assert [(t["env"], int(t["num_envs"])) for t in table] == [
        (r["env"], r["num_envs"]) for r in rows
    ]
    png = (sweep / "results.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


@pytest.mark.slow
def test_bench__train_mode_counts_whole_updates(tmp_path):
    """mode=train: steps = num_envs * rollout_length * whole updates."""
    (row,) = _bench(
        ["mode=train", "num_envs=8", "steps=20", "rollout_length=8", "repeats=1"], tmp_path
    )
    assert row["mode"] == "train" and row["steps"] == 8 * 8 * 2 and "baseline_sps" not in row


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("mode", "fast", "mode=fast: allowed values are ['random', 'train']"),
        ("num_envs", 0, "num_envs=0: must be an integer >= 1"),
        ("reset_pool", -3, "reset_pool=-3: must be -1 (auto), 0 (off: in-step reset of every"),
        ("num_minibatches", 3, "num_minibatches=3: must divide num_envs * rollout_length"),
        # checked before measuring: '' named the output folder itself (IsADirectoryError after
        # the run), and the plot, written beside the CSV as <name>.png, overwrote results.png
        ("results", "", "results='': must be a file name ending in .csv"),
        ("results", "sweep.png", "results='sweep.png': must be a file name ending in .csv"),
        ("results", "out/", "results='out/': must be a file name ending in .csv"),
    ],
)
def test_bench__bad_config_names_the_key(field, value, message):
    cfg = BenchConfig(mode="train" if field == "num_minibatches" else "random")
    setattr(cfg, field, value)
    with pytest.raises(ValueError, match=re.escape(message)):
        validate_bench(cfg)
