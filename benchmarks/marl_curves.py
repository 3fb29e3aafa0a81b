"""Learning curves and a results row from finished ``hordax train`` population runs.

Reads each run directory's ``metrics.jsonl`` (per-member training return per chunk) and
``summary.json`` (the train-time evaluation block: every member's greedy policy on fresh
episodes from the evaluation seed space), draws the curves of all given runs in one PNG
(mean and min-max over members, one line per run) and prints one markdown table row per run:
evaluation return mean ± std over the members (seeds), each member's mean, per-team means,
wall and compile times.

    python benchmarks/marl_curves.py RUN_DIR [RUN_DIR::team/<name>/episode_return ...] \\
        [RUN_DIR::task/<metric> ...] --png out.png [--ref LABEL=VALUE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def load_run(run_dir: str, key: str = "episode_return") -> dict:
    """The curves of metric ``key`` (``[members, chunks]``; e.g.
    ``team/<name>/episode_return``), env steps per chunk, and the summary of a run."""
    rows = [json.loads(line) for line in Path(run_dir, "metrics.jsonl").read_text().splitlines()]
    summary = json.loads(Path(run_dir, "summary.json").read_text())
    steps = np.array([r["env_steps"] for r in rows])
    members = rows[0].get("members")
    if members is None:  # a single run: one member
        curves = np.array([[r[key] for r in rows]])
    else:
        curves = np.array([[r["members"][i][key] for r in rows] for i in range(len(members))])
    return {"dir": run_dir, "steps": steps, "curves": curves, "summary": summary, "rows": rows}


def eval_members(summary: dict, run_dir: str = "") -> list[dict]:
    """The evaluation block per member (one entry for a single run): the train-time one of
    ``summary.json``, else ``RUN_DIR/eval.json`` (``hordax eval``'s) for a run trained with
    ``eval.episodes=0``."""
    ev = summary.get("eval") or json.loads(Path(run_dir, "eval.json").read_text())
    return ev.get("members") or [ev]


def eval_value(member: dict, key: str) -> float:
    """A member's evaluation mean of the curve's metric ``key``: ``team/<name>/...`` its
    team's return, ``task/<name>`` that task metric, else the return."""
    if key.startswith("team/"):
        return member["team_return"][key.split("/")[1]]["mean"]
    if key.startswith("task/"):
        return member["metrics"][key[len("task/") :]]["mean"]
    return member["return"]["mean"]


def table_row(run: dict) -> str:
    s = run["summary"]
    members = eval_members(s, run["dir"])
    rets = np.array([eval_value(m, run["key"]) for m in members])
    teams = {}
    for m in members:
        for name, st in (m.get("team_return") or {}).items():
            teams.setdefault(name, []).append(st["mean"])
    team_txt = "; ".join(f"{k} {np.mean(v):.2f}" for k, v in teams.items())
    per_seed = ", ".join(f"{r:.2f}" for r in rets)
    wall = run["rows"][-1]["wall_s"]
    return (
        f"| {s.get('env', '')} | {s.get('agent', '')} | {int(run['steps'][-1]):,} | {len(rets)} |"
        f" {rets.mean():.2f} ± {rets.std():.2f} ({per_seed}) | {team_txt} |"
        f" {s.get('compile_s', float('nan')):.0f} / {wall:.0f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--png", default="")
    ap.add_argument("--title", default="")
    ap.add_argument("--labels", nargs="*", default=None)
    ap.add_argument(
        "--ref", action="append", default=[], help="LABEL=VALUE: a dashed reference line"
    )
    args = ap.parse_args()
    runs = []
    for arg in args.runs:  # RUN_DIR or RUN_DIR::team/<name>/episode_return
        d, _, key = arg.partition("::")
        runs.append({**load_run(d, key or "episode_return"), "key": key})
    for run in runs:
        print(table_row(run))
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.5, 3.4))
        labels = args.labels or [
            " ".join(
                [r["summary"].get("agent", r["dir"]), r["key"].split("/")[1] if r["key"] else ""]
            )
            for r in runs
        ]
        for run, label in zip(runs, labels, strict=True):
            c, x = run["curves"], run["steps"]
            rets = [eval_value(m, run["key"]) for m in eval_members(run["summary"], run["dir"])]
            line = ax.plot(x, c.mean(0), label=f"{label} (eval {np.mean(rets):.2f})")[0]
            ax.fill_between(x, c.min(0), c.max(0), alpha=0.25, color=line.get_color())
        for ref in args.ref:
            label, _, value = ref.rpartition("=")
            ax.axhline(float(value), ls="--", lw=1, color="gray")
            ax.annotate(label, (0.02, float(value)), xycoords=("axes fraction", "data"), fontsize=7,
                        va="bottom", color="gray")  # fmt: skip
        ax.set_xlabel("env steps (per seed)")
        key = runs[0]["key"]
        ax.set_ylabel(
            f"training {key[5:]}"
            if key.startswith("task/")
            else "training episode return (per agent)"
        )
        ax.set_title(args.title or runs[0]["summary"].get("env", ""))
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.png, dpi=100)


if __name__ == "__main__":
    main()
