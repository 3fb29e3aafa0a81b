"""Materialize a benchmark of generated XLand-style tasks to a ``.npz`` file.

    python -m hordax.envs.grid.make_benchmark --num-tasks 1000000 --depth 1 \\
        --distractor-rules 2 --distractor-objects 2 --seed 0 --out small-1m.npz

Load it with ``hordax.envs.grid.xland.load_benchmark(path)``; split with
``bench.split(0.9)``; draw tasks in jit with ``bench.sample(key)``.
"""

from __future__ import annotations

import argparse
import time

import jax

from hordax.envs.grid import xland


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-tasks", type=int, default=1_000_000)
    parser.add_argument("--depth", type=int, default=1)
    parser.add_argument("--distractor-rules", type=int, default=2)
    parser.add_argument("--distractor-objects", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=65536)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    for name in ("num_tasks", "chunk"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    for name in ("depth", "distractor_rules", "distractor_objects"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be >= 0")
    try:
        xland.check_vocabulary(args.depth, args.distractor_rules, args.distractor_objects)
    except ValueError as err:
        parser.error(str(err))
    start = time.time()
    bench = xland.make_benchmark(
        jax.random.key(args.seed),
        args.num_tasks,
        args.depth,
        args.distractor_rules,
        args.distractor_objects,
        chunk=args.chunk,
    )
    xland.save_benchmark(args.out, bench)
    print(f"wrote {bench.num_tasks} tasks to {args.out} in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
