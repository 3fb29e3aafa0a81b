"""hordax quick start: make, reset, step, vmap over 4096 envs, and train in five lines."""

import jax
import jax.numpy as jnp

import hordax

# One environment: gymnax 1.0's API (explicit key and params).
env, params = hordax.make("CartPole-v1")
key = jax.random.key(0)
obs, state = env.reset(key, params)
obs, state, reward, terminated, truncated, info = env.step(key, state, 1, params)

# 4096 environments in one jitted call: vmap over keys and states.
keys = jax.random.split(key, 4096)
obs, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
actions = jnp.zeros(4096, jnp.int32)
obs, states, reward, terminated, truncated, info = step(keys, states, actions, params)
print(obs.shape, info["final_observation"].shape)  # (4096, 4) (4096, 4)

# Train PPO in five lines: train(key) is one pure, jittable function.
from hordax.agents.ppo import PPOConfig  # noqa: E402
from hordax.training.config import TrainerConfig  # noqa: E402
from hordax.training.trainers import make_train  # noqa: E402

train = make_train(TrainerConfig(total_env_steps=200_000), PPOConfig(), env, params)
final_state, metrics = jax.jit(train)(jax.random.key(42))
returns = metrics["episode_return_sum"] / jnp.maximum(metrics["episode_count"], 1)
print(f"mean episode return over the last 10 updates: {float(returns[-10:].mean()):.1f}")

# Several seeds at once: vmap the whole training run.
final_states, metrics = jax.jit(jax.vmap(train))(jax.random.split(jax.random.key(0), 4))
returns = metrics["episode_return_sum"] / jnp.maximum(metrics["episode_count"], 1)
# Reading the result also waits for it: JAX dispatches asynchronously, and a script that
# exits while a computation still runs can die of SIGSEGV (jax 0.9.2 on CPU frees the
# program under its threads). End a script on a result you read or block_until_ready.
print("per seed:", returns[:, -10:].mean(axis=1))
