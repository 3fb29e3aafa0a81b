"""Greedy evaluation of a saved aerial training run on fresh episodes (interim: until
``hordax eval`` lands on main, then use that).

    PYTHONPATH=$PWD python benchmarks/aerial_eval.py RUN_DIR [EPISODES]

Loads ``config.yaml`` and ``params.msgpack`` (normalizer statistics included), runs
EPISODES (default 512) fresh episodes on seeds the training never used (key 12345), the
mean action of the policy, and prints one JSON line: the return, every task metric at the
episode's end with a 95 % interval, its per-step mean over the episode, and the step and
height of the first crashes.
"""

import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization
from omegaconf import OmegaConf

import hordax
from hordax import strict_json
from hordax.training.config import TrainConfig
from hordax.training.ensemble.members import greedy_policy, member_agent
from hordax.training.trainers.registry import algorithm

run_dir = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 512
raw = OmegaConf.load(os.path.join(run_dir, "config.yaml"))
raw = OmegaConf.masked_copy(raw, [k for k in raw if k != "hydra"])
schema = OmegaConf.structured(TrainConfig)
schema.agent = OmegaConf.structured(algorithm(raw.agent.name).config)
cfg = OmegaConf.to_object(OmegaConf.merge(schema, raw))
env, params = hordax.make(cfg.env.id, params=dict(cfg.env.params), **dict(cfg.env.kwargs))
with open(os.path.join(run_dir, "params.msgpack"), "rb") as f:
    saved = serialization.msgpack_restore(f.read())
stats = (saved.get("normalizer") or {}).get("obs_stats")
stats = (
    None
    if stats is None
    else {"mean": jnp.asarray(stats["mean"]), "var": jnp.asarray(stats["var"])}
)
agent = member_agent(cfg.agent.name, cfg.agent, env, params)
act = greedy_policy(agent, algo=cfg.agent.name)
p = jax.tree.map(jnp.asarray, saved["params"])
T = params.max_steps_in_episode


def episode(key):
    k0, key = jax.random.split(key)
    obs, st = env.reset_env(k0, params)

    def body(c, k):
        obs, st, done, ret, info_last, t_end, msum = c
        ka, ks = jax.random.split(k)
        a = act(p, stats, obs)
        obs2, st2, r, term, info = env.step_env(ks, st, a, params)
        keep = ~done
        st = jax.tree.map(lambda x, y: jnp.where(keep, y, x), st, st2)
        obs = jnp.where(keep, obs2, obs)
        ret = ret + jnp.where(keep, r, 0.0)
        m = jax.tree.map(lambda x, y: jnp.where(keep, y, x), info_last, info["metrics"])
        t_end = jnp.where(keep & term, st2.time, t_end)
        msum = jax.tree.map(lambda s, y: s + jnp.where(keep, y, 0.0), msum, info["metrics"])
        return (obs, st, done | term, ret, m, t_end, msum), None

    _, _, _, _, info0 = env.step_env(key, st, jnp.zeros(4), params)
    zero = jax.tree.map(lambda x: jnp.zeros_like(x, jnp.float32), info0["metrics"])
    init = (obs, st, jnp.bool_(False), jnp.float32(0), info0["metrics"], jnp.int32(T), zero)
    (obs, st, done, ret, m, t_end, msum), _ = jax.lax.scan(body, init, jax.random.split(key, T))
    mmean = jax.tree.map(lambda s: s / t_end, msum)
    return ret, m, t_end, st, mmean


keys = jax.random.split(jax.random.key(12345), n)
t = time.perf_counter()
ret, m, t_end, st, mmean = jax.jit(jax.vmap(episode))(keys)
m = {k: np.asarray(v) for k, v in m.items()}
out = {"run": run_dir, "episodes": n, "return": float(np.mean(ret))}
for k, v in m.items():
    out[k] = round(float(v.mean()), 4)
    out[k + "_ci95"] = round(float(1.96 * v.std() / np.sqrt(n)), 4)
cr = m["crashed"] > 0
for k, v in mmean.items():
    out["episode_mean_" + k] = round(float(np.mean(v)), 4)
if "distance" in m:
    out["final_distance_no_crash"] = float(m["distance"][~cr].mean()) if (~cr).any() else None
    out["distance_p95"] = float(np.percentile(m["distance"], 95))
out["crash_times"] = np.asarray(t_end)[cr][:20].tolist()
out["crash_final_z"] = np.asarray(st.quad.pos[:, 2])[cr][:20].round(2).tolist()
out["secs"] = round(time.perf_counter() - t, 1)
out["load"] = os.getloadavg()[0]
print(strict_json.dumps(out))
