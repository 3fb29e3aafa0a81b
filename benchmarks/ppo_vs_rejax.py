"""hordax PPO vs rejax PPO on CartPole-v1: wall time to a return of 475 and env steps/s.

Both trainers run in the same process, seeds interleaved, with the same hyperparameters
(PureJaxRL's CartPole settings; see ``HYPERPARAMETERS``), single device, and the same host
loop: the run is cut into ``--chunks`` jitted chunks of whole updates, and after each chunk
the current stochastic policy is evaluated by one shared evaluator (``--eval-envs`` fresh
CartPole episodes, first episode each, up to 500 steps). Time to threshold = summed wall
time of the training chunks (compilation and evaluation excluded) up to the first
evaluation with mean return >= 475. Compile time is reported apart.

Differences that the two libraries do not let us remove (stated, not hidden):
- rejax 0.1.3 targets gymnax 0.x (a 5-tuple ``step`` with one ``done``); it gets a thin
  adapter returning ``done = terminated | truncated``, so rejax does not bootstrap through
  CartPole's 500-step truncation while hordax does (``V(final_observation)``).
- rejax clips gradients element-wise (``optax.clip``), hordax by global norm; rejax has
  separate actor/critic optimizers (same Adam settings); rejax cannot anneal the learning
  rate, so both run with a constant learning rate here.
- Network initialization differs (hordax: orthogonal, as PureJaxRL).

    pip install -e ".[bench]"
    python benchmarks/ppo_vs_rejax.py                      # 3 seeds, 4 envs (PureJaxRL config)
    python benchmarks/ppo_vs_rejax.py --num-envs 64 --num-minibatches 32
    python benchmarks/ppo_vs_rejax.py --json out.json

Prints one JSON line per (library, seed) and a summary table; results go to
``benchmarks/RESULTS.md`` by hand, with the command.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import hordax
from hordax import strict_json
from hordax.agents.networks import NetworkConfig
from hordax.agents.ppo import PPOConfig
from hordax.training.config import TrainConfig, TrainerConfig, resolve
from hordax.training.trainers.ppo import PPOTrainer

ENV_ID = "CartPole-v1"
THRESHOLD = 475.0

# PureJaxRL's CartPole-v1 PPO settings, the same for both libraries.
HYPERPARAMETERS = {
    "num_envs": 4,
    "rollout_length": 128,
    "num_epochs": 4,
    "num_minibatches": 4,
    "learning_rate": 2.5e-4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_eps": 0.2,
    "ent_coef": 0.01,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
    "hidden_sizes": (64, 64),
    "activation": "tanh",
}


class FiveTupleStep:
    """gymnax 1.0 env -> gymnax 0.x call shape for rejax: ``done = terminated | truncated``."""

    def __init__(self, env: Any):
        self._env = env

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy/deepcopy probe dunders before _env exists
            raise AttributeError(name)
        return getattr(self._env, name)

    def reset(self, key, params=None):
        return self._env.reset(key, params)

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        return obs, state, reward, jnp.logical_or(terminated, truncated), info


def make_evaluator(env: Any, params: Any, num_envs: int, max_steps: int = 500):
    """``evaluate(policy, policy_params, key) -> mean return`` of one episode per env.

    ``policy(policy_params, obs [B, 4], key) -> actions [B]`` (stochastic).
    """

    def evaluate(policy, policy_params, key):
        key_reset, key_run = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(key_reset, num_envs), params
        )

        def step(carry, key_t):
            obs, state, ret, alive = carry
            key_act, key_env = jax.random.split(key_t)
            action = policy(policy_params, obs, key_act)
            obs, state, reward, terminated, truncated, _ = jax.vmap(
                env.step, in_axes=(0, 0, 0, None)
            )(jax.random.split(key_env, num_envs), state, action, params)
            ret = ret + jnp.where(alive, reward, 0.0)
            alive = alive & ~(terminated | truncated)
            return (obs, state, ret, alive), None

        init = (obs, state, jnp.zeros(num_envs), jnp.ones(num_envs, bool))
        (_, _, ret, _), _ = jax.lax.scan(step, init, jax.random.split(key_run, max_steps))
        return ret.mean()

    return evaluate


def hordax_runner(hp: dict, total_steps: int, chunks: int):
    """(init(key) -> state, chunk(state) -> state, policy(state, obs, key)) for hordax."""
    env, params = hordax.make(ENV_ID)
    trainer_cfg = TrainerConfig(
        num_envs=hp["num_envs"],
        rollout_length=hp["rollout_length"],
        total_env_steps=total_steps,
        num_chunks=chunks,
    )
    agent_cfg = PPOConfig(
        learning_rate=hp["learning_rate"],
        anneal_lr=False,
        gamma=hp["gamma"],
        gae_lambda=hp["gae_lambda"],
        clip_eps=hp["clip_eps"],
        ent_coef=hp["ent_coef"],
        vf_coef=hp["vf_coef"],
        max_grad_norm=hp["max_grad_norm"],
        num_epochs=hp["num_epochs"],
        num_minibatches=hp["num_minibatches"],
        network=NetworkConfig(hidden_sizes=list(hp["hidden_sizes"]), activation=hp["activation"]),
    )
    resolved = resolve(TrainConfig(trainer=trainer_cfg))
    trainer = PPOTrainer(trainer_cfg, agent_cfg, env, params, resolved)
    init = jax.jit(trainer.init)
    chunk = jax.jit(lambda s: trainer.run_chunk(s, resolved.chunk_updates)[0])

    def policy(state, obs, key):
        return trainer.agent.act(state.agent, obs, key)[0]

    return init, chunk, policy, resolved.num_chunks, resolved.chunk_updates


def rejax_runner(hp: dict, total_steps: int, chunks: int):
    """The same triple for rejax's PPO (one chunk = ``train(train_state=...)``)."""
    from rejax import PPO

    env, params = hordax.make(ENV_ID)
    steps_per_update = hp["num_envs"] * hp["rollout_length"]
    updates = max(1, total_steps // steps_per_update)
    chunk_updates = -(-updates // chunks)
    chunk_steps = chunk_updates * steps_per_update
    algo = PPO.create(
        env=FiveTupleStep(env),
        env_params=params,
        num_envs=hp["num_envs"],
        num_steps=hp["rollout_length"],
        num_epochs=hp["num_epochs"],
        num_minibatches=hp["num_minibatches"],
        learning_rate=hp["learning_rate"],
        gamma=hp["gamma"],
        gae_lambda=hp["gae_lambda"],
        clip_eps=hp["clip_eps"],
        ent_coef=hp["ent_coef"],
        vf_coef=hp["vf_coef"],
        max_grad_norm=hp["max_grad_norm"],
        total_timesteps=chunk_steps,
        eval_freq=chunk_steps,
        skip_initial_evaluation=True,
        agent_kwargs={"hidden_layer_sizes": hp["hidden_sizes"], "activation": hp["activation"]},
    )
    # Evaluation happens outside, by the shared evaluator.
    algo = algo.replace(eval_callback=lambda algo, ts, key: jnp.zeros(()))
    init = jax.jit(algo.init_state)
    chunk = jax.jit(lambda ts: algo.train(train_state=ts)[0])

    def policy(ts, obs, key):
        return algo.actor.apply(ts.actor_ts.params, obs, key, method="act")

    return init, chunk, policy, -(-updates // chunk_updates), chunk_updates


def run_one(name: str, runner: tuple, evaluate, seed: int, steps_per_update: int) -> dict:
    init, chunk, policy, num_chunks, chunk_updates = runner
    key = jax.random.key(seed)
    t0 = time.perf_counter()
    state = jax.block_until_ready(init(key))
    chunk_c = jax.jit(chunk).lower(state).compile()
    eval_c = jax.jit(lambda s, k: evaluate(policy, s, k)).lower(state, key).compile()
    compile_s = time.perf_counter() - t0
    train_s, time_to_threshold, steps_to_threshold, curve = 0.0, None, None, []
    for c in range(num_chunks):
        t = time.perf_counter()
        state = jax.block_until_ready(chunk_c(state))
        train_s += time.perf_counter() - t
        ret = float(eval_c(state, jax.random.fold_in(key, 10_000 + c)))
        steps = (c + 1) * chunk_updates * steps_per_update
        curve.append((steps, round(train_s, 3), round(ret, 1)))
        if time_to_threshold is None and ret >= THRESHOLD:
            time_to_threshold, steps_to_threshold = train_s, steps
    total_steps = num_chunks * chunk_updates * steps_per_update
    return {
        "library": name,
        "seed": seed,
        "compile_s": round(compile_s, 2),
        "train_s": round(train_s, 2),
        "env_steps": total_steps,
        "sps": round(total_steps / train_s, 1),
        "time_to_475_s": None if time_to_threshold is None else round(time_to_threshold, 2),
        "steps_to_475": steps_to_threshold,
        "final_eval_return": curve[-1][2],
        "curve": curve,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--total-steps", type=int, default=500_000)
    ap.add_argument("--chunks", type=int, default=40)
    ap.add_argument("--num-envs", type=int, default=HYPERPARAMETERS["num_envs"])
    ap.add_argument("--num-minibatches", type=int, default=HYPERPARAMETERS["num_minibatches"])
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--json", help="write all results to this file")
    args = ap.parse_args()
    hp = {**HYPERPARAMETERS, "num_envs": args.num_envs, "num_minibatches": args.num_minibatches}
    env, params = hordax.make(ENV_ID)
    evaluate = make_evaluator(env, params, args.eval_envs)
    runners = {
        "hordax": hordax_runner(hp, args.total_steps, args.chunks),
        "rejax": rejax_runner(hp, args.total_steps, args.chunks),
    }
    steps_per_update = hp["num_envs"] * hp["rollout_length"]
    results = []
    for seed in range(args.seeds):
        for name, runner in runners.items():
            r = run_one(name, runner, evaluate, seed, steps_per_update)
            print(strict_json.dumps({k: v for k, v in r.items() if k != "curve"}), flush=True)
            results.append(r)

    print(f"\n{ENV_ID}, {args.seeds} seeds, hp={hp}")
    print(f"jax {jax.__version__} on {jax.devices()[0].device_kind} ({platform.machine()})")
    print("| library | median time to 475 (s) | reached | median steps/s | median compile (s) |")
    print("|---|---:|---:|---:|---:|")
    for name in runners:
        rs = [r for r in results if r["library"] == name]
        times = [r["time_to_475_s"] for r in rs if r["time_to_475_s"] is not None]
        med_t = f"{statistics.median(times):.2f}" if times else "never"
        print(
            f"| {name} | {med_t} | {len(times)}/{len(rs)} | "
            f"{statistics.median(r['sps'] for r in rs):,.0f} | "
            f"{statistics.median(r['compile_s'] for r in rs):.1f} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            strict_json.dump({"hp": hp, "jax": jax.__version__, "results": results}, f, indent=1)


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
