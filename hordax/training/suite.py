"""``hordax suite [suite=headline] [out_dir=DIR]``: the learning suite.

Every row of the suite's config (``hordax/configs/suite/<name>.yaml``: task, agent, the
overrides of its tuned run, the evaluation metric and its threshold) is trained with
``hordax train``'s own config composition, checks and host loop for each seed (in one
process: a persistent compilation cache lets later seeds reuse the programs), then evaluated on
fresh episodes by ``hordax eval``'s code (:func:`hordax.training.evaluation.run_eval`,
writing each run's ``eval.json``). Outputs in ``out_dir``: ``results.md`` and
``results.csv`` (task, agent, seeds, env steps, wall and compile time per seed, the metric's
mean over seeds with its 95 % t-interval, threshold, pass when the mean reaches it),
``curves.png`` (training return against wall time, one panel per row, one line per seed)
and ``runs/<task>_<agent>/seed<s>/`` (every run directory).

Nothing finished is run twice, and nothing is lost (a headline suite is hours of training on
a CPU): a run directory that holds a finished run started with the same overrides is reused
(its ``summary.json``, and its ``eval.json`` when it has the requested episode count); an
unfinished one continues from its newest checkpoint (``resume``), or starts again if it has
none; one started with other overrides is refused (``overwrite=true`` retrains). So a
suite stopped at any point is continued by the same command, ``only=[...]`` trains only some
rows, and the table lists every row whose runs are all finished. Wall and compile times are
the runs' own (``summary.json``), whether trained now or reused.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hordax import strict_json

#: The results table's columns.
COLUMNS = (
    "task", "agent", "seeds", "env_steps", "wall_s", "compile_s", "metric", "mean",
    "ci95_lo", "ci95_hi", "threshold", "direction", "pass",
)  # fmt: skip
ROW_KEYS = (
    "task", "agent", "overrides", "metric", "threshold", "direction", "goals", "episodes", "note"
)  # fmt: skip
GOAL_KEYS = ("metric", "threshold", "direction")
DIRECTIONS = ("max", "min")  # max: pass when mean >= threshold; min: when mean <= threshold


@dataclass
class SuiteConfig:
    """``hordax suite`` options (hordax/configs/suite.yaml and the ``suite`` group)."""

    name: str = "headline"
    """The suite's name (its file in hordax/configs/suite/)."""
    rows: list[Any] = field(default_factory=list)
    """``{task, agent, overrides: [...], metric, threshold, direction?, goals?, episodes?,
    note?}`` per row; ``metric``: ``return`` or a task metric (``info["metrics"]`` name);
    ``direction``: ``max`` (default: the mean must reach the threshold) or ``min`` (the mean
    must stay at or below it: distances, crash rates); ``goals``: more ``{metric, threshold,
    direction?}`` judged on the same runs, one table row each."""
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    """Training seeds per row (at least 3 for an interval over seeds)."""
    episodes: int = 64
    """Evaluation episodes per run (a row's ``episodes`` overrides it)."""
    out_dir: str = ""
    """Where to write results ('' = suite_<name>)."""
    only: list[str] = field(default_factory=list)
    """Train only the rows whose task is listed (empty = all); the other rows' finished runs
    still make their table rows."""
    checkpoint_every: int = 1
    """Every run checkpoints every N chunks (``checkpoint.every``, unless a row sets it), so
    that a suite stopped mid-run continues from the run's newest checkpoint; 0: off."""
    overwrite: bool = False
    """Retrain the selected rows' runs whatever their directories hold (default: reuse a
    finished run started with the same overrides, continue an unfinished one, refuse one
    started with other overrides)."""


