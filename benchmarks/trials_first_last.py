"""First vs last episode of meta-RL trials, paired per trial (issue #15's meta-RL item).

``python benchmarks/trials_first_last.py RUN_DIR [EPISODES] [SPLIT]`` evaluates a finished
``hordax train`` run of an ``XLandTrials`` env exactly as ``hordax eval RUN_DIR
episodes=EPISODES split=SPLIT`` does (greedy, the same evaluation keys) and prints, per seed,
the mean and 95 % Student-t interval over trials of ``return_episode_0``, of
``return_episode_{K-1}`` and of their per-trial difference; then the same over the seeds'
means.
"""

from __future__ import annotations

import os
import sys

from hordax.training.ensemble.members import load_config
from hordax.training.evaluation.episodes import interval
from hordax.training.evaluation.policy import load_saved
from hordax.training.evaluation.run import Evaluator, eval_env


def fmt(stats: dict) -> str:
    lo, hi = stats["ci95"]
    return f"{stats['mean']:.3f} [{lo:.3f}, {hi:.3f}]"


def main(argv: list[str]) -> None:
    run_dir = argv[0]
    episodes = int(argv[1]) if len(argv) > 1 else 512
    split = argv[2] if len(argv) > 2 else "test"
    tc = load_config(run_dir)
    env, params, cap = eval_env(tc.env.id, dict(tc.env.kwargs), dict(tc.env.params), split)
    ev = Evaluator(tc, env, params, episodes, tc.seed, True, cap)
    ev(load_saved(os.path.join(run_dir, "params.msgpack")))
    last_k = env.episodes_per_trial - 1
    first, last, diff = [], [], []
    for i, out in enumerate(ev.last_outs):
        a = out["metrics"]["return_episode_0"]
        b = out["metrics"][f"return_episode_{last_k}"]
        first.append(a.mean())
        last.append(b.mean())
        diff.append((b - a).mean())
        print(
            f"seed {tc.seed + i}: first {fmt(interval(a))}  last {fmt(interval(b))}  "
            f"last - first (paired) {fmt(interval(b - a))}"
        )
    if len(first) < 2:  # an interval over seeds needs two of them
        return
    print(
        f"over {len(first)} seeds: first {fmt(interval(first))}  last {fmt(interval(last))}  "
        f"last - first {fmt(interval(diff))}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
