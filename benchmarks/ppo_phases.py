"""Where a PPO update's time goes: the phases of ``PPOTrainer.update`` timed apart.

For one torso on Grid-DoorKey-8x8-v0 (the setting of ``benchmarks/torso_speed.py``), each
phase is jitted on its own and timed on the trainer's own state: ``rollout`` (the env steps
and the acting forward passes, one ``lax.scan``), ``bootstrap`` (the values of the true next
observations, as the trainer computes them), ``gae`` and ``update`` (the minibatch epochs:
forward, backward, Adam). ``whole`` is the trainer's ``update`` (everything in one program),
so the sum of the phases minus ``whole`` is what fusing them saves. Times are medians of
``--repeats`` runs after a warm-up; compile time is excluded.

    python benchmarks/ppo_phases.py --torso grid
    python benchmarks/ppo_phases.py --torso mlp --num-envs 64 --rollout-length 128
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import jax

import hordax
from hordax.agents.networks import NetworkConfig
from hordax.agents.ppo import PPOBatch, PPOConfig
from hordax.training.config import TrainConfig, TrainerConfig
from hordax.training.core.estimators import bootstrap_values, compute_gae
from hordax.training.core.rollout import rollout
from hordax.training.trainers import validate
from hordax.training.trainers.ppo import PPOTrainer


def timed(fn, *args, repeats: int) -> float:
    """Median seconds of ``fn(*args)`` over ``repeats`` runs after one warm-up run."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Grid-DoorKey-8x8-v0")
    ap.add_argument("--torso", default="grid", choices=["mlp", "cnn", "grid"])
    ap.add_argument("--shared-torso", action="store_true")
    ap.add_argument(
        "--full-bootstrap", action="store_true", help="time V over every final_observation"
    )
    ap.add_argument("--num-envs", type=int, default=64)
    ap.add_argument("--rollout-length", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    env, params = hordax.make(args.env)
    net = NetworkConfig(torso=args.torso, shared_torso=args.shared_torso)
    cfg = TrainConfig(
        trainer=TrainerConfig(
            num_envs=args.num_envs,
            rollout_length=args.rollout_length,
            total_env_steps=args.num_envs * args.rollout_length,
            num_chunks=1,
        ),
        agent=PPOConfig(network=net),
    )
    resolved = validate(cfg)
    trainer = PPOTrainer(cfg.trainer, cfg.agent, env, params, resolved)
    agent, acfg = trainer.agent, cfg.agent
    state = jax.jit(trainer.init)(jax.random.key(0))
    T, B = args.rollout_length, args.num_envs

    @jax.jit
    def do_rollout(state):
        return rollout(
            trainer.env, params, agent, state.agent, state.env_state, state.obs,
            state.key, T,
        )  # fmt: skip

    _, last_obs, tr = do_rollout(state)
    flat = lambda x: x.reshape((T * B, *x.shape[2:]))  # noqa: E731

    @jax.jit
    def bootstrap(state, tr, last_obs):
        value_fn = lambda o: agent.value(state.agent, o)  # noqa: E731
        if args.full_bootstrap:  # the trainer's computation before: every final_observation
            return value_fn(flat(tr.next_obs)).reshape((T, B))
        return bootstrap_values(value_fn, tr.extras["value"], tr.next_obs, last_obs, tr.truncated)

    @jax.jit
    def gae(state, tr, next_value):
        return compute_gae(
            tr.reward, tr.extras["value"], next_value, tr.terminated, tr.truncated,
            acfg.gamma, state.agent.hparams["gae_lambda"],
        )  # fmt: skip

    next_value = bootstrap(state, tr, last_obs)
    advantage, target = gae(state, tr, next_value)
    seq = (tr.obs, tr.action, tr.extras["log_prob"], tr.extras["value"], advantage, target)
    batch = PPOBatch(*(flat(x) for x in seq))
    update = jax.jit(agent.update)
    whole = jax.jit(trainer.update)

    rows = {
        "rollout": timed(do_rollout, state, repeats=args.repeats),
        "bootstrap": timed(bootstrap, state, tr, last_obs, repeats=args.repeats),
        "gae": timed(gae, state, tr, next_value, repeats=args.repeats),
        "update": timed(update, state.agent, batch, jax.random.key(1), repeats=args.repeats),
        "whole": timed(whole, state, repeats=args.repeats),
    }
    steps = T * B
    print(
        f"{args.env}, torso={args.torso}, shared={args.shared_torso}, {B} envs x {T} steps, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    for name, s in rows.items():
        print(f"{name:<10} {1e3 * s:9.1f} ms  ({steps / s:12,.0f} env steps/s if alone)")
    parts = sum(v for k, v in rows.items() if k != "whole")
    print(f"{'sum':<10} {1e3 * parts:9.1f} ms")


if __name__ == "__main__":
    main()
