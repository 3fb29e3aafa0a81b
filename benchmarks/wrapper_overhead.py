"""Where hordax's wrapper overhead comes from: random-action steps/s of one env through
``bare`` (``jax.vmap(env.step)``, gymnax's API), ``ClipAction`` only, ``LogEpisode`` only and
the trainers' full stack ``VecEnv(LogEpisode(ClipAction(env)))``, through the shared
harness (every output consumed, runs interleaved, compile excluded).

    python benchmarks/wrapper_overhead.py --only CartPole-v1 --num-envs 1024 16384
"""

from __future__ import annotations

import hordax
from hordax.benchmarking import runner
from hordax.benchmarking.subjects import action_sampler, batch_subject, vmap_subject
from hordax.envs.wrappers import ClipAction, LogEpisode, VecEnv

ENVS = ("CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0")


def case(env_id: str) -> runner.Case:
    def build(n: int):
        env, params = hordax.make(env_id)
        sides = [vmap_subject(env, params, n, "bare", library="gymnax")]
        for name, wrapped in (
            ("clip", VecEnv(ClipAction(env), n)),
            ("log", VecEnv(LogEpisode(env), n)),
            ("full", VecEnv(LogEpisode(ClipAction(env)), n)),
        ):
            sides.append(batch_subject(wrapped, params, n, name, path=name))
        return sides, action_sampler(env, params, n)

    return runner.Case({"env": env_id}, build)


if __name__ == "__main__":
    runner.main(
        [case(e) for e in ENVS],
        __doc__.splitlines()[0],
        sizes=(1024, 16384),
        steps=2000,
        out="benchmarks/results/wrapper_overhead.json",
    )
