"""What hordax's face-contact fix costs: the cube env's ``jit(vmap(step))`` at 256 envs, 20
random-action steps after 5 to settle, with hordax's face contacts or (``--mjx-contacts``)
MJX's own (RESULTS 34).

    python benchmarks/manip_face_contacts_cost.py [--mjx-contacts]
"""

from __future__ import annotations

import argparse
import time

import jax

NUM_ENVS, SETTLE, STEPS = 256, 5, 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mjx-contacts", action="store_true", help="MJX's own face contacts")
    args = ap.parse_args()
    from mujoco.mjx._src import collision_convex

    import hordax
    from hordax.envs.manipulation import physics

    if args.mjx_contacts:
        collision_convex._create_contact_manifold = physics._MJX_CREATE_CONTACT_MANIFOLD
    env, params = hordax.make("Manip-HandCubeRotateZ-v0")
    keys = jax.random.split(jax.random.key(0), NUM_ENVS)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    action = jax.random.uniform(jax.random.key(1), (NUM_ENVS, env.nu), minval=-1.0)
    start = time.perf_counter()
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    step = step.lower(keys, state, action, params).compile()
    compile_s = time.perf_counter() - start
    for _ in range(SETTLE):  # the cubes land in the palm
        state = step(keys, state, action, params)[1]
    jax.block_until_ready(state)
    start = time.perf_counter()
    for _ in range(STEPS):
        state = step(keys, state, action, params)[1]
    jax.block_until_ready(state)
    per_step = (time.perf_counter() - start) / STEPS
    which = "MJX's" if args.mjx_contacts else "hordax's"
    print(f"{which} face contacts: compile {compile_s:.1f} s, {NUM_ENVS} envs x step "
          f"{per_step * 1e3:.0f} ms = {NUM_ENVS / per_step:.0f} env steps/s")  # fmt: skip


if __name__ == "__main__":
    main()
