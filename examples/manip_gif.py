"""Train PPO on the MJX Panda reach task and write a GIF of the trained arm.

    python examples/manip_gif.py                           # 300k steps -> reach.gif
    python examples/manip_gif.py --steps 2000000           # the tuned budget (~5 min, 1-1.3 cm)
    python examples/manip_gif.py --run RUN_DIR             # a finished `hordax train` run
    python examples/manip_gif.py --run-dir D --overwrite   # train into D, replacing its run

Training is ``hordax train env=Manip-Reach-v0`` (the tuned config, its budget replaced by
``--steps``) run in this process into ``--run-dir`` (a directory holding a run is refused
unless ``--overwrite``); the GIF is ``hordax eval RUN_DIR
video=...``: greedy episodes on fresh evaluation seeds, each frame drawn by ``env.render``
(MuJoCo's offscreen renderer; headless machines use EGL, see docs/manipulation.md), the
target as a red sphere of the 2 cm success radius. Prints the evaluation's final distance.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from hordax.training.cli import train_in_process
from hordax.training.evaluation import EvalConfig, run_eval


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300_000, help="training env steps")
    ap.add_argument("--run", default="", help="render this finished run instead of training")
    ap.add_argument("--run-dir", default="", help="where to train (default: a temp dir)")
    ap.add_argument("--overwrite", action="store_true", help="replace the run in --run-dir")
    ap.add_argument("--episodes", type=int, default=3, help="episodes in the GIF")
    ap.add_argument("--out", default="reach.gif")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    run_dir = args.run
    if not run_dir:
        run_dir = args.run_dir or tempfile.mkdtemp(prefix="hordax-reach-")
        overrides = [
            "env=Manip-Reach-v0",
            "agent=ppo",
            f"seed={args.seed}",
            f"trainer.total_env_steps={args.steps}",
            f"trainer.num_chunks={max(1, min(10, args.steps // 200_000))}",
        ]
        summary = train_in_process(overrides, run_dir, overwrite=args.overwrite)
        print(f"trained {summary.get('env_steps', args.steps)} env steps in {run_dir}")
    res = run_eval(
        EvalConfig(
            run_dir=run_dir,
            episodes=max(64, args.episodes),
            video=os.path.abspath(args.out),
            video_episodes=args.episodes,
            fps=20,
        )
    )
    m = res["metrics"]
    print(
        f"Manip-Reach-v0, {res['episodes_per_member']} greedy episodes: final distance "
        f"{m['distance']['mean']:.3f} m, success (< 2 cm) {m['success']['mean']:.2f}; "
        f"wrote {res.get('video_frames', '?')} frames to {args.out}"
    )


if __name__ == "__main__":
    main()