def validate_suite(cfg: SuiteConfig) -> None:
    """The checks that need no run; ``ValueError`` naming the key."""
    if not cfg.seeds or len(set(cfg.seeds)) != len(cfg.seeds) or min(cfg.seeds) < 0:
        raise ValueError(f"seeds={list(cfg.seeds)}: must be distinct integers >= 0, at least one")
    if cfg.checkpoint_every < 0:
        raise ValueError(f"checkpoint_every={cfg.checkpoint_every}: must be an integer >= 0")
    if cfg.episodes < 1:
        raise ValueError(f"episodes={cfg.episodes}: must be an integer >= 1")
    if not cfg.rows:
        raise ValueError(f"suite={cfg.name}: no rows")
    tasks = []
    for i, row in enumerate(cfg.rows):
        if not isinstance(row, dict) or not {"task", "agent", "metric", "threshold"} <= set(row):
            raise ValueError(
                f"rows[{i}]: must be a mapping with task, agent, metric and threshold"
                f" (optional: overrides, episodes, note); got {row!r}"
            )
        unknown = set(row) - set(ROW_KEYS)
        if unknown:
            raise ValueError(f"rows[{i}]: unknown keys {sorted(unknown)}; allowed {list(ROW_KEYS)}")
        for key in ("task", "agent", "metric"):
            if not isinstance(row[key], str) or not row[key]:
                raise ValueError(f"rows[{i}].{key}={row[key]!r}: must be a non-empty string")
        overrides = row.get("overrides", [])
        if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
            raise ValueError(
                f"rows[{i}].overrides={overrides!r}: must be a list of override strings"
                " (e.g. [trainer.total_env_steps=100000])"
            )
        episodes = row.get("episodes", cfg.episodes)
        if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
            raise ValueError(f"rows[{i}].episodes={episodes!r}: must be an integer >= 1")
        same = [j for j, r in enumerate(cfg.rows[:i]) if _label(r) == _label(row)]
        if same:  # one run directory per task, agent and seed
            raise ValueError(
                f"rows[{i}]: task {row['task']!r} with agent {row['agent']!r} is also"
                f" rows[{same[0]}]; a suite has one row per task and agent (their runs share"
                " runs/<task>_<agent>/)"
            )
        extra = row.get("goals", [])
        if not isinstance(extra, list):
            raise ValueError(f"rows[{i}].goals={extra!r}: must be a list of mappings")
        for j, goal in enumerate([row, *extra]):
            where = f"rows[{i}]" if j == 0 else f"rows[{i}].goals[{j - 1}]"
            if j and (not isinstance(goal, dict) or not {"metric", "threshold"} <= set(goal)):
                raise ValueError(f"{where}: must be a mapping with metric and threshold")
            if j and set(goal) - set(GOAL_KEYS):
                raise ValueError(
                    f"{where}: unknown keys {sorted(set(goal) - set(GOAL_KEYS))};"
                    f" allowed {list(GOAL_KEYS)}"
                )
            t = goal["threshold"]
            if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
                raise ValueError(f"{where}.threshold={t!r}: must be a finite number")
            d = goal.get("direction", "max")
            if d not in DIRECTIONS:
                raise ValueError(f"{where}.direction={d!r}: must be one of {list(DIRECTIONS)}")
        tasks.append(row["task"])
    missing = sorted(set(cfg.only) - set(tasks))
    if missing:
        raise ValueError(f"only={list(cfg.only)}: no rows for {missing}; tasks are {tasks}")


def _label(row: Any) -> str:
    """The folder of a row's runs under ``out_dir/runs``: ``<task>_<agent>``."""
    return f"{row.get('task')}_{row.get('agent')}" if isinstance(row, dict) else ""


def metric_value(res: dict, metric: str) -> float:
    """A row's metric from an evaluation: the mean return or a task metric's mean."""
    if metric == "return":
        return float(res["return"]["mean"])
    if metric not in res["metrics"]:
        raise ValueError(
            f"metric={metric!r}: the env reports {sorted(res['metrics'])} (or 'return')"
        )
    return float(res["metrics"][metric]["mean"])


def row_goals(row: dict) -> list[dict]:
    """A row's goals, the row's own first: ``[{metric, threshold, direction}, ...]``."""
    return [
        {"metric": g["metric"], "threshold": float(g["threshold"]),
         "direction": g.get("direction", "max")}
        for g in [row, *row.get("goals", [])]
    ]  # fmt: skip


def passes(mean: float, threshold: float, direction: str) -> bool:
    """Whether a mean over seeds meets its goal (``direction`` max: >=, min: <=)."""
    return bool(mean >= threshold) if direction == "max" else bool(mean <= threshold)


