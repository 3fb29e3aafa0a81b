"""How far a held-out map's observations lie from the training maps': per-feature shift in
training standard deviations, and how often road rows of each type point behind the agent.

    python benchmarks/driving_obs_shift.py                       # the tuned config's split
    python benchmarks/driving_obs_shift.py --undirected-lines    # road edges/lines turned round

The scripted route follower drives ``--episodes`` fresh episodes on each side (4 agents +
4 background cars, 8 partners, 32 road points, 8 route waypoints: the tuned config's
observation); every observation of an active agent counts. Printed: the features whose
held-out values lie farthest from the training mean (mean |z|, z = (x - mean) / std of the
training observations, clipped to 10 as the normalizer does), and per road type the share
of valid road rows whose direction cosine (ego frame) is negative. RESULTS.md 13d.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.driving.env import Drive
from hordax.envs.driving.expert import route_follower
from hordax.envs.driving.roadgraph import ROAD_TYPES


def observations(scenes, episodes: int, undirected: bool) -> tuple[np.ndarray, Drive]:
    """``f32[N, D]``: every observation an active agent acted on."""
    env = Drive(
        scenes=scenes,
        num_agents=4,
        num_background=4,
        max_partners=8,
        max_road_points=32,
        route_points=8,
        undirected_lines=undirected,
    )
    params = env.default_params

    def episode(key):
        obs, state = env.reset(key, params)

        def body(carry, k):
            obs, state = carry
            act = route_follower(env, state, params)
            nxt_obs, nxt, _, _, _, _ = env.step(k, state, act, params)
            return (nxt_obs, nxt), (obs, env.agent_mask(state, params))

        steps = int(params.max_steps_in_episode)
        return jax.lax.scan(body, (obs, state), jax.random.split(key, steps))[1]

    obs, mask = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(0), episodes))
    return np.asarray(obs)[np.asarray(mask)], env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", default="USA_Roundabout-1,DEU_Merging-1")
    ap.add_argument("--test", default="DEU_Kackertstrasse-1")
    ap.add_argument("--episodes", type=int, default=128)
    ap.add_argument("--undirected-lines", action="store_true")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    train, env = observations(args.train.split(","), args.episodes, args.undirected_lines)
    test, _ = observations(args.test.split(","), args.episodes, args.undirected_lines)
    mean, std = train.mean(0), train.std(0)
    z = np.clip((test - mean) / np.sqrt(std**2 + 1e-8), -10, 10)
    names = []
    for part, rows in env.split_observation(jnp.zeros(env.observation_size)).items():
        width = rows.shape[-1] if rows.ndim > 1 else 1
        names += [f"{part}[{i // width}].{i % width}" for i in range(rows.size)]
    print(f"{len(train)} training and {len(test)} held-out observations, D = {train.shape[1]}")
    print("| feature (row.column) | train mean | train std | held-out mean | mean abs z |")
    print("|---|---:|---:|---:|---:|")
    shift = np.abs(z).mean(0)
    for i in np.argsort(-shift)[: args.top]:
        print(
            f"| {names[i]} | {mean[i]:.3f} | {std[i]:.3f} | {test[:, i].mean():.3f} | "
            f"{shift[i]:.2f} |"
        )
    print("| road type | training rows pointing backwards | held-out |")
    print("|---|---:|---:|")
    for name, code in ROAD_TYPES.items():
        if code == 0:
            continue
        cells = []
        for o in (train, test):
            rows = np.asarray(env.split_observation(jnp.asarray(o))["roads"])  # [N, K_r, 11]
            sel = (rows[..., 0] > 0.5) & (rows[..., 5 + code] > 0.5)  # valid, type one-hot
            cos = rows[..., 4][sel]
            cells.append(f"{100 * (cos < 0).mean():.1f} % of {sel.sum()}" if sel.any() else "-")
        print(f"| {name} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
