"""Who a trained driving policy collides with: every controlled agent's first collision in a
run's evaluation episodes, by partner and direction.

Plays one member of a run greedily on the episodes ``hordax eval`` uses (same seed, same
keys, same clipped actions: :func:`~hordax.training.evaluation.episodes.make_trajectory`),
then, for each agent whose ``collided`` flag rises, looks at the step before it: which
object its box overlaps after the step (a **traffic** vehicle or another **controlled**
agent), and where that object was in the agent's frame (**ahead**: more than 2 m in front
of its centre, **behind**: more than 2 m behind, else **beside**), with both speeds. Usage
(benchmarks/RESULTS.md, section 13h)::

    hordax train env=Drive-Maps-v0 agent=ippo population.size=3 hydra.run.dir=runs/drive
    python benchmarks/driving_collisions.py runs/drive --member 0 --split test --episodes 256
"""

from __future__ import annotations

import argparse
import collections
import os

import jax
import numpy as np

from hordax.envs.driving.geometry import box_corners, boxes_overlap, to_frame
from hordax.training.ensemble.members import load_config
from hordax.training.evaluation.episodes import make_trajectory
from hordax.training.evaluation.policy import load_saved
from hordax.training.evaluation.run import Evaluator, _member, eval_env


def first_collisions(states, num_agents: int) -> list[dict]:
    """One row per (episode, agent) whose ``collided`` flag rises in ``states`` (the env
    states ``[T, V]`` of a trajectory): the step, the partner object and its place."""
    col = np.asarray(states.collided)  # [T, V, n]
    rows = []
    for v, i in zip(*np.nonzero(col[-1]), strict=True):
        t = int(np.argmax(col[:, v, i]))  # the first state after the colliding step
        now = jax.tree.map(lambda x, t=t, v=v: np.asarray(x[t, v]), states)
        before = jax.tree.map(lambda x, t=t, v=v: np.asarray(x[t - 1, v]), states)
        corners = np.asarray(box_corners(now.pos, now.yaw, now.size[:, 0], now.size[:, 1]))
        hit = np.asarray(boxes_overlap(corners[i][None, None], corners[None]))[0]
        hit = hit & before.exists
        hit[i] = False
        row = {"episode": int(v), "agent": int(i), "step": t - 1, "partner": None}
        if hit.any():
            j = int(np.argmax(hit))
            ahead, left = np.asarray(to_frame(before.pos[j], before.pos[i], before.yaw[i]))
            where = "ahead" if ahead > 2.0 else ("behind" if ahead < -2.0 else "beside")
            row.update(
                partner="controlled" if j < num_agents else "traffic",
                where=where,
                ahead_m=float(ahead),
                left_m=float(left),
                speed=float(np.linalg.norm(before.vel[i])),
                partner_speed=float(np.linalg.norm(before.vel[j])),
                pos=[round(float(x), 2) for x in before.pos[i]],
                history=history(states, int(v), int(i), j, t),
            )
        rows.append(row)
    return rows


def history(states, v: int, i: int, j: int, t: int, steps: int = 16) -> list[tuple]:
    """``(speed, partner speed, bumper gap)`` of agent ``i`` and object ``j`` in episode
    ``v`` over the states ``t - steps + 1 .. t`` (m/s, m/s, m: the gap along the agent's
    heading between its front and the partner's centre less half the partner's length)."""
    out = []
    for k in range(max(0, t - steps + 1), t + 1):
        pos, yaw = np.asarray(states.pos[k, v]), np.asarray(states.yaw[k, v])
        vel, size = np.asarray(states.vel[k, v]), np.asarray(states.size[k, v])
        ahead = float(to_frame(pos[j], pos[i], yaw[i])[0])
        gap = ahead - 0.5 * (size[i, 0] + size[j, 0])
        out.append(
            tuple(round(float(x), 1) for x in (np.linalg.norm(vel[i]), np.linalg.norm(vel[j]), gap))
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--member", type=int, default=0, help="population member (0: the first)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--episodes", type=int, default=256)
    ap.add_argument(
        "--list",
        action="store_true",
        help="print every collision, with (speed, partner speed, bumper gap) over 1.6 s before",
    )
    args = ap.parse_args()

    tc = load_config(args.run_dir)
    env, params, cap = eval_env(tc.env.id, dict(tc.env.kwargs), dict(tc.env.params), args.split)
    ev = Evaluator(tc, env, params, args.episodes, tc.seed, True, cap)
    group = ev.groups(load_saved(os.path.join(args.run_dir, "params.msgpack")))[0]
    if not 0 <= args.member < group.members.size:
        ap.error(f"--member {args.member}: the run has members 0..{group.members.size - 1}")
    traj = make_trajectory(env, params, group.policy, ev.max_steps + 1)
    states, _ = jax.device_get(traj(*_member(group.members, args.member), ev.keys))
    rows = first_collisions(states, env.num_agents)
    agents = int(np.asarray(states.spawned)[-1].sum())
    offroad = int(np.asarray(states.offroad)[-1].sum())
    print(
        f"{tc.env.id} split={args.split!r}, member {args.member} (seed {tc.seed + args.member}),"
        f" {args.episodes} episodes: {agents} agents, {len(rows)} collided, {offroad} off-road"
    )
    counts = collections.Counter((r["partner"], r.get("where")) for r in rows)
    for (partner, where), k in counts.most_common():
        print(f"  {k:4d}  into a {partner} object {where}" if partner else f"  {k:4d}  no partner")
    if args.list:
        for r in rows:
            print({k: round(x, 2) if isinstance(x, float) else x for k, x in r.items()})


if __name__ == "__main__":
    main()