def run_suite(
    cfg: SuiteConfig,
    train: Callable[..., dict],
    log=print,
    changes: Callable[[list[str], str], list[str]] | None = None,
) -> dict:
    """Train and evaluate every row and seed; write the table, CSV and curves.

    ``train(overrides, run_dir, resume=False, overwrite=False) -> summary``: one ``hordax
    train`` run in this process (the CLI's :func:`hordax.training.cli.train_in_process`),
    evaluation off; ``resume=True`` continues the run in ``run_dir`` from its newest
    checkpoint; ``overwrite=True`` replaces the run there (refused without it).
    ``changes(overrides, run_dir) -> ["key=SAVED -> NOW", ...]``: where a saved run's config
    differs from what its overrides compose to now (the CLI's
    :func:`hordax.training.cli.run_config_changes`; a tuned file changed since); a finished
    run is reused only if there are none. ``None``: overrides alone decide."""
    changes = changes or (lambda overrides, run_dir: [])
    from hordax.training.evaluation import EvalConfig, interval, run_eval

    validate_suite(cfg)
    out_dir = cfg.out_dir or f"suite_{cfg.name}"
    os.makedirs(out_dir, exist_ok=True)
    import jax

    if not jax.config.jax_compilation_cache_dir:  # seeds after the first reuse its programs
        jax.config.update("jax_compilation_cache_dir", os.path.join(out_dir, ".jax_cache"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    results, curves = [], {}
    for row in cfg.rows:
        label = _label(row)
        base = [f"env={row['task']}", f"agent={row['agent']}", *row.get("overrides", [])]
        if cfg.checkpoint_every and not any(o.startswith("checkpoint.every=") for o in base):
            base.append(f"checkpoint.every={cfg.checkpoint_every}")
        plan = [(seed, os.path.join(out_dir, "runs", label, f"seed{seed}")) for seed in cfg.seeds]
        selected = not cfg.only or row["task"] in cfg.only
        if not selected and not all(
            _finished(d, [*base, f"seed={s}"]) and not changes([*base, f"seed={s}"], d)
            for s, d in plan
        ):  # not trained now, and some run is missing or stale: no table row yet
            log(f"suite: {label}: not in the table (a run is missing or its config changed)")
            continue
        episodes = int(row.get("episodes", cfg.episodes))
        goals = row_goals(row)
        values: dict[str, list[float]] = {g["metric"]: [] for g in goals}
        walls, compiles, steps, runs = [], [], 0, []
        for seed, run_dir in plan:
            overrides = [*base, f"seed={seed}"]
            overwrite = cfg.overwrite and selected
            summary, how = _train_or_reuse(overrides, run_dir, train, overwrite, changes)
            ev = _eval_json(run_dir, episodes, summary["seed"]) if how == "reused" else None
            if ev is None:
                ev = run_eval(EvalConfig(run_dir=run_dir, episodes=episodes))
            for metric, vals in values.items():
                vals.append(metric_value(ev, metric))
            walls.append(float(summary["wall_s"]))
            compiles.append(summary["compile_s"])
            steps = summary["env_steps"]
            runs.append(run_dir)
            got = ", ".join(f"{m}={v[-1]:.4g}" for m, v in values.items())
            log(f"suite: {label} seed {seed} ({how}): {got} ({walls[-1]:.1f} s)")
        for goal in goals:
            vals = values[goal["metric"]]
            st = interval(vals)
            lo, hi = st["ci95"] or (math.nan, math.nan)
            results.append(
                {
                    "task": row["task"],
                    "agent": row["agent"],
                    "seeds": len(vals),
                    "env_steps": steps,
                    "wall_s": round(sum(walls) / len(walls), 1),
                    "compile_s": round(sum(compiles) / len(compiles), 1),
                    "metric": goal["metric"],
                    "mean": st["mean"],
                    "ci95_lo": lo,
                    "ci95_hi": hi,
                    "threshold": goal["threshold"],
                    "direction": goal["direction"],
                    "pass": passes(st["mean"], goal["threshold"], goal["direction"]),
                    "per_seed": vals,
                }
            )
        curves[label] = runs
    write_tables(results, out_dir)
    plot_curves(curves, os.path.join(out_dir, "curves.png"))
    return {
        "suite": cfg.name,
        "out_dir": out_dir,
        "rows": len(results),
        "passed": sum(r["pass"] for r in results),
        "results": results,
    }


def _saved_overrides(run_dir: str) -> list | None:
    """The overrides a run directory's run was started with (``None``: none readable)."""
    from hordax.training.host.rundir import RunDirError, read_overrides

    try:
        return read_overrides(run_dir)
    except RunDirError:
        return None


def _finished(run_dir: str, overrides: list[str]) -> bool:
    """Whether ``run_dir`` holds a finished run started with exactly ``overrides``."""
    return _saved_overrides(run_dir) == overrides and os.path.isfile(
        os.path.join(run_dir, "summary.json")
    )


def _train_or_reuse(
    overrides: list[str],
    run_dir: str,
    train: Callable[..., dict],
    overwrite: bool,
    changes: Callable[[list[str], str], list[str]],
) -> tuple[dict, str]:
    """One seed's run: ``(summary, how)``, ``how`` one of ``reused`` (a finished run with the
    same overrides and config), ``resumed`` (an unfinished one, from its newest checkpoint;
    the checkpoint refuses another config), ``trained`` (a fresh run, or one started again:
    no checkpoint, or ``overwrite``). ``ValueError`` if the directory holds a run started
    with other overrides, or a finished one whose config differs from today's."""
    from hordax.training.host.checkpoint import committed_steps
    from hordax.training.host.rundir import run_files

    if overwrite or not run_files(run_dir):
        return train(overrides, run_dir, overwrite=overwrite), "trained"
    saved = _saved_overrides(run_dir)
    if saved != overrides:
        raise ValueError(
            f"{run_dir} holds a run started with other overrides ({saved}); this suite row's"
            f" are {overrides}: use another out_dir, or overwrite=true to retrain"
        )
    summary_path = os.path.join(run_dir, "summary.json")
    if os.path.isfile(summary_path):
        changed = changes(overrides, run_dir)
        if changed:
            raise ValueError(
                f"{run_dir} holds a finished run whose config differs from what this suite"
                f" row composes to now ({'; '.join(changed[:5])}"
                + (f"; and {len(changed) - 5} more" if len(changed) > 5 else "")
                + "): a tuned file or default changed since; use another out_dir, or"
                " overwrite=true to retrain"
            )
        with open(summary_path) as f:
            return json.load(f), "reused"
    if committed_steps(run_dir):
        return train(overrides, run_dir, resume=True), "resumed"
    # This row's own run, stopped before its first checkpoint: started again over it.
    return train(overrides, run_dir, overwrite=True), "trained"


def _eval_json(run_dir: str, episodes: int, seed: int) -> dict | None:
    """A reused run's evaluation if it is the one the suite would run: ``episodes``
    episodes, deterministic, on the run's own evaluation seed, no split and no env params
    (``hordax eval`` writes other settings to ``eval.<n>.json``); else ``None``."""
    from hordax.training.evaluation.run import find_eval

    want = {"episodes_per_member": episodes, "deterministic": True, "seed": seed, "split": None}
    return find_eval(run_dir, "", want | {"env_params": None})


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if not math.isfinite(v) else f"{v:.4g}"
    return str(v)


def write_tables(results: list[dict], out_dir: str) -> None:
    """``results.csv`` and ``results.md`` (the Markdown table README's results are drawn
    from)."""
    import io

    from hordax.training.host.rundir import write_atomic

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=[*COLUMNS, "per_seed"])
    w.writeheader()
    for r in results:
        w.writerow({**r, "per_seed": strict_json.dumps(r["per_seed"])})
    write_atomic(os.path.join(out_dir, "results.csv"), buf.getvalue())
    head = ["task", "agent", "seeds", "env steps", "wall s / seed", "compile s", "eval metric",
            "mean [95 % CI]", "goal", "pass"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        ci = f"{_fmt(r['mean'])} [{_fmt(r['ci95_lo'])}, {_fmt(r['ci95_hi'])}]"
        verdict = "pass" if r["pass"] else "FAIL"
        goal = (">= " if r["direction"] == "max" else "<= ") + _fmt(r["threshold"])
        cells = [*(r[k] for k in COLUMNS[:7]), ci, goal, verdict]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    write_atomic(os.path.join(out_dir, "results.md"), "\n".join(lines) + "\n")


def plot_curves(curves: dict[str, list[str]], png: str) -> None:
    """Training return (chunk rows of ``metrics.jsonl``) against wall time: one panel per
    row, one line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(1, len(curves))
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.2 * rows), squeeze=False)
    for ax, (label, runs) in zip(axes.flat, sorted(curves.items()), strict=False):
        for run in runs:
            with open(os.path.join(run, "metrics.jsonl")) as f:
                pts = [json.loads(line) for line in f if line.strip()]
            xs = [p["wall_s"] for p in pts]
            ys = [p.get("episode_return") for p in pts]
            ax.plot(xs, [math.nan if y is None else y for y in ys], label=os.path.basename(run))
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("wall time after compile (s)")
        ax.set_ylabel("training return")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    tmp = png + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, png)
