"""Wall-clock time to a return threshold: PQL vs hordax PPO (the PQL paper's claim).

Runs ``hordax train env=<id> agent=pql`` and ``agent=ppo`` (each with its tuned defaults)
as a user would, reads each run's ``metrics.jsonl`` (mean training return per chunk and
the wall time since the compiled program started) and reports the first chunk whose mean
return reaches the threshold, plus compile time. Writes a PNG of return vs wall time.

    python benchmarks/pql_vs_ppo.py --env Pendulum-v1 --threshold -200 --out bench/pql_vs_ppo

``--parallel`` adds a third curve, ``pql-parallel``: the same PQL config with
``agent.mode=parallel`` (actor, V-learner and P-learner concurrently, see
``hordax/training/host/pql_parallel.py``); its summary also gives the achieved update ratios and
each role's busy time. ``--extra KEY=VALUE`` (repeatable) is passed to every run.

Training returns include exploration noise (PPO: its Gaussian policy; PQL: per-env noise
up to sigma_max), so both are measured the same, pessimistic way.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from hordax import strict_json


def run(env_id: str, agent: str, out: Path, seed: int, extra: list[str], label: str = "") -> dict:
    run_dir = out / f"{env_id}_{label or agent}_s{seed}"
    cmd = [
        sys.executable,
        "-m",
        "hordax.training.cli",
        "train",
        f"env={env_id}",
        f"agent={agent}",
        f"seed={seed}",
        "progress=false",
        f"hydra.run.dir={run_dir}",
        "overwrite=true",  # a re-run of the benchmark replaces its runs
        *extra,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = [json.loads(r) for r in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {"summary": summary, "rows": rows}


def time_to(rows: list[dict], threshold: float) -> tuple[float | None, int | None]:
    for r in rows:
        if r.get("episode_return", float("-inf")) >= threshold:
            return r["wall_s"], r["env_steps"]
    return None, None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Pendulum-v1")
    ap.add_argument("--threshold", type=float, default=-200.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="bench/pql_vs_ppo")
    ap.add_argument(
        "--parallel", action="store_true", help="also run PQL's parallel mode (third curve)"
    )
    ap.add_argument("--extra", action="append", default=[], help="override for every run")
    ap.add_argument(
        "--agents",
        default="pql,ppo",
        help="which runs to (re)do, comma-separated; the others' results are kept from an "
        "earlier invocation's results.json in --out (the PNG shows every curve there)",
    )
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    saved = out / "results.json"
    results = json.loads(saved.read_text()) if saved.is_file() else {}
    runs = [("pql", "pql", []), ("ppo", "ppo", [])]
    if args.parallel:
        runs.append(("pql-parallel", "pql", ["agent.mode=parallel"]))
    wanted = set(args.agents.split(",")) | ({"pql-parallel"} if args.parallel else set())
    runs = [r for r in runs if r[0] in wanted]
    for label, agent, extra in runs:
        res = run(args.env, agent, out, args.seed, [*extra, *args.extra], label)
        t, steps = time_to(res["rows"], args.threshold)
        s = res["summary"]
        results[label] = {
            "time_to_threshold_s": t,
            "env_steps_to_threshold": steps,
            "compile_s": s["compile_s"],
            "run_wall_s": res["rows"][-1]["wall_s"],
            "final_return": s["final_return"],
            "env_steps": s["env_steps"],
            "curve": [(r["wall_s"], r.get("episode_return")) for r in res["rows"]],
        }
        if "parallel" in s:  # achieved ratios, busy/wait seconds per role, role devices
            results[label]["parallel"] = s["parallel"]
        print(
            strict_json.dumps(
                {
                    "env": args.env,
                    "agent": label,
                    "threshold": args.threshold,
                    **{k: v for k, v in results[label].items() if k != "curve"},
                }
            ),
            flush=True,
        )
    with open(out / "results.json", "w") as f:
        strict_json.dump(results, f, indent=1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for agent, r in results.items():
        xs, ys = zip(*r["curve"], strict=True)
        ax.plot(xs, ys, marker="o", label=f"{agent} (compile {r['compile_s']:.0f} s)")
    ax.axhline(args.threshold, color="gray", ls="--", label=f"threshold {args.threshold:g}")
    ax.set_xlabel("wall time after compilation [s]")
    ax.set_ylabel("mean training episode return")
    ax.set_title(
        f"{args.env}: {' vs '.join(results)} (seed {args.seed}, {os.cpu_count()} CPU cores)"
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / f"{args.env}_pql_vs_ppo.png", dpi=100)


if __name__ == "__main__":
    main()
