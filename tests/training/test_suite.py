"""``hordax suite suite=tiny``: the learning suite end to end in one process (3 seeds of a
tiny CartPole run, each evaluated by ``hordax eval``'s code): the table, CSV, curves and each
run's ``eval.json``; bad suite input is one line naming the key."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from hordax.training.suite import SuiteConfig, validate_suite


def _cli(args, cwd):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("XLA_FLAGS", None)
    cmd = [sys.executable, "-m", "hordax.training.cli", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.timeout(600)
def test_suite_tiny__table_csv_curves_and_evaluations(tmp_path):
    out = tmp_path / "suite"
    proc = _cli(["suite", "suite=tiny", f"out_dir={out}"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 2  # the row's goal and its lower-is-better goal
    with open(out / "results.csv") as f:
        row, low = list(csv.DictReader(f))
    assert (low["metric"], low["direction"], low["threshold"]) == ("return", "min", "500.0")
    assert low["per_seed"] == row["per_seed"]  # judged on the same runs
    assert (low["pass"] == "True") == (float(low["mean"]) <= 500.0)
    assert row["task"] == "CartPole-v1" and row["seeds"] == "3" and row["env_steps"] == "16384"
    per_seed = json.loads(row["per_seed"])
    evals = [
        json.loads((out / "runs" / "CartPole-v1_ppo" / f"seed{s}" / "eval.json").read_text())
        for s in (0, 1, 2)
    ]
    assert per_seed == [e["return"]["mean"] for e in evals]  # the table is hordax eval's
    assert all(e["episodes"] == 8 for e in evals)
    assert float(row["mean"]) == pytest.approx(sum(per_seed) / 3)
    assert float(row["ci95_lo"]) <= float(row["mean"]) <= float(row["ci95_hi"])
    assert (row["pass"] == "True") == (float(row["mean"]) >= float(row["threshold"]))
    md = (out / "results.md").read_text()
    assert md.startswith("| task | agent |") and "CartPole-v1 | ppo | 3 | 16384" in md
    assert "| >= 25 |" in md and "| <= 500 |" in md
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("cfg", "names"),
    [
        (SuiteConfig(rows=[]), "suite=headline: no rows"),
        (SuiteConfig(rows=[{"task": "CartPole-v1"}]), "rows[0]"),
        (
            SuiteConfig(rows=[{"task": "a", "agent": "ppo", "metric": "x", "threshold": "y"}]),
            "rows[0].threshold='y'",
        ),
        (
            SuiteConfig(rows=[{"task": "a", "agent": "p", "metric": "x", "threshold": 1, "s": 1}]),
            "rows[0]: unknown keys ['s']",
        ),  # fmt: skip
        (SuiteConfig(seeds=[0, 0], rows=[{}]), "seeds=[0, 0]"),
        (
            SuiteConfig(
                rows=[
                    {"task": "a", "agent": "p", "metric": "x", "threshold": 1, "direction": "down"}
                ]
            ),
            "rows[0].direction='down'",
        ),
        (
            SuiteConfig(
                rows=[
                    {
                        "task": "a",
                        "agent": "p",
                        "metric": "x",
                        "threshold": 1,
                        "goals": [{"metric": "d", "threshold": 1, "below": 1}],
                    }
                ]
            ),
            "rows[0].goals[0]: unknown keys ['below']",
        ),
    ],
)
def test_validate_suite__names_the_key(cfg, names):
    with pytest.raises(ValueError) as e:
        validate_suite(cfg)
    assert names in str(e.value)
