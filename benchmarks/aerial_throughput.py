"""Random-action env steps per second of the aerial tasks vs the number of envs.

    PYTHONPATH=$PWD python benchmarks/aerial_throughput.py [--envs 256 1024 4096] [--steps 100]

Times ``jit(scan(vmap(env.step)))`` (auto-reset included, observations consumed so the
camera is not dead code) after a warm-up call; prints one line per (env id, num_envs).
Navigate uses its default 32 x 48 depth camera.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

import hordax


def steps_per_second(env_id: str, num_envs: int, num_steps: int, **kwargs) -> float:
    env, params = hordax.make(env_id, **kwargs)
    space = env.action_space(params)

    @jax.jit
    def run(key):
        keys = jax.random.split(key, num_envs)
        _, state = jax.vmap(env.reset, (0, None))(keys, params)

        def body(state, k):
            k_a, k_s = jax.random.split(k)
            actions = jax.vmap(space.sample)(jax.random.split(k_a, num_envs))
            out = jax.vmap(env.step, (0, 0, 0, None))(
                jax.random.split(k_s, num_envs), state, actions, params
            )
            # consume the observation too, or XLA drops the camera as dead code
            return out[1], jnp.sum(out[2]) + jnp.mean(out[0])

        state, rewards = jax.lax.scan(body, state, jax.random.split(key, num_steps))
        return rewards.sum()

    run(jax.random.key(0)).block_until_ready()  # compile
    start = time.perf_counter()
    run(jax.random.key(1)).block_until_ready()
    return num_envs * num_steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--ids", nargs="+", default=["Aerial-Hover-v0", "Aerial-Navigate-v0"])
    args = parser.parse_args()
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    for env_id in args.ids:
        for n in args.envs:
            sps = steps_per_second(env_id, n, args.steps)
            print(f"{env_id:24s} num_envs={n:6d}  {sps:12,.0f} steps/s", flush=True)


if __name__ == "__main__":
    main()
