"""What the manipulation family's tests pay per program, on CPU (benchmarks/RESULTS.md 35).

    python benchmarks/manip_test_costs.py --env Manip-HandCubeRotateZ-v0 [--what step,eager,parts]

Built as the tests build them (``jax_disable_most_optimizations``, as ``tests/conftest.py``
sets for ``tests/envs`` and ``tests/contract``). Prints seconds:

- ``step``: ``jax.jit(env.step)`` traced, lowered, compiled, and its second run (the first
  one warms up).
- ``eager``: the env's un-jitted ``reset`` and two ``step`` calls in JAX's op-by-op mode (the
  contract's ``check_jit_matches_eager(eager="dispatch")``).
- ``parts``: each part of the contract program (``hordax.testing``: trajectories, time
  limit, vmap + batch) lowered, compiled and run at the contract's default sizes, then the
  vmap checks' un-vmapped reference (the env's own jitted ``reset``/``step`` per slot on
  the host: its first call compiles them unless ``step`` or the eager check did).

Set ``XLA_FLAGS`` to compare XLA:CPU options (e.g. ``--xla_cpu_use_fusion_emitters=false``).
"""

from __future__ import annotations

import argparse
import time

import jax

import hordax
from hordax import testing


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    jax.block_until_ready(out)
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Manip-HandCubeRotateZ-v0")
    ap.add_argument("--what", default="step,eager,parts")
    args = ap.parse_args()
    what = args.what.split(",")
    unknown = sorted(set(what) - {"step", "eager", "parts"})
    if unknown:
        ap.error(f"--what={args.what}: unknown {unknown}; allowed: step, eager, parts")
    jax.config.update("jax_disable_most_optimizations", True)
    env, params = hordax.make(args.env)
    key = jax.random.key(0)
    _, state = jax.jit(env.reset)(key, params)
    action = env.action_space(params).sample(key)
    print(f"{args.env} on {jax.devices()[0].device_kind}")

    if "step" in what:
        fn = jax.jit(env.step)
        traced, t_trace = _timed(lambda: fn.trace(key, state, action, params))
        lowered, t_lower = _timed(traced.lower)
        compiled, t_compile = _timed(lowered.compile)
        out, t_run = _timed(lambda: compiled(key, state, action, params))
        _, t_run2 = _timed(lambda: compiled(key, out[1], action, params))
        print(
            f"jit(env.step): trace {t_trace:.1f} lower {t_lower:.1f} compile {t_compile:.1f} "
            f"run {t_run2 * 1e3:.1f} ms"
        )

    if "eager" in what:
        env_u = testing._Untraced(env)  # the un-jitted reset/step the check calls
        (_, s), t_reset = _timed(lambda: env_u.reset(key, params))
        out, t_step = _timed(lambda: env_u.step(key, s, action, params))
        _, t_step2 = _timed(lambda: env_u.step(key, out[1], action, params))
        print(f"op-by-op: reset {t_reset:.1f} step {t_step:.1f} step again {t_step2:.1f}")

    if "parts" in what:
        flags = testing._flags(env, params)
        for part in testing._PARTS:
            fn = testing._compiled_part(env, part, testing._Sizes(), flags)
            lowered, t_lower = _timed(lambda fn=fn: fn.lower(params, key))
            compiled, t_compile = _timed(lowered.compile)
            data, t_run = _timed(lambda compiled=compiled: compiled(params, key))
            print(f"part {part}: lower {t_lower:.1f} compile {t_compile:.1f} run {t_run:.1f}")
            if part == "vmap":  # the un-vmapped reference: the env's own jitted reset/step
                data = jax.device_get(data)
                _, t_ref = _timed(lambda data=data: testing._reference(env, params, data))
                _, t_ref2 = _timed(lambda data=data: testing._reference(env, params, data))
                print(f"  host reference: {t_ref:.1f} (its first call), {t_ref2:.1f} again")


if __name__ == "__main__":
    main()
