"""Write a GIF of a driving episode on a real road map (bird's-eye view).

    python examples/driving_gif.py                                  # scripted driver -> driving.gif
    python examples/driving_gif.py --env Drive-Kackertstrasse-v0 --policy random --out rounD.gif

``--policy scripted`` drives every agent with ``hordax.envs.driving.expert.route_follower``
(pure pursuit along its lane route, IDM speed control); ``random`` samples the action
space. Agents are coloured boxes with their goals as rings, IDM background traffic is
blue-grey; an agent disappears when it reaches its goal (or crashes, with the default
``collision_behavior="remove"``). Prints the episode's goal, collision and off-road rates.
(A trained policy goes in the same loop: replace the action with the policy's.)
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
from PIL import Image

import hordax
from hordax.envs.driving.expert import route_follower


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Drive-USAIntersection-v0")
    ap.add_argument("--policy", choices=["scripted", "random"], default="scripted")
    ap.add_argument("--steps", type=int, default=91)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="driving.gif")
    args = ap.parse_args()

    # small observations: the scripted driver does not read them
    env, params = hordax.make(args.env, max_partners=8, max_road_points=32)
    space = env.action_space(params)

    def act(key, state):
        if args.policy == "random":
            return space.sample(key)
        return route_follower(env, state, params)

    step = jax.jit(lambda k, s: env.step_env(k, s, act(k, s), params))
    key = jax.random.key(args.seed)
    _, state = jax.jit(env.reset)(key, params)
    frames = [env.render(state, params)]
    for t in range(args.steps):
        _, state, _, terminated, info = step(jax.random.fold_in(key, t), state)
        frames.append(env.render(state, params))
        if bool(terminated):
            break
    m = {k: float(v) for k, v in info["metrics"].items()}
    images = [Image.fromarray(np.asarray(f)) for f in frames]
    images[0].save(args.out, save_all=True, append_images=images[1:], duration=100, loop=0)
    print(
        f"{args.env} ({args.policy}): {len(frames)} frames -> {args.out}; goal "
        f"{m['goal_rate']:.2f}, collision {m['collision_rate']:.2f}, off-road "
        f"{m['offroad_rate']:.2f}"
    )


if __name__ == "__main__":
    main()
