"""The throughput harness: env steps/s of batched environments, every output consumed.

A :class:`Subject` is one side of a comparison: a batch of ``num_envs`` environments
behind ``reset(key) -> state`` and ``step(key, state, action) -> (state, outputs)``.
``outputs`` is a dict holding at least ``"obs"``, ``"reward"`` and ``"done"`` (and anything
else the side's step returns: ``terminated``/``truncated``, ``info``, per-agent arrays).

:func:`compare` builds one program per subject, a jitted ``lax.scan`` of ``steps`` batch
steps whose carry holds the last step's **whole** ``outputs`` pytree. A value in a loop's
carry that leaves the program is live in every iteration, so XLA computes every output
of every step (an observation that nothing reads is otherwise deleted: the mistake that
made earlier comparisons flatter hordax). The carry also sums reward and counts ``done``
per env: the two sides of a comparison should agree on these under random actions, a
check that they run the same task.

Every subject is driven by the same ``sample(key) -> action [num_envs, ...]`` and the same
key sequence; programs are compiled apart from the timed runs (``compile_s``), warmed up
once, then timed ``repeats`` times **interleaved** (one run of each subject per round, the
order rotated each round) so drift in machine load hits every side alike. Each row
gives the median and the spread (min, max) of the runs, and the load average around them.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

#: Keys every subject's ``outputs`` dict must hold.
REQUIRED_OUTPUTS = ("obs", "reward", "done")


@dataclass(frozen=True)
class Subject:
    """One side of a throughput comparison.

    Attributes:
        name: row label, e.g. ``"hordax vmap(env.step)"`` or ``"xminigrid 0.9.3"``.
        num_envs: batch size ``B``.
        reset: ``key -> state``, the batch's initial state (any pytree).
        step: ``(key, state, action [B, ...]) -> (state, outputs)``; ``outputs`` a dict with
            at least ``obs`` (any pytree of ``[B, ...]`` arrays), ``reward`` (``f32[B]`` or
            ``f32[B, n_agents]``) and ``done`` (``bool[B]``, or ``[B, n_agents]``: the episode
            or agent ended on this step) plus everything else the step returns.
        library: the package whose env it steps (its version is recorded), e.g.
            ``"hordax"``, ``"xminigrid"``.
        path: how the env is stepped, e.g. ``"vmap(env.step)"`` or ``"VecEnv"``.
    """

    name: str
    num_envs: int
    reset: Callable[[jax.Array], Any]
    step: Callable[[jax.Array, Any, jax.Array], tuple[Any, dict]]
    library: str = "hordax"
    path: str = ""


def check_outputs(name: str, outputs: Any) -> None:
    """``ValueError`` naming the subject unless ``outputs`` is a dict with the
    :data:`REQUIRED_OUTPUTS` keys (an observation left out would not be timed)."""
    if not isinstance(outputs, dict):
        raise ValueError(
            f"subject {name!r}: step must return (state, outputs) with outputs a dict, "
            f"got {type(outputs).__name__}"
        )
    missing = [k for k in REQUIRED_OUTPUTS if k not in outputs]
    if missing:
        raise ValueError(
            f"subject {name!r}: outputs lack {missing}; every subject returns "
            f"{list(REQUIRED_OUTPUTS)} and the rest of its step's outputs"
        )


def rollout_program(
    subject: Subject, sample: Callable[[jax.Array], Any], steps: int
) -> tuple[Callable[[Any], Any], Any]:
    """``(run, carry0)``: ``run(carry) -> carry`` is ``steps`` batch steps of ``subject``.

    ``carry = (key, state, last_outputs, reward_sum f32[B], dones i32[B])``; ``carry0`` is
    built from ``subject.reset`` (``last_outputs`` zeros of the outputs' shapes).
    """
    n = subject.num_envs
    key_reset, key_run = jax.random.split(jax.random.key(0))
    state = subject.reset(key_reset)
    out_shape = jax.eval_shape(lambda s, k: subject.step(k, s, sample(k))[1], state, key_run)
    check_outputs(subject.name, out_shape)
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), out_shape)
    carry0 = (key_run, state, zeros, jnp.zeros(n, jnp.float32), jnp.zeros(n, jnp.int32))

    def per_env(x: jax.Array) -> jax.Array:
        return x.reshape(n, -1).sum(-1)

    def run(carry: tuple) -> tuple:
        def body(c: tuple, _: None) -> tuple:
            key, state, _, reward_sum, dones = c
            key, key_act, key_step = jax.random.split(key, 3)
            state, out = subject.step(key_step, state, sample(key_act))
            reward_sum = reward_sum + per_env(out["reward"].astype(jnp.float32))
            dones = dones + per_env(out["done"].astype(jnp.int32))
            return (key, state, out, reward_sum, dones), None

        return jax.lax.scan(body, carry, None, length=steps)[0]

    return run, carry0


@dataclass
class _Compiled:
    subject: Subject
    fn: Any
    carry: Any
    compile_s: float
    times: list[float]
    result: Any = None


def _compile(
    subject: Subject, sample: Callable, steps: int, place: Callable[[Any], Any] | None
) -> _Compiled:
    run, carry = rollout_program(subject, sample, steps)
    if place is not None:
        carry = place(carry)
    t = time.perf_counter()
    fn = jax.jit(run).lower(carry).compile()
    compile_s = time.perf_counter() - t
    jax.block_until_ready(fn(carry))  # warm-up: first-run allocations are not timed
    return _Compiled(subject, fn, carry, compile_s, [])


def compare(
    subjects: Sequence[Subject],
    sample: Callable[[jax.Array], Any],
    steps: int,
    repeats: int = 5,
    place: Callable[[Any], Any] | None = None,
) -> list[dict[str, Any]]:
    """Time every subject under the same action sampler; one row (dict) per subject.

    Args:
        subjects: the sides, all of the same ``num_envs``.
        sample: ``key -> action [B, ...]``, shared by every subject (same keys too).
        steps: batch steps per timed run.
        repeats: timed runs per subject, interleaved across subjects.
        place: optional ``carry -> carry`` (e.g. ``jax.device_put`` onto a sharding), applied
            to every subject's initial carry alike.

    Returns:
        rows with ``subject``, ``library``, ``path``, ``num_envs``, ``steps``, ``compile_s``,
        ``run_s`` (median), ``run_s_min``/``run_s_max``, ``sps`` (``num_envs * steps /
        run_s``), ``sps_min``/``sps_max``, ``repeats``, ``reward_per_step`` and
        ``dones_per_step`` (means over envs and steps of the last run, a same-task check),
        ``load_before``/``load_after`` (1-minute load average).
    """
    if not subjects:
        raise ValueError("subjects: give at least one")
    sizes = {s.num_envs for s in subjects}
    if len(sizes) != 1:
        raise ValueError(f"subjects: num_envs differ ({sorted(sizes)}); compare like for like")
    if int(steps) < 1 or int(repeats) < 1:
        raise ValueError(f"steps={steps}, repeats={repeats}: both must be integers >= 1")
    compiled = [_compile(s, sample, int(steps), place) for s in subjects]
    load_before = os.getloadavg()[0]
    for r in range(int(repeats)):
        order = compiled[r % len(compiled) :] + compiled[: r % len(compiled)]
        for c in order:
            t = time.perf_counter()
            c.result = jax.block_until_ready(c.fn(c.carry))
            c.times.append(time.perf_counter() - t)
    load_after = os.getloadavg()[0]
    return [_row(c, int(steps), load_before, load_after) for c in compiled]


def _row(c: _Compiled, steps: int, load_before: float, load_after: float) -> dict[str, Any]:
    n = c.subject.num_envs
    work = n * steps
    run_s = statistics.median(c.times)
    _, _, _, reward_sum, dones = c.result
    return {
        "subject": c.subject.name,
        "library": c.subject.library,
        "path": c.subject.path,
        "num_envs": n,
        "steps": steps,
        "compile_s": round(c.compile_s, 3),
        "run_s": round(run_s, 6),
        "run_s_min": round(min(c.times), 6),
        "run_s_max": round(max(c.times), 6),
        "sps": round(work / run_s, 1),
        "sps_min": round(work / max(c.times), 1),
        "sps_max": round(work / min(c.times), 1),
        "repeats": len(c.times),
        "reward_per_step": float(jnp.sum(reward_sum)) / work,
        "dones_per_step": float(jnp.sum(dones)) / work,
        "load_before": round(load_before, 2),
        "load_after": round(load_after, 2),
    }


def uniform_discrete(num_envs: int, num_actions: int, agents: int | None = None) -> Callable:
    """``key -> i32[num_envs]`` (or ``[num_envs, agents]``), uniform over ``num_actions``."""
    shape = (num_envs,) if agents is None else (num_envs, agents)
    return lambda key: jax.random.randint(key, shape, 0, num_actions)


def uniform_box(num_envs: int, low: Any, high: Any, shape: tuple[int, ...]) -> Callable:
    """``key -> f32[num_envs, *shape]``, uniform in ``[low, high)`` (broadcast to ``shape``)."""
    low = jnp.broadcast_to(jnp.asarray(low, jnp.float32), shape)
    high = jnp.broadcast_to(jnp.asarray(high, jnp.float32), shape)
    return lambda key: jax.random.uniform(key, (num_envs, *shape), jnp.float32, low, high)
