"""``hordax suite suite=tiny``: the learning suite end to end in one process (3 seeds of a
tiny CartPole run, each evaluated by ``hordax eval``'s code): the table, CSV, curves and each
run's ``eval.json``; bad suite input is one line naming the key."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from hordax.training.suite import SuiteConfig, validate_suite


def _cli(args, cwd):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("XLA_FLAGS", None)
    cmd = [sys.executable, "-m", "hordax.training.cli", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One ``hordax suite suite=tiny`` run: ``(out_dir, process)``."""
    cwd = tmp_path_factory.mktemp("suite")
    out = cwd / "suite"
    return out, _cli(["suite", "suite=tiny", f"out_dir={out}"], cwd)


def _seed_log(stderr: str) -> dict[int, str]:
    """``{seed: how}`` from the suite's ``suite: LABEL seed S (HOW): ...`` lines."""
    found = re.findall(r"^suite: \S+ seed (\d+) \((\w+)\)", stderr, re.M)
    return {int(s): how for s, how in found}


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_suite_tiny__table_csv_curves_and_evaluations(tiny):
    out, proc = tiny
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _seed_log(proc.stderr) == {0: "trained", 1: "trained", 2: "trained"}
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


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_suite_again__reuses_finished_runs_continues_unfinished_and_refuses_others(tiny):
    """The same command continues a suite: nothing finished is trained again, an unfinished
    run resumes from its checkpoint (or starts again without one) and ends as it would have;
    a finished run whose config differs from what its overrides compose to now, or a
    directory holding a run with other overrides, is refused; ``overwrite=true`` retrains."""
    out, first = tiny
    assert first.returncode == 0, first.stderr[-3000:]
    runs = out / "runs" / "CartPole-v1_ppo"
    table = (out / "results.csv").read_text()
    summaries = {s: json.loads((runs / f"seed{s}" / "summary.json").read_text()) for s in range(3)}
    stamps = {s: os.stat(runs / f"seed{s}" / "summary.json").st_mtime_ns for s in range(3)}
    args = ["suite", "suite=tiny", f"out_dir={out}"]

    again = _cli(args, out.parent)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _seed_log(again.stderr) == {0: "reused", 1: "reused", 2: "reused"}
    assert (out / "results.csv").read_text() == table  # same runs, same evaluations
    assert stamps == {s: os.stat(runs / f"seed{s}" / "summary.json").st_mtime_ns for s in range(3)}

    # seed 1 killed after its last checkpoint, seed 2 before its first one
    for name in ("summary.json", "params.msgpack"):
        (runs / "seed1" / name).unlink()
        (runs / "seed2" / name).unlink()
    shutil.rmtree(runs / "seed2" / "checkpoints")
    cont = _cli(args, out.parent)
    assert cont.returncode == 0, cont.stderr[-3000:]
    assert _seed_log(cont.stderr) == {0: "reused", 1: "resumed", 2: "trained"}
    for s in (1, 2):  # the same run as before
        now = json.loads((runs / f"seed{s}" / "summary.json").read_text())
        assert now["params_checksum"] == summaries[s]["params_checksum"]
        assert now["final_return"] == summaries[s]["final_return"]
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert [json.loads(r["per_seed"]) for r in rows] == [
        json.loads(r["per_seed"]) for r in csv.DictReader(table.splitlines())
    ]  # the same evaluations: the runs are the same

    # the same overrides, but the config they compose to changed since the run (a tuned
    # file or a default): seed 0's saved config says another learning rate
    config = runs / "seed0" / "config.yaml"
    text = config.read_text()
    lr = re.search(r"^  learning_rate: (\S+)$", text, re.M)
    config.write_text(text.replace(lr.group(0), "  learning_rate: 0.123"))
    stale = _cli(args, out.parent)
    assert stale.returncode != 0 and "Traceback" not in stale.stderr
    assert "seed0 holds a finished run whose config differs" in stale.stderr
    assert f"agent.learning_rate=0.123 -> {float(lr.group(1))!r}" in stale.stderr, stale.stderr
    config.write_text(text)

    saved = runs / "seed0" / "overrides.json"
    saved.write_text(saved.read_text().replace("trainer.num_envs=16", "trainer.num_envs=8"))
    refused = _cli(args, out.parent)
    assert refused.returncode != 0
    assert "seed0 holds a run started with other overrides" in refused.stderr
    assert "overwrite=true" in refused.stderr and "Traceback" not in refused.stderr
    redo = _cli([*args, "seeds=[0]", "overwrite=true"], out.parent)
    assert redo.returncode == 0, redo.stderr[-3000:]
    assert _seed_log(redo.stderr) == {0: "trained"}
    assert "trainer.num_envs=16" in saved.read_text()


