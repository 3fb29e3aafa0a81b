"""Train PPO on a MiniGrid layout and write a GIF of the trained agent.

    python examples/grid_gif.py                                   # Grid-Empty-5x5-v0 -> grid.gif
    python examples/grid_gif.py --env Grid-DoorKey-5x5-v0 --steps 400000 --out doorkey.gif

The agent sees the symbolic egocentric view (uint8[7, 7, 2] (tile, colour) codes) through
the grid torso (per-channel embeddings + CNN); the GIF shows ``env.render`` RGB frames of
greedy episodes. Prints the greedy success rate and the training return.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
from PIL import Image

import hordax
from hordax.agents.networks import NetworkConfig
from hordax.agents.ppo import PPOConfig
from hordax.training.config import TrainerConfig
from hordax.training.trainers.ppo import PPOTrainer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Grid-Empty-5x5-v0")
    ap.add_argument("--steps", type=int, default=100_000, help="training env steps")
    ap.add_argument("--episodes", type=int, default=3, help="greedy episodes in the GIF")
    ap.add_argument("--out", default="grid.gif")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    env, params = hordax.make(args.env)
    trainer = PPOTrainer(
        TrainerConfig(num_envs=32, rollout_length=32, total_env_steps=args.steps),
        PPOConfig(
            learning_rate=1e-3,
            num_minibatches=4,
            network=NetworkConfig(
                torso="grid", conv_features=[16], hidden_sizes=[64], activation="relu"
            ),
        ),
        env,
        params,
    )
    state, metrics = jax.jit(trainer.train)(jax.random.key(args.seed))
    done = np.asarray(metrics["episode_count"][-10:]).sum()
    ret = np.asarray(metrics["episode_return_sum"][-10:]).sum() / max(done, 1)
    print(f"{args.env}: training return over the last 10 updates: {ret:.3f}")

    policy = jax.jit(lambda obs: trainer.agent.act_greedy(state.agent, obs[None])[0])
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    frames, successes = [], 0
    key = jax.random.key(args.seed + 1)
    for _ in range(args.episodes):
        key, k = jax.random.split(key)
        obs, s = reset(k, params)
        frames.append(np.asarray(env.render(s, params)))
        for t in range(int(params.max_steps_in_episode)):
            k = jax.random.fold_in(key, t)
            obs_next, s_next, reward, terminated, truncated, info = step(k, s, policy(obs), params)
            if bool(terminated) or bool(truncated):
                successes += int(bool(terminated) and float(reward) > 0)
                break
            obs, s = obs_next, s_next
            frames.append(np.asarray(env.render(s, params)))
    images = [Image.fromarray(f) for f in frames]
    images[0].save(args.out, save_all=True, append_images=images[1:], duration=150, loop=0)
    print(f"greedy success {successes}/{args.episodes}; wrote {len(frames)} frames to {args.out}")


if __name__ == "__main__":
    main()
