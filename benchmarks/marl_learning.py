"""Multi-agent PPO learning runs with evaluation of the final policies on fresh episodes.

Trains ``--seeds`` seeds of ``agent=ippo`` or ``agent=mappo`` (the tuned config
``hordax/configs/tuned/<env>_<agent>.yaml`` when present, plus ``--set key=value``
overrides) side by side as a population (one program, seed ``i`` = the single run with that
seed), then evaluates every seed's final policy greedily on ``--episodes`` fresh episodes
(frozen normalizer statistics) and prints one JSON line: per-seed training curves, per-seed
evaluation return (per team too) and task metrics, mean and std over seeds, wall times and
the load average. ``--png`` draws the learning curves (mean and min-max over seeds).

    python benchmarks/marl_learning.py --env Debug-MultiPointMass-v0 --agent ippo --seeds 3
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import yaml

import hordax
from hordax import strict_json
from hordax.agents.networks import NetworkConfig
from hordax.agents.ppo import IPPOConfig, MAPPOConfig
from hordax.envs.wrappers import ClipAction, LogEpisode, VecEnv
from hordax.envs.wrappers.normalize import normalize, slot_stats
from hordax.training.config import TrainerConfig
from hordax.training.trainers.population import PopulationTrainer
from hordax.training.trainers.ppo import PPOTrainer

TUNED = Path(__file__).resolve().parents[1] / "hordax" / "configs" / "tuned"


def load_config(env_id: str, agent: str, sets: list[str]) -> tuple[object, TrainerConfig]:
    """The agent and trainer configs: defaults, the tuned file, then ``key=value`` sets."""
    tuned = TUNED / f"{env_id}_{agent}.yaml"
    data = yaml.safe_load(tuned.read_text()) if tuned.exists() else {}
    for item in sets:
        key, _, value = item.partition("=")
        group, _, field = key.partition(".")
        data.setdefault(group, {})[field] = yaml.safe_load(value)
    acfg = dict(data.get("agent", {}))
    net = NetworkConfig(**acfg.pop("network", {}))
    cls = MAPPOConfig if agent == "mappo" else IPPOConfig
    return cls(network=net, **acfg), TrainerConfig(**data.get("trainer", {}))


def evaluate(trainer: PPOTrainer, env, params, saved: dict, episodes: int, key) -> dict:
    """Greedy play of one saved agent on ``episodes`` fresh episodes (one each per slot):
    mean return over present agents (and per team), and the env's task metrics at the
    episode's end."""
    agent = trainer.agent
    vec = VecEnv(LogEpisode(ClipAction(env)), episodes, critic_obs=trainer.critic_obs)
    stats = saved["normalizer"].get("obs_stats")
    teams = tuple(env.team_index)

    def norm(obs):
        if stats is None:
            return obs
        return jax.tree.map(
            lambda x, st: normalize(x, *slot_stats(st, teams)),
            obs,
            stats,
            is_leaf=lambda x: hasattr(x, "mean"),
        )

    state_a = agent.init(jax.random.key(0)).replace(params=saved["params"])
    steps = int(params.max_steps_in_episode)

    @jax.jit
    def run(key):
        obs, state = vec.reset(key, params)

        def step(c, k):
            obs, state, done_before, out = c
            action = agent.act_greedy(state_a, norm(obs))
            obs, state, _, term, trunc, info = vec.step(k, state, action, params)
            done = term | trunc
            first = done & ~done_before
            log = info["log"]
            present = log["agent_present"]
            per = jnp.where(present, log["episode_return"], 0.0)
            rec = {"return_agents": per, "present": present.astype(jnp.float32)}
            rec.update({f"task/{n}": v for n, v in info.get("metrics", {}).items()})
            out = jax.tree.map(
                lambda o, r: jnp.where(first.reshape((-1,) + (1,) * (r.ndim - 1)), r, o),
                out,
                rec,
            )
            return (obs, state, done_before | done, out), None

        dummy = jax.eval_shape(
            lambda: vec.step(key, state, agent.act_greedy(state_a, norm(obs)), params)
        )
        zeros = {
            "return_agents": jnp.zeros(dummy[2].shape),
            "present": jnp.zeros(dummy[2].shape),
        }
        zeros.update(
            {f"task/{n}": jnp.zeros(v.shape) for n, v in dummy[5].get("metrics", {}).items()}
        )
        init = (obs, state, jnp.zeros((episodes,), bool), zeros)
        (_, _, done, out), _ = jax.lax.scan(step, init, jax.random.split(key, steps))
        return done, out

    done, out = jax.device_get(run(key))
    assert done.all(), "every evaluation episode must end within max_steps_in_episode"
    ret = out["return_agents"].sum(-1) / np.maximum(out["present"].sum(-1), 1)
    result = {"return": float(ret.mean())}
    index = np.asarray(env.team_index)
    if len(env.team_names) > 1:
        for k, name in enumerate(env.team_names):
            sl = index == k
            r = out["return_agents"][:, sl].sum(-1) / np.maximum(out["present"][:, sl].sum(-1), 1)
            result[f"team/{name}"] = float(r.mean())
    for name, v in out.items():
        if name.startswith("task/"):
            result[name] = float(np.mean(v))
            if name == "task/success":  # every agent at its goal at the episode's end
                result["task/all_success_rate"] = float(np.mean(np.asarray(v) >= 1.0 - 1e-6))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", required=True)
    ap.add_argument("--agent", choices=("ippo", "mappo"), default="ippo")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--episodes", type=int, default=256)
    ap.add_argument("--set", action="append", default=[], help="agent.x=v or trainer.x=v")
    ap.add_argument("--png", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    env, params = hordax.make(args.env)
    acfg, tcfg = load_config(args.env, args.agent, args.set)
    trainer = PPOTrainer(tcfg, acfg, env, params)
    pop = PopulationTrainer(trainer, args.seeds, seed=args.seed)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    train = jax.jit(pop.train).lower(pop.init_key(args.seed)).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    state, metrics = jax.block_until_ready(train(pop.init_key(args.seed)))
    train_s = time.perf_counter() - t0
    metrics = jax.device_get(metrics)
    saved = jax.device_get(pop.saved_agent(state))
    count = metrics["episode_count"]
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN: no episode ended yet
        curves = np.where(count > 0, metrics["episode_return_sum"] / count, np.nan).tolist()
    evals = []
    for i in range(args.seeds):
        member = jax.tree.map(lambda x, i=i: x[i], saved)
        evals.append(
            evaluate(trainer, env, params, member, args.episodes, jax.random.key(10**6 + i))
        )
    returns = np.array([e["return"] for e in evals])
    out = {
        "env": args.env,
        "agent": args.agent,
        "seeds": list(range(args.seed, args.seed + args.seeds)),
        "env_steps_per_seed": pop.resolved.env_steps,
        "agent_config": {k: v for k, v in vars(acfg).items() if k != "network"},
        "trainer_config": vars(tcfg),
        "compile_s": round(compile_s, 1),
        "train_s": round(train_s, 1),
        "train_s_per_seed_equiv": round(train_s / args.seeds, 1),
        "loadavg_before": load0,
        "loadavg_after": os.getloadavg(),
        "eval_episodes": args.episodes,
        "eval": evals,
        "eval_return_mean": float(returns.mean()),
        "eval_return_std": float(returns.std()),
        "train_curves": [[None if np.isnan(v) else v for v in row] for row in curves],
    }
    for key in evals[0]:
        vals = np.array([e[key] for e in evals])
        out[f"eval_mean/{key}"] = float(vals.mean())
        out[f"eval_std/{key}"] = float(vals.std())
    line = strict_json.dumps(out)
    print(line, flush=True)
    if args.json:
        Path(args.json).write_text(line + "\n")
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        c = np.array(curves)
        x = (np.arange(c.shape[1]) + 1) * pop.resolved.steps_per_update
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.plot(x, np.nanmean(c, 0), label=f"{args.agent} mean of {args.seeds} seeds")
        ax.fill_between(x, np.nanmin(c, 0), np.nanmax(c, 0), alpha=0.3, label="min-max")
        ax.set_xlabel("env steps (per seed)")
        ax.set_ylabel("training episode return")
        ax.set_title(f"{args.env}: eval {returns.mean():.2f} ± {returns.std():.2f}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.png, dpi=100)


if __name__ == "__main__":
    main()
