"""How far two rollouts of a Shadow Hand task part when one input changes by a hair: MJX
(the env's jitted step) against MuJoCo C's ``mj_step`` in float64 (RESULTS 31).

Each rollout starts from ``reset(key)``; "landing" perturbs the first control step, "rest"
the step after ``--settle`` steps at home (the object lying in the palm); the actions are
``U(-1, 1)`` from the perturbed step on. The perturbation: one action entry changed by
``--eps`` (default 1e-6, a few float32 ulps of its joint target). Printed: the largest
|qpos difference| over the next ``--window`` control steps, per reset key.

``--x64`` runs MJX in float64 (the state and params cast) and perturbs the object's x
position by ``--eps`` (try 1e-15) instead of an action.

    python benchmarks/manip_contact_parting.py --env Manip-HandCubeRotateZ-v0
    python benchmarks/manip_contact_parting.py --env Manip-HandCubeRotateZ-v0 --x64 --eps 1e-15
"""

from __future__ import annotations

import argparse

import jax


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Manip-HandCubeRotateZ-v0")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--keys", type=int, default=4)
    ap.add_argument("--settle", type=int, default=20)
    ap.add_argument("--window", type=int, default=20)
    ap.add_argument("--x64", action="store_true")
    args = ap.parse_args()
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import mujoco
    import numpy as np

    import hordax
    from hordax.envs.manipulation import physics

    env, params = hordax.make(args.env)
    dtype = jnp.float64 if args.x64 else jnp.float32

    def cast(tree):
        return jax.tree.map(
            lambda x: x.astype(dtype) if getattr(x, "dtype", None) == jnp.float32 else x, tree
        )

    params = cast(params)
    step = jax.jit(env.step_env)
    model = physics.load_model(env.model_file)
    low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    home, scale = np.asarray(env.home, np.float64), np.asarray(params.action_scale, np.float64)

    def mjx_run(state, actions):
        out = []
        for t, a in enumerate(actions):
            _, state, _, _, _ = step(jax.random.key(t), state, a, params)
            out.append(np.asarray(state.qpos, np.float64))
        return np.stack(out)

    def c_run(qpos, qvel, actions):
        data, out = mujoco.MjData(model), []
        data.qpos[:], data.qvel[:] = qpos, qvel
        for a in np.asarray(actions, np.float64):
            data.ctrl[:] = np.clip(home + scale * np.clip(a, -1.0, 1.0), low, high)
            for _ in range(env.n_substeps):
                mujoco.mj_step(model, data)
            out.append(data.qpos.copy())
        return np.stack(out)

    for case, first in (("landing", 0), ("rest", args.settle)):
        mjx_part, c_part = [], []
        for seed in range(args.keys):
            _, state = jax.jit(env.reset)(jax.random.key(seed), params)
            state = cast(state)
            acts = jax.random.uniform(
                jax.random.key(50 + seed), (first + args.window, env.nu), dtype, -1.0
            )
            acts = acts.at[:first].set(0.0)
            q0, v0 = np.asarray(state.qpos, np.float64), np.asarray(state.qvel, np.float64)
            if args.x64:
                moved = state.replace(qpos=state.qpos.at[env.obj_qadr].add(args.eps))
                other, q1 = acts, q0.copy()
                q1[env.obj_qadr] += args.eps
            else:
                moved, other, q1 = state, acts.at[first, 5].add(args.eps), q0
            w = slice(first, first + args.window)
            mjx_part.append(np.abs(mjx_run(state, acts)[w] - mjx_run(moved, other)[w]).max())
            c_part.append(np.abs(c_run(q0, v0, acts)[w] - c_run(q1, v0, other)[w]).max())
        mjx_s, c_s = (np.array2string(np.array(x), precision=2) for x in (mjx_part, c_part))
        print(f"{args.env} {case}: MJX ({np.dtype(dtype).name}) {mjx_s}  C (float64) {c_s}")


if __name__ == "__main__":
    main()
