"""Do the batched and single programs of a hand env's step compute the same function? The
cube's contract checks (vmap over states, vmap over params) compare ``jax.vmap(step_env)``
with a ``lax.map`` of it; this prints their largest difference per control step, in float32
(the env's dtype) and float64 (``--x64``: state and params cast, MJX's model in float64),
free-running (each program continues its own state) and teacher-forced (both programs
stepped from the ``lax.map`` state, so only that one step's difference counts).

In float64 the two programs' rounding differs at ~1e-16: a difference far above that means
the step is discontinuous somewhere (a contact chosen by the last bits), as MJX's
face-face contacts were before ``hordax.envs.manipulation.physics._distinct_face_contacts``
(benchmarks/RESULTS.md section 34). ``--mjx-contacts`` puts MJX's own contact manifold back
for a before/after comparison.

    python benchmarks/manip_cube_programs.py [--x64] [--params] [--mjx-contacts]
"""

from __future__ import annotations

import argparse

import jax


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Manip-HandCubeRotateZ-v0")
    ap.add_argument("--x64", action="store_true", help="float64 MJX")
    ap.add_argument("--params", action="store_true", help="vmap over 4 perturbed params")
    ap.add_argument("--mjx-contacts", action="store_true", help="MJX's own face contacts")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--num-envs", type=int, default=4)
    args = ap.parse_args()
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from mujoco.mjx._src import collision_convex

    import hordax
    from hordax import testing
    from hordax.envs.manipulation import physics

    if args.mjx_contacts:
        collision_convex._create_contact_manifold = physics._MJX_CREATE_CONTACT_MANIFOLD
    env, params = hordax.make(args.env)
    dtype = jnp.float64 if args.x64 else jnp.float32
    n = args.num_envs

    def cast(tree):
        floats = (jnp.float32, jnp.float64)
        return jax.tree.map(
            lambda x: x.astype(dtype) if getattr(x, "dtype", None) in floats else x, tree
        )

    if args.params:  # every env: the same key and state, params float leaf i x (1 + 0.05 i)
        batched, axes = testing.perturb_params(params, n)
        keys = jnp.stack([jax.random.key(0)] * n)
    else:  # every env: its own key and state, one shared params
        batched, axes = params, None
        keys = jax.random.split(jax.random.key(0), n)
    batched = cast(batched)
    # lax.map needs every leaf batched: the unbatched ones stacked n times
    if args.params:
        every = jax.tree.map(
            lambda ax, x: x if ax == 0 else jnp.stack([x] * n), axes, batched,
            is_leaf=lambda x: x is None,
        )  # fmt: skip
    else:
        every = jax.tree.map(lambda x: jnp.stack([x] * n), batched)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, axes)))(keys, batched)
    state = cast(state)
    vstep = jax.jit(jax.vmap(env.step_env, in_axes=(0, 0, 0, axes)))
    mstep = jax.jit(lambda k, s, a, p: jax.lax.map(lambda x: env.step_env(*x), (k, s, a, p)))
    actions = jax.random.uniform(jax.random.key(7), (args.steps, n, env.nu), jnp.float32, -1.0)
    if args.params:  # the same actions in every env too
        actions = jnp.broadcast_to(actions[:, :1], actions.shape)

    def gap(a, b):
        """``(largest |a - b|, largest |a - b| / (1e-2 + 1e-2 |b|))``: the second is the share
        of the cube's contract tolerance (``IMPACT_TOL``) used, > 1 fails it."""
        pairs = list(zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))
        absolute = max(float(jnp.abs(x - y).max()) for x, y in pairs)
        share = max(float((jnp.abs(x - y) / (1e-2 + 1e-2 * jnp.abs(y))).max()) for x, y in pairs)
        return absolute, share

    sv = sm = state
    for t in range(args.steps):
        k = jax.random.split(jax.random.key(100 + t), n)
        if args.params:
            k = jnp.stack([k[0]] * n)
        ov, om = vstep(k, sv, actions[t], batched), mstep(k, sm, actions[t], every)
        forced = vstep(k, sm, actions[t], batched)
        (free, free_share), (one, one_share) = gap(ov[:3], om[:3]), gap(forced[:3], om[:3])
        print(
            f"{args.env} {'float64' if args.x64 else 'float32'} "
            f"vmap over {'params' if args.params else 'states'}"
            f"{' (MJX contacts)' if args.mjx_contacts else ''} step {t + 1}: "
            f"free-running {free:.2e} ({free_share:.2f} of IMPACT_TOL), "
            f"teacher-forced {one:.2e} ({one_share:.2f})",
            flush=True,
        )
        sv, sm = cast(ov[1]), cast(om[1])


if __name__ == "__main__":
    main()
