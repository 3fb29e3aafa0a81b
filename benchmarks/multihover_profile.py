"""Failure profile of a saved Aerial-MultiHover-v0 run from greedy evaluation trajectories.

``python benchmarks/multihover_profile.py RUN_DIR [--episodes 128] [--member 0]``
``[--scripted [--layer 0.8]]``

Plays the first ``--episodes`` evaluation episodes of ``hordax eval`` (same keys, greedy
actions) with ``hordax.training.evaluation``'s trajectory runner and prints where the team
success (``all_success``: every drone flying and within ``success_radius`` at the episode's
end) is lost: crashes by cause (collision or other), where and when the collisions happen,
how close the flying drones end, and how the all-within fraction grows over the episode
(does the horizon leave time to settle after the crossing?). Results: benchmarks/RESULTS.md
section 18.

``--scripted`` plays the same episodes with a hand-written reference instead of the run's
policy (:func:`hordax.envs.aerial.expert.layered_velocity_action`: a proportional velocity
command to the goal, each drone on its own altitude layer while it is far from its goal, yaw
held at 0): what a controller that knows the crossing's answer reaches within the task's 5 s.
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.aerial.expert import layered_velocity_action
from hordax.training.ensemble.members import load_config
from hordax.training.evaluation.episodes import Policy, make_trajectory
from hordax.training.evaluation.run import Evaluator, _member, eval_env, load_saved


def layered_controller(layer: float, max_speed: float) -> Policy:
    """:func:`hordax.envs.aerial.expert.layered_velocity_action` as an evaluation policy
    (``max_speed``: the env's ``params.ctrl.max_speed``)."""
    policy = Policy()
    policy.initial_carry = lambda n: ()
    policy.act = lambda params, stats, carry, obs, first, key: (
        layered_velocity_action(obs, layer=layer, max_speed=max_speed),
        carry,
    )
    return policy


def trajectories(
    run_dir: str, episodes: int, member: int, scripted: bool = False, layer: float = 0.8
):
    """``(states [T, V], params, act, observe)``: the env states of the first ``episodes``
    eval episodes, played by the run's policy (population ``member``) or by
    :func:`layered_controller` with altitude layers ``layer`` m apart; ``act(obs [V, n, d])``
    is that policy's greedy action ``[V, n, 4]``, ``observe(state)`` the env's observation
    of one state (for :func:`zero_point`)."""
    tc = load_config(run_dir)
    env, ep, _ = eval_env(tc.env.id, dict(tc.env.kwargs), dict(tc.env.params), "")
    ev = Evaluator(tc, env, ep, episodes, tc.seed)
    if scripted:
        policy, weights = layered_controller(layer, float(ep.ctrl.max_speed)), (None, None)
    else:
        group = ev.groups(load_saved(os.path.join(run_dir, "params.msgpack")))[0]
        policy, weights = group.policy, _member(group.members, member)
    traj = make_trajectory(env, ep, policy, int(ep.max_steps_in_episode))
    states, _ = jax.device_get(traj(*weights, ev.keys))

    def act(obs):
        n = obs.shape[0]
        first = jnp.zeros(n, bool)
        a, _ = policy.act(*weights, policy.initial_carry(n), jnp.asarray(obs), first, ev.keys[0])
        return np.clip(np.asarray(a), -1.0, 1.0)

    def observe(state):
        return env.observe(ev.keys[0], state, None, ep)

    observe.others = env.per_other * (env.num_agents - 1)  # the others' part's length

    return states, ep, act, observe


def zero_point(states, ep, act, observe) -> None:
    """At the episodes' final states (flying drones): the commanded speed, its gain on the
    goal error, and how far the command moves when the others' part of the observation (its
    last ``observe.others`` values) comes from another episode's final state instead: a
    policy whose command at rest moves with far-off neighbours rests at a moving point."""
    last = jax.tree.map(lambda x: x[-1], states)
    obs = np.asarray(jax.vmap(observe)(last))  # [V, n, d]
    flying = ~np.asarray(last.crashed)
    scale = float(ep.ctrl.max_speed)  # action -> m/s
    base = act(obs)[..., :3]

    def moved(o):
        return np.linalg.norm(act(o)[..., :3] - base, axis=-1)[flying] * scale

    swapped = obs.copy()
    others = observe.others
    swapped[:, :, -others:] = np.roll(obs, 1, axis=0)[:, :, -others:]
    change = moved(swapped)
    gains = []
    for axis in range(3):  # 5 cm more goal error along one world axis
        nudged = obs.copy()
        nudged[..., axis] += 0.05
        gains.append(np.median(moved(nudged)) / 0.05)
    print(
        f"at the final states: commanded speed median"
        f" {np.median(np.linalg.norm(base, axis=-1)[flying] * scale):.3f} m/s; the command's"
        f" change per m of goal error (x, y, z) {gains[0]:.1f}, {gains[1]:.1f}, {gains[2]:.1f}"
        f" /s; with the others' part from another episode it moves by median"
        f" {np.median(change):.3f} m/s (90th pct {np.percentile(change, 90):.3f})"
    )


def profile(states, ep) -> None:
    pos = np.asarray(states.quad.pos)  # f32[T, V, n, 3]
    goal = np.asarray(states.goal)[0]  # f32[V, n, 3]
    crashed = np.asarray(states.crashed)  # bool[T, V, n]: crashed before step t
    steps, num_eps, n = pos.shape[:3]
    radius = float(ep.success_radius)
    dist = np.linalg.norm(pos - goal[None], axis=-1)  # [T, V, n]
    center = np.asarray(ep.center)
    final_crash = crashed[-1]
    flying = ~final_crash
    print(
        f"{num_eps} episodes, {n} agents, {steps} steps: agents crashed {final_crash.mean():.3f},"
        f" episodes with a crash {final_crash.any(1).mean():.3f}"
    )
    gap = np.linalg.norm(pos[:, :, :, None] - pos[:, :, None], axis=-1) + 99.0 * np.eye(n)
    first = np.argmax(crashed, axis=0)  # [V, n]: first t at which the state is crashed
    coll_r, coll_dz, coll_t, other = [], [], [], 0
    for v, i in zip(*np.nonzero(final_crash), strict=True):
        t = first[v, i]
        j = int(np.argmin(gap[t, v, i]))
        if gap[t, v, i, j] <= float(ep.collision_distance) + 1e-3:
            coll_r.append(np.linalg.norm(pos[t, v, i, :2] - center[:2]))
            coll_dz.append(abs(pos[t, v, i, 2] - pos[t, v, j, 2]))
            coll_t.append(t - 1)
        else:
            other += 1
    if coll_t:
        print(
            f"crashes: {len(coll_t)} by collision (median step {np.median(coll_t):.0f}, median"
            f" {np.median(coll_r):.2f} m from the ring's centre, |dz| {np.median(coll_dz):.2f} m),"
            f" {other} otherwise"
        )
    else:
        print(f"crashes: 0 by collision, {other} otherwise")
    d_end = dist[-1][flying]
    print(
        f"flying agents at the end: {d_end.mean():.3f} m from the goal, within {radius} m"
        f" {np.mean(d_end < radius):.3f}"
    )
    # Over the last 30 steps (0.3 s): is the miss a steady offset (the policy's command is
    # zero away from the goal) or motion around the goal?
    err = pos[-30:] - goal[None]  # [30, V, n, 3]
    offset = err.mean(0)  # [V, n, 3]
    bias = np.linalg.norm(offset, axis=-1)[flying]
    wobble = np.sqrt(np.sum((err - offset[None]) ** 2, axis=-1).mean(0))[flying]
    travel = goal - pos[0]  # [V, n, 3]: the horizontal line of travel, start to goal
    travel[..., 2] = 0.0
    travel /= np.maximum(np.linalg.norm(travel, axis=-1, keepdims=True), 1e-9)
    along = np.sum(offset * travel, axis=-1)[flying]  # < 0: short of the goal
    print(
        f"flying agents over the last 30 steps: steady offset from the goal median"
        f" {np.median(bias):.3f} m (90th pct {np.percentile(bias, 90):.3f}), motion around"
        f" it (rms) median {np.median(wobble):.3f} m (90th pct {np.percentile(wobble, 90):.3f});"
        f" the offset along the line of travel: mean {along.mean():+.3f} m (< 0: short)"
    )
    within = (dist < radius) & ~crashed  # [T, V, n]
    marks = sorted({*range(100, steps, 50), steps - 1})
    print(
        "all agents within (fraction of episodes) by step: "
        + ", ".join(f"{t}: {np.all(within[t], axis=1).mean():.3f}" for t in marks)
    )
    reached = flying & (dist < radius).any(0)
    first_in = np.argmax(dist < radius, axis=0)[reached]
    print(
        f"first step within {radius} m (flying agents): median {np.median(first_in):.0f},"
        f" 90th percentile {np.percentile(first_in, 90):.0f};"
        f" never {np.mean(flying & ~reached):.3f}"
    )
    z = pos[..., 2] - center[2]
    print(
        f"altitude split at step 100 (std over agents): {np.std(z[100], axis=1).mean():.3f} m;"
        f" closest pass to the centre (flying agents, median):"
        f" {np.median(np.linalg.norm(pos[..., :2] - center[:2], axis=-1).min(0)[flying]):.3f} m"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--episodes", type=int, default=128)
    ap.add_argument("--member", type=int, default=0, help="population member")
    ap.add_argument(
        "--scripted", action="store_true", help="play layered_controller, not the run's policy"
    )
    ap.add_argument("--layer", type=float, default=0.8, help="--scripted: layer spacing (m)")
    a = ap.parse_args()
    states, ep, act, observe = trajectories(a.run_dir, a.episodes, a.member, a.scripted, a.layer)
    profile(states, ep)
    zero_point(states, ep, act, observe)


if __name__ == "__main__":
    main()
