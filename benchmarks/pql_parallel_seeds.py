"""PQL's parallel mode over seeds: the configuration of the slow test
``tests/training/test_trainer_learning.py::test_pql_parallel__learns_pendulum`` (tuned Pendulum
with ``normalize_obs``, 32 envs x 4 steps, 8 host devices: one role per device), each seed
run in turn, printing the per-chunk mean training return, the test's figure (the mean
return of the episodes ending in the last 3 chunks), wall time and load.

    python benchmarks/pql_parallel_seeds.py --schedule serial --seeds 0,1,2 --steps 76800

``--schedule async`` measures how the timing-dependent schedule varies on this machine.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import time  # noqa: E402

import jax  # noqa: E402

from hordax.agents.pql import PQLConfig  # noqa: E402
from hordax.envs.registry import make  # noqa: E402
from hordax.training.config import TrainConfig, TrainerConfig  # noqa: E402
from hordax.training.host.pql_parallel import ParallelPQL  # noqa: E402
from hordax.training.trainers import validate  # noqa: E402
from hordax.training.trainers.pql import PQLTrainer  # noqa: E402


def run(seed: int, schedule: str, steps: int) -> dict:
    acfg = PQLConfig(
        mode="parallel", parallel_schedule=schedule, batch_size=256, buffer_size=100_000,
        beta_av=8.0, beta_pv=2, reward_scale=0.1, sigma_max=0.4, normalize_obs=True,
        hidden_sizes=[128, 128],
    )  # fmt: skip
    tcfg = TrainerConfig(
        num_envs=32, rollout_length=4, total_env_steps=steps, num_chunks=steps // 6400
    )
    resolved = validate(TrainConfig(agent=acfg, trainer=tcfg))
    env, params = make("Pendulum-v1")
    trainer = PQLTrainer(tcfg, acfg, env, params, resolved)
    t0 = time.perf_counter()
    out = ParallelPQL(trainer, resolved.num_updates, resolved.chunk_updates).run(
        jax.random.key(seed)
    )
    tail = [r for r in out.rows[-3:] if r["episodes"]]
    last3 = sum(r["episode_return"] * r["episodes"] for r in tail) / sum(
        r["episodes"] for r in tail
    )
    return {
        "seed": seed,
        "schedule": schedule,
        "last3": round(last3, 1),
        "curve": [(r["env_steps"], round(r["episode_return"])) for r in out.rows],
        "wall_s": round(time.perf_counter() - t0, 1),
        "load": [round(x, 1) for x in os.getloadavg()],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedule", choices=("serial", "async"), default="serial")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--steps", type=int, default=76_800)
    args = ap.parse_args()
    for seed in (int(s) for s in args.seeds.split(",")):
        print(run(seed, args.schedule, args.steps), flush=True)


if __name__ == "__main__":
    main()