_ROW = {"task": "CartPole-v1", "agent": "ppo", "metric": "return", "threshold": 400}


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
        (SuiteConfig(checkpoint_every=-1, rows=[{}]), "checkpoint_every=-1"),
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
        # checked up front, not when the row's runs are evaluated (after training them), and
        # two rows of one task and agent would share (and refuse) each other's run directories
        (SuiteConfig(rows=[{**_ROW, "episodes": 0}]), "rows[0].episodes=0"),
        (SuiteConfig(rows=[{**_ROW, "episodes": "many"}]), "rows[0].episodes='many'"),
        (SuiteConfig(rows=[{**_ROW, "overrides": "seed=1"}]), "rows[0].overrides='seed=1'"),
        (SuiteConfig(rows=[{**_ROW, "overrides": [3]}]), "rows[0].overrides=[3]"),
        (SuiteConfig(rows=[{**_ROW, "task": 3}]), "rows[0].task=3"),
        (SuiteConfig(rows=[{**_ROW, "metric": None}]), "rows[0].metric=None"),
        (
            SuiteConfig(rows=[_ROW, {**_ROW, "overrides": ["agent.ent_coef=0.1"]}]),
            "rows[1]: task 'CartPole-v1' with agent 'ppo' is also rows[0]",
        ),
    ],
)
def test_validate_suite__names_the_key(cfg, names):
    with pytest.raises(ValueError) as e:
        validate_suite(cfg)
    assert names in str(e.value)


def test_run_config_changes__unreadable_config_is_a_change(tmp_path):
    """A run whose config.yaml is missing or not YAML is never taken as unchanged (the suite
    then refuses it in one line instead of a traceback)."""
    from hordax.training.cli import run_config_changes

    missing = run_config_changes(["env=CartPole-v1"], str(tmp_path))
    assert len(missing) == 1 and missing[0].startswith("config.yaml unreadable (")
    (tmp_path / "config.yaml").write_text("env: [unclosed\n")
    changed = run_config_changes(["env=CartPole-v1"], str(tmp_path))
    assert len(changed) == 1 and changed[0].startswith("config.yaml unreadable (")


def test_run_config_changes__an_option_added_since_the_run_is_no_change_at_its_default(tmp_path):
    """A run saved by an older hordax lacks the options added since: the suite reuses it
    while such an option is at its default and names the key when it is set away from it."""
    from omegaconf import OmegaConf

    from hordax.agents.ppo import PPOConfig
    from hordax.training.cli import _compose_train, _register_schemas, run_config_changes

    _register_schemas()  # as `hordax suite` does before composing
    overrides = ["env=CartPole-v1", "agent.ent_coef=0.0234"]
    saved = OmegaConf.to_container(_compose_train(overrides, ["progress=false"]), resolve=True)
    defaults = PPOConfig()
    at_default = next(
        k for k, v in saved["agent"].items() if k != "ent_coef" and v == getattr(defaults, k, None)
    )
    for key, expected in [(at_default, []), ("ent_coef", ["agent.ent_coef='<absent>' -> 0.0234"])]:
        old = {**saved, "agent": {k: v for k, v in saved["agent"].items() if k != key}}
        (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(old)))
        assert run_config_changes(overrides, str(tmp_path)) == expected, key


@pytest.mark.timeout(300)
def test_train_in_process__refuses_a_run_dir_holding_a_run_unless_overwrite(tmp_path):
    """The suite's and the examples' in-process ``hordax train`` refuses a directory that
    holds a run (nothing touched) unless ``overwrite=True``, which replaces that run."""
    from hordax.training.cli import train_in_process
    from hordax.training.host.rundir import RunDirError

    overrides = [
        "env=Debug-PointMass-v0",
        "trainer.num_envs=4",
        "trainer.rollout_length=8",
        "trainer.total_env_steps=32",
        "trainer.num_chunks=1",
        "agent.num_minibatches=1",
        "agent.num_epochs=1",
        "agent.network.hidden_sizes=[8]",
    ]
    (tmp_path / "config.yaml").write_text("old: run\n")
    (tmp_path / "overrides.json").write_text('["seed=7"]')
    with pytest.raises(RunDirError, match=rf"^run_dir={tmp_path}: already holds a run .*"
                       r"pass overwrite=true to replace it"):  # fmt: skip
        train_in_process(overrides, str(tmp_path))
    assert (tmp_path / "overrides.json").read_text() == '["seed=7"]'
    summary = train_in_process(overrides, str(tmp_path), overwrite=True)
    assert summary["env_steps"] == 32
    assert json.loads((tmp_path / "overrides.json").read_text()) == overrides
    assert "old: run" not in (tmp_path / "config.yaml").read_text()
