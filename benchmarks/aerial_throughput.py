"""Random-action env steps per second of the aerial tasks vs the number of envs.

    PYTHONPATH=$PWD python benchmarks/aerial_throughput.py [--envs 256 1024 4096] [--steps 100]

Times ``jit(scan(VecEnv.step))`` (fresh auto-resets included: ``--reset-pool`` of them per
step, default ``ceil(num_envs / 64)``, ``0`` = gymnax's in-step reset of every env;
observations consumed so the camera is not dead code) after a warm-up call; prints one line
per (env id, num_envs). ``benchmarks/aerial_vs_pybullet.py`` times the same program beside
gym-pybullet-drones.
Navigate uses its default 32 x 48 depth camera.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

import hordax
from hordax.envs.wrappers import VecEnv


def random_action_program(
    env_id: str, num_envs: int, num_steps: int, reset_pool: int = -1, **kwargs
):
    """``(run, carry)``: ``run = jit(carry -> carry)`` steps ``num_envs`` envs ``num_steps``
    times with uniformly random actions through ``VecEnv`` (``reset_pool`` fresh resets per
    step; 0 = the plain ``env.step``, a fresh reset computed for every env on every step),
    ``carry = (key, batch state, f32[] sum)`` after a batch reset done outside ``run``.
    Rewards and observations go into the sum, or XLA would drop the camera as dead code."""
    env, params = hordax.make(env_id, **kwargs)
    space = env.action_space(params)
    vec = VecEnv(env, num_envs, reset_pool=reset_pool)
    _, state = vec.reset(jax.random.key(0), params)

    @jax.jit
    def run(carry):
        def body(c, _):
            key, state, total = c
            key, k_a, k_s = jax.random.split(key, 3)
            actions = jax.vmap(space.sample)(jax.random.split(k_a, num_envs))
            obs, state, reward, *_ = vec.step(k_s, state, actions, params)
            return (key, state, total + jnp.sum(reward) + jnp.mean(obs)), None

        return jax.lax.scan(body, carry, None, length=num_steps)[0]

    return run, (jax.random.key(1), state, jnp.float32(0.0))


def steps_per_second(
    env_id: str, num_envs: int, num_steps: int, reset_pool: int = -1, **kwargs
) -> float:
    run, carry = random_action_program(env_id, num_envs, num_steps, reset_pool, **kwargs)
    carry = jax.block_until_ready(run(carry))  # compile
    start = time.perf_counter()
    jax.block_until_ready(run(carry))
    return num_envs * num_steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--ids", nargs="+", default=["Aerial-Hover-v0", "Aerial-Navigate-v0"])
    parser.add_argument("--reset-pool", type=int, default=-1, help="VecEnv reset_pool (0 off)")
    args = parser.parse_args()
    print(f"jax {jax.__version__}, devices {jax.devices()}, reset_pool={args.reset_pool}")
    for env_id in args.ids:
        for n in args.envs:
            sps = steps_per_second(env_id, n, args.steps, args.reset_pool)
            print(f"{env_id:24s} num_envs={n:6d}  {sps:12,.0f} steps/s", flush=True)


if __name__ == "__main__":
    main()
