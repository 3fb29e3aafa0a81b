"""Where is MJX's contact function discontinuous on the cube's trajectories (RESULTS 34)?

Float64: at each physics substep of 30 control steps (10 at home, then U(-1, 1) actions) from
``reset(seed)``, 64 copies of the state with qpos nudged by 1e-12 go through
``mjx.collision``; per geom pair with the cube, the sorted contact depths are compared with
the unnudged state's, and a pair whose depths move by > 1e-6 m (with a contact) is a jump.
Prints the first two jumps of each pair and the counts. ``--max-contacts`` sets the model's
``max_contact_points`` and ``max_geom_pairs`` (the hand's own: 15); ``--mjx-contacts`` puts
MJX's own face-contact manifold back.

    python benchmarks/manip_contact_jumps.py [--max-contacts 64] [--seeds 2] [--mjx-contacts]
"""

from __future__ import annotations

import argparse
import collections

import jax

COPIES, NUDGE, JUMP = 64, 1e-12, 1e-6


def _first_jump(geom, dist, pair):
    """``"ref -> copy"`` (the sorted depths, mm) of the first nudged copy whose contacts of
    geom ``pair`` moved by more than ``JUMP`` from copy 0's, with a contact in either; else
    ``None``. ``geom`` ``i32[COPIES, ncon, 2]``, ``dist`` ``f64[COPIES, ncon]``."""
    import numpy as np

    ref = np.sort(dist[0][(geom[0] == pair).all(1)])
    for k in range(1, len(geom)):
        cur = np.sort(dist[k][(geom[k] == pair).all(1)])
        moved = len(cur) != len(ref) or np.abs(cur - ref).max() > JUMP
        if moved and (ref.min() < 0 or (len(cur) and cur.min() < 0)):
            return f"{np.round(ref * 1e3, 3)} -> {np.round(cur * 1e3, 3)} mm"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-contacts", type=int, default=15)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--mjx-contacts", action="store_true", help="MJX's own face contacts")
    args = ap.parse_args()
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import mujoco
    import numpy as np
    from mujoco import mjx
    from mujoco.mjx._src import collision_convex

    import hordax
    from hordax.envs.manipulation import physics

    if args.mjx_contacts:
        collision_convex._create_contact_manifold = physics._MJX_CREATE_CONTACT_MANIFOLD
    env, params = hordax.make("Manip-HandCubeRotateZ-v0")
    spec = mujoco.MjSpec.from_file(physics.asset_path(env.model_file))
    for num in spec.numerics:
        if num.name in ("max_contact_points", "max_geom_pairs"):
            num.data = [args.max_contacts]
    model = spec.compile()
    mx = mjx.put_model(model)
    obj = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "object")

    def name(g):
        kind = mujoco.mjtGeom(model.geom_type[g]).name[7:]
        return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, int(g)) or f"g{g}/{kind}"

    def contacts(q, v, c):
        data = mjx.make_data(mx).replace(qpos=q, qvel=v, ctrl=c)
        return mjx.collision(mx, mjx.kinematics(mx, data))._impl.contact

    step = jax.jit(lambda d: mjx.step(mx, d))
    collide = jax.jit(jax.vmap(contacts))
    low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    home, scale = np.asarray(env.home, np.float64), np.asarray(params.action_scale, np.float64)
    rng = np.random.default_rng(0)
    jumps = collections.Counter()
    for seed in range(args.seeds):
        _, st = jax.jit(env.reset)(jax.random.key(seed), params)
        d = mjx.make_data(mx).replace(
            qpos=jnp.asarray(st.qpos, jnp.float64), qvel=jnp.asarray(st.qvel, jnp.float64)
        )
        for t in range(30):
            a = rng.uniform(-1, 1, env.nu) if t >= 10 else np.zeros(env.nu)
            d = d.replace(ctrl=jnp.asarray(np.clip(home + scale * a, low, high)))
            for j in range(env.n_substeps):
                nudge = NUDGE * rng.normal(size=(COPIES, model.nq))
                q = d.qpos[None] + jnp.asarray(nudge).at[0].set(0.0)
                c = collide(q, jnp.tile(d.qvel, (COPIES, 1)), jnp.tile(d.ctrl, (COPIES, 1)))
                geom, dist = np.asarray(c.geom), np.asarray(c.dist)
                for p in {tuple(p) for p in geom[0] if (p >= 0).all() and obj in p}:
                    moved = _first_jump(geom, dist, p)
                    if moved is None:
                        continue
                    pair = f"{name(p[0])}-{name(p[1])}"
                    jumps[pair] += 1
                    if jumps[pair] <= 2:
                        print(f"seed {seed} step {t} substep {j}: {pair} depths {moved}")
                d = step(d)
    which = "MJX's" if args.mjx_contacts else "hordax's"
    print(f"{which} face contacts, max_contact_points={args.max_contacts}, {args.seeds} seeds: "
          f"substep states with a pair that jumps under a {NUDGE:g} nudge: {dict(jumps)} "
          f"(of {args.seeds * 30 * env.n_substeps})")  # fmt: skip


if __name__ == "__main__":
    main()
