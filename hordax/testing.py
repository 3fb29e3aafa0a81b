"""Contract checks every hordax environment passes (and the gymnax envs hordax trains on).

An env author checks a new environment in three lines::

    import hordax
    from hordax.testing import check_env
    check_env(*hordax.make("My-Env-v0"))

``check_env`` runs every applicable ``check_*`` below; each raises ``AssertionError`` naming
the env, the property, the step and the pytree leaf at fault. The pytest suite in
``tests/contract/`` calls them once per registered id. What is checked (docs/env_protocol.md,
research/style.md section 7):

- :func:`check_traces_once`: jitted ``reset``/``step`` trace once over new keys and states.
- :func:`check_spaces_and_dtypes`: observations and sampled actions inside their spaces
  (``space.contains`` asserted), reward ``f32[]`` (``f32[n_agents]``), ``terminated`` and
  ``truncated`` ``bool[]``, ``state.time`` ``int32[]``, the same ``info`` structure every step.
- :func:`check_determinism`, :func:`check_jit_matches_eager`: same key, same trajectory.
- :func:`check_vmap_states`, :func:`check_vmap_params`: ``vmap`` equals separate calls, also
  over different params instances (domain randomization).
- :func:`check_terminal_semantics`: time limit, auto-reset, ``info["final_observation"]``,
  ``step_env`` never folds the time limit into ``terminated``.
- :func:`check_hordax_info`: ``info["metrics"]``/``info["reward_terms"]`` (hordax envs).
- :func:`check_fresh_resets`: initial states differ across auto-reset episodes.
- :func:`check_batch_resets`: :class:`~hordax.envs.wrappers.VecEnv`'s amortized fresh resets
  (a pool smaller than the batch, overflow rounds included) equal gymnax's in-step resets.
- :func:`check_finite`, :func:`check_nonfinite_actions`: finite states over a random episode,
  and under NaN/inf actions through :class:`~hordax.envs.wrappers.ClipAction`.
- :func:`check_multi_agent`: agent-axis shapes of a :class:`MultiAgentEnvironment`, its teams
  and per-agent (unpadded) spaces.
- :func:`check_critic_observation`: an env's optional critic observation (MAPPO's global
  state, privileged state for asymmetric critics) lies in its space.
- :func:`check_render`: ``render`` returns ``uint8[H, W, 3]``.

The jitted helpers take the env as a static argument, so XLA compilations are cached per env
*instance*: reuse one ``(env, params)`` across checks to compile each program once. The checks
share a few compiled programs per env (the "contract program" below: trajectories, time-limit
records, vmapped, pooled and un-vmapped steps in three jitted parts) and compare its outputs
on the host; the outputs of the newest few ``(env, params, key)`` are kept, so running one
env's checks one after another (as ``tests/conftest.py`` orders the suite) computes them once.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
from collections.abc import Mapping
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment as gx_env
from gymnax.environments import spaces

from hordax.envs.core import Environment as HordaxEnvironment
from hordax.envs.core import (
    has_critic_observation,
    innermost,
    is_multi_agent,
    supports_step_no_reset,
)
from hordax.envs.spaces import MultiDiscrete
from hordax.envs.wrappers.clip import clip_action
from hordax.envs.wrappers.vector import VecEnv

__all__ = [
    "Trajectory",
    "assert_in_space",
    "assert_trees_close",
    "batch_rollout",
    "check_batch_resets",
    "check_critic_observation",
    "check_determinism",
    "check_env",
    "check_fresh_resets",
    "check_finite",
    "check_hordax_info",
    "check_jit_matches_eager",
    "check_multi_agent",
    "check_nonfinite_actions",
    "check_render",
    "check_spaces_and_dtypes",
    "check_terminal_semantics",
    "check_traces_once",
    "check_vmap_params",
    "check_vmap_states",
    "has_box_actions",
    "nonfinite_actions",
    "is_hordax_env",
    "perturb_params",
    "rollout",
    "terminal_rollout",
    "unwrapped",
]

#: Top-level ``info`` keys of ``step``: gymnax's three, hordax's two dicts, multi-agent status.
HORDAX_INFO_KEYS = frozenset({"metrics", "reward_terms"})
GYMNAX_INFO_KEYS = frozenset({"terminated", "truncated", "final_observation"})
MULTI_AGENT_INFO_KEYS = frozenset({"agent_terminated", "agent_mask"})

ROLLOUT_STEPS = 200  # random-action episode length for spaces/finiteness/multi-agent checks
_TOL = {"rtol": 1e-5, "atol": 1e-5}
#: Float tolerance of the batched-vs-single and jit-vs-eager comparisons for envs with
#: contact physics (MJX with a constraint solver: Manip-Push-v0, the Shadow Hand tasks).
#: Two XLA programs of the same step (vmapped or not, fused differently) round differently
#: in the last ulp, and stiff contacts amplify that within a few control steps: measured
#: 2.7e-5 rad/s on Push's resting cube's angular velocity, 5.2e-5 rad/s on the hand's joint
#: velocities (2.3 rad/s) at step 2, against 1e-5 elsewhere. 1e-3 keeps a 20x margin; the
#: defects these checks exist for (a slot's data mixed up, params ignored, a branch taken
#: differently) give differences of the size of the values themselves.
CONTACT_TOL = {"rtol": 1e-3, "atol": 1e-3}
#: The same comparisons for an object that lands on edges and corners (the Shadow Hand's
#: cube): its impacts amplify float32 rounding further, measured up to 3.5e-3 rad/s on
#: 0.64 rad/s within the contract's 4 steps and at most 0.10 of this tolerance over 8 steps
#: (benchmarks/RESULTS.md section 34), while the same programs in float64 agree to 1e-12 (so
#: the gap is rounding, not two different functions). A defect of the size of the values
#: (a slot mixed up, params ignored, a branch taken differently) still fails it.
IMPACT_TOL = {"rtol": 1e-2, "atol": 1e-2}
_fresh_tag = itertools.count()


# --------------------------------------------------------------------------------------------
# small utilities


def unwrapped(env: Any) -> Any:
    """The innermost environment under any stack of wrappers (``_env`` chain)."""
    return innermost(env)


def is_hordax_env(env: Any) -> bool:
    """True for hordax's own envs (they also owe ``info["metrics"]``/``["reward_terms"]``)."""
    return isinstance(unwrapped(env), HordaxEnvironment)


def has_box_actions(env: Any, params: Any) -> bool:
    """True when the action space is a continuous ``Box``."""
    space = env.action_space(params)
    return isinstance(space, spaces.Box) and jnp.issubdtype(space.dtype, jnp.floating)


def _name(env: Any) -> str:
    try:
        return str(env.name)
    except Exception:  # a name is only for messages
        return type(env).__name__


def _fail(env: Any, prop: str, msg: str) -> None:
    raise AssertionError(f"[{_name(env)}] {prop}: {msg}")


def _key(key: jax.Array | None, seed: int = 0) -> jax.Array:
    return jax.random.key(seed) if key is None else key


def _params(env: Any, params: Any) -> Any:
    return env.default_params if params is None else params


def _with_max_steps(params: Any, max_steps: int) -> Any:
    if not hasattr(params, "max_steps_in_episode"):
        raise AssertionError("params have no max_steps_in_episode field (the time limit)")
    return params.replace(max_steps_in_episode=max_steps)


def _to_np(x: Any) -> np.ndarray:
    if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(x)


def _flat(tree: Any) -> tuple[list[tuple[str, Any]], Any]:
    leaves, treedef = jax.tree_util.tree_flatten_with_path(tree)
    return [(jax.tree_util.keystr(path), leaf) for path, leaf in leaves], treedef


def _aval(x: Any) -> str:
    if isinstance(x, jax.Array | jax.ShapeDtypeStruct):
        return str(jax.typeof(x))
    return f"python {type(x).__name__}"


def assert_trees_close(
    actual: Any,
    expected: Any,
    what: str,
    *,
    exact: bool = False,
    rtol: float = 1e-5,
    atol: float = 1e-5,
) -> None:
    """Same structure, shapes and values; floats ``allclose`` unless ``exact`` (NaN == NaN).

    Raises ``AssertionError`` naming ``what``, the leaf path and the first differing index.
    """
    fa, ta = _flat(actual)
    fe, te = _flat(expected)
    if ta != te:
        raise AssertionError(f"{what}: pytree structure differs:\n  {ta}\nvs\n  {te}")
    for (path, a), (_, e) in zip(fa, fe, strict=True):
        a, e = _to_np(a), _to_np(e)
        if a.shape != e.shape:
            raise AssertionError(f"{what}: leaf {path or '<root>'} shape {a.shape} vs {e.shape}")
        inexact = np.issubdtype(a.dtype, np.inexact) or np.issubdtype(e.dtype, np.inexact)
        if not inexact:
            same = a == e
        elif exact:
            same = (a == e) | (np.isnan(a) & np.isnan(e))
        else:
            same = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        if not np.all(same):
            bad = np.argwhere(~np.asarray(same))
            idx = tuple(bad[0]) if bad.size else ()
            diff = ""
            if inexact:
                delta = np.abs(a.astype(np.float64) - e.astype(np.float64))
                diff = f", max |diff| {np.nanmax(delta):.3g}"
            raise AssertionError(
                f"{what}: leaf {path or '<root>'} differs at {int(np.sum(~same))} element(s)"
                f"{diff}; first at index {idx}: {a[idx]!r} vs {e[idx]!r}"
            )


# --------------------------------------------------------------------------------------------
# spaces


def _space_contains(space: Any, x: Any) -> jax.Array:
    """``space.contains(x)`` (as a jnp bool), recursing into ``Dict``/``Tuple`` spaces."""
    if isinstance(space, spaces.Dict):
        get = (lambda k: x[k]) if isinstance(x, Mapping) else (lambda k: getattr(x, k))
        return jnp.all(jnp.stack([_space_contains(s, get(k)) for k, s in space.spaces.items()]))
    if isinstance(space, spaces.Tuple):
        return jnp.all(
            jnp.stack([_space_contains(s, xi) for s, xi in zip(space.spaces, x, strict=True)])
        )
    return jnp.asarray(space.contains(x), bool)


def _space_layout_errors(space: Any, x: Any, batch: tuple[int, ...], where: str) -> list[str]:
    """Shape/dtype mismatches between ``x`` (with leading ``batch`` axes) and ``space``."""
    if isinstance(space, spaces.Dict):
        get = (lambda k: x[k]) if isinstance(x, Mapping) else (lambda k: getattr(x, k))
        return [
            err
            for k, s in space.spaces.items()
            for err in _space_layout_errors(s, get(k), batch, f"{where}[{k!r}]")
        ]
    if isinstance(space, spaces.Tuple):
        return [
            err
            for i, (s, xi) in enumerate(zip(space.spaces, x, strict=True))
            for err in _space_layout_errors(s, xi, batch, f"{where}[{i}]")
        ]
    if not isinstance(space, spaces.Box | spaces.Discrete | MultiDiscrete):
        return []
    errors = []
    shape = tuple(jnp.shape(x))
    want = batch + tuple(space.shape)
    if shape != want:
        errors.append(f"{where} has shape {shape[len(batch) :]}, space says {tuple(space.shape)}")
    dtype, want_dtype = jnp.result_type(x), jnp.dtype(space.dtype)
    if dtype != want_dtype:
        errors.append(f"{where} has dtype {dtype}, space says {want_dtype}")
    return errors


def assert_in_space(space: Any, x: Any, what: str) -> None:
    """Assert ``bool(space.contains(x)) is True`` and that shape and dtype match ``space``."""
    errors = _space_layout_errors(space, x, (), what)
    if errors:
        raise AssertionError("; ".join(errors))
    inside = bool(_space_contains(space, x))
    if inside is not True:
        raise AssertionError(f"{what} is outside {space!r}: {_to_np(x)!r}")


def _first_outside(env: Any, prop: str, flags: Any, values: Any, space: Any, what: str) -> None:
    flags = np.asarray(flags)
    if not flags.all():
        t = int(np.argmin(flags))
        value = jax.tree.map(lambda v: _to_np(v)[t], values)
        _fail(
            env,
            prop,
            f"{what} at step {t} is outside observation/action space "
            f"(space.contains is False in {int((~flags).sum())} of {flags.size} steps): "
            f"{value!r} not in {space!r}",
        )


# --------------------------------------------------------------------------------------------
# jitted rollouts (env static: compiled once per env instance and length)


@struct.dataclass
class Trajectory:
    """A random-action rollout through the inherited, auto-resetting ``step`` (leading ``T``).

    ``obs``/``state`` are what the action was taken in; ``next_*`` what ``step`` returned
    (after auto-reset); ``*_in_space`` are ``space.contains`` evaluated in the loop.
    """

    obs: Any
    state: Any
    action: Any
    next_obs: Any
    next_state: Any
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    info: Any
    obs_in_space: jax.Array
    next_obs_in_space: jax.Array
    final_obs_in_space: jax.Array
    action_in_space: jax.Array


def _rollout_impl(env: Any, params: Any, key: jax.Array, num_steps: int, actions: Any):
    key_reset, key_steps = jax.random.split(key)
    obs0, state0 = env.reset(key_reset, params)
    obs_space = env.observation_space(params)
    act_space = env.action_space(params)

    def body(carry, xs):
        obs, state = carry
        k, fixed_action = xs
        k_act, k_step = jax.random.split(k)
        action = act_space.sample(k_act) if fixed_action is None else fixed_action
        next_obs, next_state, reward, terminated, truncated, info = env.step(
            k_step, state, action, params
        )
        final = info.get("final_observation", next_obs) if isinstance(info, Mapping) else next_obs
        record = Trajectory(
            obs=obs,
            state=state,
            action=action,
            next_obs=next_obs,
            next_state=next_state,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            info=info,
            obs_in_space=_space_contains(obs_space, obs),
            next_obs_in_space=_space_contains(obs_space, next_obs),
            final_obs_in_space=_space_contains(obs_space, final),
            action_in_space=_space_contains(act_space, action),
        )
        return (next_obs, next_state), record

    keys = jax.random.split(key_steps, num_steps)
    _, traj = jax.lax.scan(body, (obs0, state0), (keys, actions))
    return traj


@functools.partial(jax.jit, static_argnames=("env", "num_steps"))
def rollout(
    env: Any, params: Any, key: jax.Array, num_steps: int = ROLLOUT_STEPS, actions: Any = None
) -> Trajectory:
    """Reset, then ``num_steps`` steps of ``env.step`` with random (or the given) actions.

    Args:
        env: the environment (static: one compilation per env instance and length).
        params: env params.
        key: PRNG key; the same key gives the same trajectory.
        num_steps: trajectory length ``T``.
        actions: optional ``[T, ...]`` actions to use instead of samples of the action space.
    """
    return _rollout_impl(env, params, key, num_steps, actions)


@struct.dataclass
class _TerminalRecord:
    prev_state: Any
    out: tuple  # (obs, state, reward, terminated, truncated, info) of the base step
    obs_st: Any  # step_env with the base class's step key
    state_st: Any
    reward_st: jax.Array
    terminated_st: jax.Array
    terminated_no_limit: jax.Array  # step_env terminated with an unreachable time limit
    is_truncated: jax.Array  # env.is_truncated(state_st, params)
    obs_re: Any  # reset_env with the base class's reset key
    state_re: Any


def _terminal_impl(env: Any, params: Any, key: jax.Array, num_steps: int) -> _TerminalRecord:
    no_limit = _with_max_steps(params, np.iinfo(np.int32).max)
    # step_env with and without the time limit, as one batched call (one copy of its code).
    limits, limit_axes = _batched_field(
        params, "max_steps_in_episode", [params.max_steps_in_episode, no_limit.max_steps_in_episode]
    )
    step_env_2 = jax.vmap(env.step_env, in_axes=(None, None, None, limit_axes))
    key_reset, key_steps = jax.random.split(key)
    obs0, state0 = env.reset(key_reset, params)
    act_space = env.action_space(params)

    def body(carry, k):
        obs, state = carry
        k_act, k = jax.random.split(k)
        action = act_space.sample(k_act)
        out = env.step(k, state, action, params)
        key_step, key_reset = jax.random.split(k)
        obs_2, state_2, reward_2, terminated_2, _ = step_env_2(key_step, state, action, limits)
        state_st = _slot(state_2, 0)
        obs_re, state_re = env.reset_env(key_reset, params)
        record = _TerminalRecord(
            prev_state=state,
            out=out,
            obs_st=_slot(obs_2, 0),
            state_st=state_st,
            reward_st=reward_2[0],
            terminated_st=terminated_2[0],
            terminated_no_limit=terminated_2[1],
            is_truncated=env.is_truncated(state_st, params),
            obs_re=obs_re,
            state_re=state_re,
        )
        return (out[0], out[1]), record

    _, record = jax.lax.scan(body, (obs0, state0), jax.random.split(key_steps, num_steps))
    return record


@functools.partial(jax.jit, static_argnames=("env", "num_steps"))
def terminal_rollout(env: Any, params: Any, key: jax.Array, num_steps: int) -> _TerminalRecord:
    """Random-action rollout recording, per step, the parts gymnax's ``step`` combines.

    Splits each step key as the base class does (``key_step, key_reset = split(key)``) and
    evaluates ``step_env``/``reset_env`` beside ``step``, so auto-reset and
    ``info["final_observation"]`` can be checked against them.
    """
    return _terminal_impl(env, params, key, num_steps)


def _step_at(tree: Any, t: int) -> Any:
    return jax.tree.map(lambda x: _to_np(x)[t], tree)


def _batched_field(params: Any, field: str, values: list) -> tuple[Any, Any]:
    """``params`` with ``field`` stacked from ``values`` (``[len(values)]``) and the
    ``in_axes`` tree that batches that field only."""
    batched = params.replace(**{field: jnp.asarray(values)})
    axes = jax.tree.map(lambda _: None, params).replace(**{field: 0})
    return batched, axes


def _stack(trees: list) -> Any:
    return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *trees)


def _concat(trees: list) -> Any:
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *trees)


# --------------------------------------------------------------------------------------------
# the contract program: one compiled program per env serves every check
#
# XLA compile time, not run time, is what the checks cost (seconds per program, more for
# heavy envs), and most of it is per program and per copy of the env's step in it. So
# :func:`_contract_data` traces, compiles and runs ONE program per (env, params, key, sizes)
# that computes everything the checks read: a random-action trajectory batched with the
# NaN/inf-action ones, the time-limit records, the vmapped steps over states and over params,
# the batch layer's pooled resets, and the inputs of the un-vmapped reference that the vmap
# and batch checks compare against. That reference is the env's own jitted ``reset``/``step``
# called per slot on the host (:func:`_reference`): the programs users call, which the eager
# check compiles anyway, instead of one more copy of the step in this program. The checks
# then read the outputs on the host; the newest few results are kept, so a suite that runs
# an env's checks one after the other computes them once.


@dataclasses.dataclass(frozen=True)
class _Sizes:
    """What the checks ask for (their keyword arguments; defaults of the public checks)."""

    rollout_steps: int = ROLLOUT_STEPS
    nonfinite_steps: int = 14
    terminal_max_steps: int = 5
    terminal_steps: int = 16
    vmap_envs: int = 4
    vmap_steps: int = 4
    vmap_max_steps: int = 3
    vmap_scale: float = 0.05
    batch_envs: int = 4
    batch_steps: int = 8
    batch_max_steps: int = 3
    reset_pool: int = 1


@dataclasses.dataclass(frozen=True)
class _Flags:
    """What the env supports (static parts of the program)."""

    nonfinite: int  # trajectories with NaN/inf actions: 0 none, 1 through ClipAction, 2 + raw
    time_limit: bool  # params have max_steps_in_episode
    no_reset_step: bool  # VecEnv can step it without the reset (pooled resets)
    critic: bool  # critic_observation(state, params)


def _flags(env: Any, params: Any) -> _Flags:
    box = has_box_actions(env, params)
    return _Flags(
        nonfinite=(2 if is_hordax_env(env) else 1) if box else 0,
        time_limit=hasattr(params, "max_steps_in_episode"),
        no_reset_step=supports_step_no_reset(env),
        critic=has_critic_observation(env),
    )


def _scenario_rollout(env: Any, params: Any, key_reset: jax.Array, keys: Any, actions: Any):
    """``env.reset`` then one ``env.step`` per ``(key, action)``: the reset outputs and, per
    step, the step's outputs and ``space.contains`` of the observations and actions."""
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    obs0, state0 = env.reset(key_reset, params)

    def body(carry, xs):
        _, state = carry
        k, action = xs
        next_obs, next_state, reward, terminated, truncated, info = env.step(
            k, state, action, params
        )
        final = info.get("final_observation", next_obs) if isinstance(info, Mapping) else next_obs
        record = {
            "next_obs": next_obs,
            "next_state": next_state,
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "info": info,
            "action": action,
            "next_obs_in_space": _space_contains(obs_space, next_obs),
            "final_obs_in_space": _space_contains(obs_space, final),
            "action_in_space": _space_contains(act_space, action),
        }
        return (next_obs, next_state), record

    _, record = jax.lax.scan(body, (obs0, state0), (keys, actions))
    return {"obs0": obs0, "state0": state0, "obs0_in_space": _space_contains(obs_space, obs0)} | (
        record
    )


def _trajectories(env: Any, sizes: _Sizes, flags: _Flags, params: Any, key: jax.Array) -> dict:
    """Part ``traj``: random-action and NaN/inf-action trajectories, critic observations."""
    out: dict[str, Any] = {}
    act_space = env.action_space(params)
    sample_n = jax.vmap(act_space.sample)

    # Trajectories through env.step: random actions (the keys and draws of `rollout`), then
    # NaN/inf actions clipped as ClipAction clips them, then (hordax envs) raw.
    T = max(sizes.rollout_steps, sizes.nonfinite_steps if flags.nonfinite else 0)
    key_reset, key_steps = jax.random.split(key)
    k_act, k_step = jnp.moveaxis(jax.vmap(jax.random.split)(jax.random.split(key_steps, T)), 1, 0)
    actions = [sample_n(k_act)]
    if flags.nonfinite:
        raw = nonfinite_actions(act_space, T)
        actions.append(jax.vmap(lambda a: clip_action(a, act_space))(raw))
        if flags.nonfinite == 2:
            actions.append(raw)
    out["traj"] = jax.vmap(
        functools.partial(_scenario_rollout, env), in_axes=(None, None, None, 0)
    )(params, key_reset, k_step, jnp.stack(actions))
    if flags.critic:
        states = jax.tree.map(lambda x: x[0], out["traj"]["next_state"])
        crit = jax.vmap(env.critic_observation, in_axes=(0, None))(states, params)
        space = env.critic_observation_space(params)
        out["critic"] = crit
        out["critic_in_space"] = jax.vmap(lambda x: _space_contains(space, x))(crit)
    return out


def _terminal(env: Any, sizes: _Sizes, flags: _Flags, params: Any, key: jax.Array) -> dict:
    """Part ``terminal``: the time-limit records."""
    p_term = _with_max_steps(params, sizes.terminal_max_steps)
    return {"terminal": _terminal_impl(env, p_term, key, sizes.terminal_steps)}


def _batches(env: Any, sizes: _Sizes, flags: _Flags, params: Any, key: jax.Array) -> dict:
    """Part ``vmap``: the vmapped steps, the pooled batch and their un-vmapped reference."""
    out: dict[str, Any] = {}
    act_space = env.action_space(params)
    sample_n = jax.vmap(act_space.sample)

    # vmap over states (slots 0..N-1: own keys and actions, max_steps=vmap_max_steps) and over
    # params (slots N..2N-1: perturbed floats, one key and action for all), in one batch.
    N = sizes.vmap_envs
    kv_reset, kv_act, kv_step = jax.random.split(key, 3)
    p_states = _with_max_steps(params, sizes.vmap_max_steps)
    p_perturbed, _ = perturb_params(params, N, sizes.vmap_scale)
    instances = [p_states] * N + [_slot(p_perturbed, i, _float_axes(params)) for i in range(N)]
    batched = jax.tree.map(_is_float_leaf, params)
    if not jax.tree.leaves(batched) or not any(jax.tree.leaves(batched)):
        batched = jax.tree.map(lambda _: True, params)  # no float field: every leaf batched
    batched = batched.replace(max_steps_in_episode=True)
    axes = jax.tree.map(lambda b: 0 if b else None, batched)
    v_params = jax.tree.map(
        lambda b, *xs: jnp.stack([jnp.asarray(x) for x in xs]) if b else xs[0],
        batched,
        *instances,
    )
    v_reset_keys = jnp.concatenate([jax.random.split(kv_reset, N), jnp.stack([kv_reset] * N)])
    steps = range(sizes.vmap_steps)
    v_keys = jnp.stack(
        [
            jnp.concatenate(
                [jax.random.split(jax.random.fold_in(kv_step, t), N)]
                + [jax.random.fold_in(kv_step, t)[None]] * N
            )
            for t in steps
        ]
    )
    v_actions = _stack(
        [
            _concat(
                [sample_n(jax.random.split(jax.random.fold_in(kv_act, t), N))]
                + [jax.tree.map(lambda a: a[None], act_space.sample(jax.random.fold_in(kv_act, t)))]
                * N
            )
            for t in steps
        ]
    )
    v_obs, v_states = jax.vmap(env.reset, in_axes=(0, axes))(v_reset_keys, v_params)
    vstep = jax.vmap(env.step, in_axes=(0, 0, 0, axes))

    def v_body(states, xs):
        o = vstep(xs[0], states, xs[1], v_params)
        return o[1], o

    _, v_outs = jax.lax.scan(v_body, v_states, (v_keys, v_actions))
    out["vmap"] = {"reset": (v_obs, v_states), "steps": v_outs}

    # The batch layer: VecEnv with a pool of reset_pool resets per step.
    nb = sizes.batch_envs if flags.no_reset_step else 0
    if nb:
        p_batch = _with_max_steps(params, sizes.batch_max_steps)
        out["batch"] = _batch_impl(
            env, p_batch, key, nb, sizes.batch_steps, sizes.reset_pool
        )  # (state0, keys, actions, outputs)
        b_keys = jax.vmap(lambda k: jax.random.split(jax.random.split(k)[1], nb))(out["batch"][1])

    # The un-vmapped reference's inputs: slots = vmap slots (2N), then the batch slots. The
    # reference itself is the env's own jitted reset/step, one call per slot and step, run
    # on the host by :func:`_reference` (not a copy of the step inside this program).
    Tr = max(sizes.vmap_steps, sizes.batch_steps if nb else 0)
    pad = lambda x, n: jnp.concatenate([x, jnp.repeat(x[-1:], Tr - n, 0)]) if Tr > n else x  # noqa: E731
    pad_tree = lambda t, n: jax.tree.map(lambda x: pad(x, n), t)  # noqa: E731
    r_keys = [pad(v_keys, len(steps))]
    r_actions = [pad_tree(v_actions, len(steps))]
    if nb:
        r_keys.append(pad(b_keys, sizes.batch_steps))
        r_actions.append(pad_tree(out["batch"][2], sizes.batch_steps))
    out["reference_in"] = {
        "params": _stack([*instances] + ([p_batch] * nb if nb else [])),
        "reset_keys": v_reset_keys,
        "keys": jnp.concatenate(r_keys, axis=1),
        "actions": jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *r_actions),
    }
    return out


def _params_like(params: Any, values: Any) -> Any:
    """``params`` with each leaf's value taken from ``values`` (the same tree, host arrays),
    keeping the leaf's kind: a Python scalar stays a Python scalar (weakly typed under jit),
    an array keeps its dtype. A jitted function then sees the avals of ``params`` and reuses
    the program it compiled for them."""

    def like(orig: Any, new: Any) -> Any:
        if isinstance(orig, (bool, int, float)):
            return type(orig)(np.asarray(new).item())
        if isinstance(orig, jax.Array) and orig.weak_type and np.ndim(new) == 0:
            return jnp.asarray(np.asarray(new).item(), orig.dtype)
        return np.asarray(new, dtype=orig.dtype) if hasattr(orig, "dtype") else new

    return jax.tree.map(like, params, values)


def _reference(env: Any, params: Any, data: dict) -> dict:
    """The vmap part's un-vmapped reference: every slot stepped alone by the env's own
    jitted ``reset``/``step`` (the programs users call, also compiled by
    :func:`check_jit_matches_eager`), one host call per slot and step, on the keys and
    actions of ``data["reference_in"]``. The vmap slots start from ``reset``, the batch slots
    from the batch's reset state. Leaves ``[T, S, ...]``, as the vmapped outputs."""
    ref_in = data["reference_in"]
    keys = ref_in["keys"]
    num_steps, num_slots = keys.shape[:2]
    num_vmap = ref_in["reset_keys"].shape[0]
    slot_params = [_params_like(params, _slot(ref_in["params"], i)) for i in range(num_slots)]
    resets = [env.reset(ref_in["reset_keys"][i], slot_params[i]) for i in range(num_vmap)]
    states = [s for _, s in resets]
    if num_slots > num_vmap:
        states += [_slot(data["batch"][0], i) for i in range(num_slots - num_vmap)]
    steps = []
    for t in range(num_steps):
        row = []
        for i in range(num_slots):
            action = jax.tree.map(lambda x: x[t, i], ref_in["actions"])  # noqa: B023
            row.append(env.step(keys[t, i], states[i], action, slot_params[i]))
            states[i] = row[-1][1]
        steps.append(row)
    stack = lambda trees: jax.tree.map(  # noqa: E731
        lambda *xs: jnp.stack(xs) if _is_key(xs[0]) else np.stack(xs), *trees
    )
    resets, steps = jax.device_get((resets, steps))
    return {
        "reset": stack(resets),
        "steps": stack([stack(row) for row in steps]),
        "actions": ref_in["actions"],
    }


#: The program's parts: what computes them and which sizes they depend on.
_PARTS = {
    "traj": (_trajectories, ("rollout_steps", "nonfinite_steps")),
    "terminal": (_terminal, ("terminal_max_steps", "terminal_steps")),
    "vmap": (
        _batches,
        (
            "vmap_envs", "vmap_steps", "vmap_max_steps", "vmap_scale", "batch_envs",
            "batch_steps", "batch_max_steps", "reset_pool",
        ),
    ),
}  # fmt: skip


@functools.cache
def _compiled_part(env: Any, part: str, sizes: _Sizes, flags: _Flags) -> Any:
    return jax.jit(functools.partial(_PARTS[part][0], env, sizes, flags))


_DATA: collections.OrderedDict = collections.OrderedDict()
_DATA_KEPT = 6  # an env's checks run one after another (the contract suite orders them so)


def _contract_data(env: Any, params: Any, key: jax.Array, part: str, **sizes: Any) -> dict:
    """Part ``part`` of the contract program's outputs on the host (numpy), computed once per
    (env, params, key, the sizes it depends on) while among the newest :data:`_DATA_KEPT`."""
    _, depends = _PARTS[part]
    sz = _Sizes(**{k: v for k, v in sizes.items() if k in depends})
    flags = _flags(env, params)
    cache_key = (id(env), id(params), _to_np(key).tobytes(), part, sz)
    if cache_key in _DATA:
        _DATA.move_to_end(cache_key)
        return _DATA[cache_key][2]
    data = jax.device_get(_compiled_part(env, part, sz, flags)(params, key))
    if part == "vmap":
        data["reference"] = _reference(env, params, data)
    _DATA[cache_key] = (env, params, data)  # the objects keep their ids valid
    while len(_DATA) > _DATA_KEPT:
        _DATA.popitem(last=False)
    return data


def _is_key(x: Any) -> bool:
    return isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _float_axes(params: Any) -> Any:
    return jax.tree.map(lambda x: 0 if _is_float_leaf(x) else None, params)


def _trajectory(data: dict, scenario: int = 0, num_steps: int | None = None) -> Trajectory:
    """Scenario ``scenario`` of the program's trajectories as a :class:`Trajectory` (its
    first ``num_steps`` steps)."""
    t = jax.tree.map(lambda x: x[scenario], data["traj"])
    n = num_steps or len(t["reward"])
    first = lambda x: x[:n]  # noqa: E731

    def before(x0, xs):  # [x0, xs[0], .., xs[n - 2]]: what each step started from
        cat = jnp.concatenate if _is_key(xs) else np.concatenate
        return cat([x0[None], xs[: n - 1]])

    return Trajectory(
        obs=jax.tree.map(before, t["obs0"], t["next_obs"]),
        state=jax.tree.map(before, t["state0"], t["next_state"]),
        action=jax.tree.map(first, t["action"]),
        next_obs=jax.tree.map(first, t["next_obs"]),
        next_state=jax.tree.map(first, t["next_state"]),
        reward=first(t["reward"]),
        terminated=first(t["terminated"]),
        truncated=first(t["truncated"]),
        info=jax.tree.map(first, t["info"]),
        obs_in_space=before(t["obs0_in_space"], t["next_obs_in_space"]),
        next_obs_in_space=first(t["next_obs_in_space"]),
        final_obs_in_space=first(t["final_obs_in_space"]),
        action_in_space=first(t["action_in_space"]),
    )


# --------------------------------------------------------------------------------------------
# helpers of the checks


class _Untraced:
    """Proxy whose ``reset``/``step`` call the un-jitted methods: traced anew in every jit."""

    def __init__(self, env: Any):
        self.inner = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def reset(self, key: jax.Array, params: Any) -> Any:
        fn = getattr(type(self.inner).reset, "__wrapped__", None)
        return self.inner.reset(key, params) if fn is None else fn(self.inner, key, params)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any) -> Any:
        fn = getattr(type(self.inner).step, "__wrapped__", None)
        if fn is None:
            return self.inner.step(key, state, action, params)
        return fn(self.inner, key, state, action, params)


def _is_float_leaf(x: Any) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.floating)


def perturb_params(params: Any, num: int, scale: float = 0.05) -> tuple[Any, Any]:
    """Stack ``num`` params instances, float leaf ``i`` scaled by ``1 + scale * i``.

    Int and bool leaves (``max_steps_in_episode``, sizes, flags) are left unbatched.

    Returns:
        ``(batched_params, in_axes)``: ``in_axes`` is 0 for stacked leaves, None otherwise.
    """

    def stack(x):
        if not _is_float_leaf(x):
            return x
        x = jnp.asarray(x)
        return jnp.stack([x * (1.0 + scale * i) for i in range(num)]).astype(x.dtype)

    axes = jax.tree.map(lambda x: 0 if _is_float_leaf(x) else None, params)
    return jax.tree.map(stack, params), axes


def _slot(tree: Any, i: int, axes: Any = 0) -> Any:
    if isinstance(axes, int):
        return jax.tree.map(lambda x: x[i], tree)
    return jax.tree.map(lambda a, x: x if a is None else x[i], axes, tree, is_leaf=_none_leaf)


def _none_leaf(x: Any) -> bool:
    return x is None


# --------------------------------------------------------------------------------------------
# 1. tracing


def check_traces_once(
    env: Any, params: Any = None, key: jax.Array | None = None, num_calls: int = 4
) -> None:
    """``jax.jit(chex.assert_max_traces(fn, n=1))`` of ``reset`` and ``step`` over new inputs.

    Calls reset with ``num_calls`` keys and chains ``num_calls`` steps (each on the state the
    previous one returned). A second trace means an input's abstract value changed, most
    often a state leaf whose dtype or weak type differs between ``reset`` and ``step``. The
    calls are abstract (``jax.eval_shape`` of the jitted functions: a trace, no compile);
    jit's trace cache decides a retrace exactly as it does for a concrete call.
    """
    params, key = _params(env, params), _key(key)
    tag = f"{_name(env)}_{next(_fresh_tag)}".replace("-", "_")

    # chex counts traces per (call stack, source, __name__): a unique name per call.
    def reset_fn(k, p):
        return env.reset(k, p)

    def step_fn(k, s, a, p):
        return env.step(k, s, a, p)

    reset_fn.__name__, step_fn.__name__ = f"reset_{tag}", f"step_{tag}"
    reset = jax.jit(chex.assert_max_traces(reset_fn, n=1))
    step = jax.jit(chex.assert_max_traces(step_fn, n=1))
    keys = jax.random.split(key, 3 * num_calls)
    try:
        for k in keys[:num_calls]:
            _, state = jax.eval_shape(reset, k, params)
    except AssertionError as err:
        _fail(env, "traces_once", f"jitted reset traced more than once: {str(err).splitlines()[0]}")
    space = env.action_space(params)
    state0 = state
    try:
        for i in range(num_calls):
            action = jax.eval_shape(space.sample, keys[num_calls + i])
            _, state, *_ = jax.eval_shape(step, keys[2 * num_calls + i], state, action, params)
    except AssertionError as err:
        changed = [
            f"{path}: {_aval(a)} after reset -> {_aval(b)} after step"
            for (path, a), (_, b) in zip(_flat(state0)[0], _flat(state)[0], strict=True)
            if _aval(a) != _aval(b)
        ]
        _fail(
            env,
            "traces_once",
            f"jitted step traced more than once over {num_calls} chained calls; state leaves "
            f"whose abstract value changes: {changed or 'none found'} "
            f"({str(err).splitlines()[0]})",
        )


# --------------------------------------------------------------------------------------------
# 2. spaces, dtypes, info structure


def _assert_flag_in_space(space: Any, traj: Trajectory, field: str, flags: Any, what: str):
    """:func:`assert_in_space` of step 0 of ``traj.<field>``, with the program's
    ``space.contains`` flag of it."""
    x = _step_at(getattr(traj, field), 0)
    errors = _space_layout_errors(space, x, (), what)
    if errors:
        raise AssertionError("; ".join(errors))
    if not bool(np.asarray(flags)[0]):
        raise AssertionError(f"{what} is outside {space!r}: {_to_np(x)!r}")


def check_spaces_and_dtypes(
    env: Any, params: Any = None, key: jax.Array | None = None, num_steps: int = ROLLOUT_STEPS
) -> None:
    """Obs/actions inside their spaces with matching shape and dtype; reward, flags, time, info.

    Asserted at reset, at every step of a ``num_steps`` random rollout (through auto-resets)
    and on ``info["final_observation"]``: ``bool(observation_space(params).contains(obs))``;
    sampled actions inside ``action_space``; reward ``float32`` of shape ``()`` (multi-agent
    ``(n_agents,)``); ``terminated``/``truncated`` ``bool[]``; ``state.time`` ``int32[]``;
    ``info`` pytree structure and leaf shapes identical across steps (the first two steps,
    abstractly: the second starts from the first's state).
    """
    prop = "spaces_and_dtypes"
    params, key = _params(env, params), _key(key)
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    traj = _trajectory(
        _contract_data(env, params, key, "traj", rollout_steps=num_steps), 0, num_steps
    )
    try:
        _assert_flag_in_space(obs_space, traj, "obs", traj.obs_in_space, "reset observation")
        _assert_flag_in_space(act_space, traj, "action", traj.action_in_space, "sampled action")
    except AssertionError as err:
        _fail(env, prop, str(err))

    k_reset, k_act, k_step1, k_step2 = jax.random.split(key, 4)
    obs, state = jax.eval_shape(env.reset, k_reset, params)
    time = getattr(state, "time", None)
    if time is not None and (jnp.shape(time) != () or jnp.result_type(time) != jnp.int32):
        _fail(env, prop, f"state.time is {_aval(time)}, want int32[]")

    n_agents = env.num_agents if is_multi_agent(env) else None
    reward_shape = () if n_agents is None else (n_agents,)
    action = jax.eval_shape(act_space.sample, k_act)
    out1 = jax.eval_shape(env.step, k_step1, state, action, params)
    out2 = jax.eval_shape(env.step, k_step2, out1[1], action, params)
    for out in (out1, out2):
        _, _, reward, terminated, truncated, info = out
        for what, x, shape, dtype in (
            ("reward", reward, reward_shape, jnp.float32),
            ("terminated", terminated, (), jnp.bool_),
            ("truncated", truncated, (), jnp.bool_),
        ):
            if jnp.shape(x) != shape or jnp.result_type(x) != dtype:
                _fail(env, prop, f"{what} is {_aval(x)}, want {jnp.dtype(dtype)}{list(shape)}")
        if not isinstance(info, Mapping):
            _fail(env, prop, f"info must be a dict, got {type(info).__name__}")
        missing = GYMNAX_INFO_KEYS - set(info)
        if missing:
            _fail(env, prop, f"info lacks {sorted(missing)}")
    if jax.tree.structure(out1[5]) != jax.tree.structure(out2[5]):
        _fail(env, prop, f"info structure changes between steps: {out1[5]} vs {out2[5]}")
    shapes = [jax.tree.map(lambda x: (x.shape, x.dtype), o[5]) for o in (out1, out2)]
    if shapes[0] != shapes[1]:
        _fail(env, prop, f"info leaf shapes/dtypes change between steps: {shapes}")
    if jax.tree.structure(out1[1]) != jax.tree.structure(state):
        _fail(env, prop, "state pytree structure differs between reset and step")

    for what, flags, values, space in (
        ("observation", traj.obs_in_space, traj.obs, obs_space),
        ("observation after step", traj.next_obs_in_space, traj.next_obs, obs_space),
        (
            'info["final_observation"]',
            traj.final_obs_in_space,
            traj.info["final_observation"],
            obs_space,
        ),
        ("sampled action", traj.action_in_space, traj.action, act_space),
    ):
        _first_outside(env, prop, flags, values, space, what)
    errors = _space_layout_errors(obs_space, traj.next_obs, (num_steps,), "observation")
    errors += _space_layout_errors(act_space, traj.action, (num_steps,), "action")
    if errors:
        _fail(env, prop, "; ".join(errors))


# --------------------------------------------------------------------------------------------
# 3. determinism


def check_determinism(
    env: Any, params: Any = None, key: jax.Array | None = None, num_steps: int = ROLLOUT_STEPS
) -> None:
    """Same key -> bitwise-identical ``num_steps`` trajectory, from two separate traces.

    The second trace traces ``reset_env``/``step_env`` afresh (bypassing the jit cache of the
    env's own ``reset``/``step``), so host-side randomness baked in at trace time
    (``np.random`` in ``step_env``) is caught too. Two fresh traces that lower to the same
    program (the same StableHLO text, constants included) compute the same trajectory, so
    then no second program is compiled: the contract program's trajectory is computed again
    (a run-time difference shows there) and compared. Traces that differ are compiled and
    their trajectories compared, naming the first leaf that differs.
    """
    params, key = _params(env, params), _key(key)
    first = _trajectory(
        _contract_data(env, params, key, "traj", rollout_steps=num_steps), 0, num_steps
    )
    sizes = _Sizes(rollout_steps=num_steps)
    again = jax.device_get(_compiled_part(env, "traj", sizes, _flags(env, params))(params, key))
    try:
        assert_trees_close(
            _trajectory(again, 0, num_steps), first, "trajectory (run 2 vs run 1)", exact=True
        )
    except AssertionError as err:
        _fail(env, "determinism", str(err))

    def fresh_trace():
        fn = functools.partial(_rollout_impl, _Untraced(env), num_steps=num_steps, actions=None)
        return jax.jit(fn).lower(params, key)

    if fresh_trace().as_text() == fresh_trace().as_text():
        return
    second = jax.jit(
        functools.partial(_rollout_impl, _Untraced(env), num_steps=num_steps, actions=None)
    )(params, key)
    try:
        assert_trees_close(
            second, rollout(env, params, key, num_steps), "trajectory (run 2 vs run 1)", exact=True
        )
    except AssertionError as err:
        _fail(env, "determinism", str(err))


def check_jit_matches_eager(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    num_steps: int = 4,
    max_steps: int = 2,
    tol: dict | None = None,
    eager: str = "disable_jit",
) -> None:
    """Jitted ``reset``/``step`` equal the same calls run eagerly (atol 1e-5; ``tol``: other
    ``rtol``/``atol``, see :data:`CONTACT_TOL`).

    Uses ``max_steps_in_episode=max_steps`` so the auto-reset branch is exercised too. The
    jitted side is the env's own jitted ``reset``/``step`` (the programs that users call), not
    the contract program: a step inside that larger program fuses floats differently, and
    eager vs jit is about the env's own programs.

    ``eager`` picks the eager side:

    - ``"disable_jit"``: under ``jax.disable_jit()``, every line of the env's Python runs on
      concrete arrays, the bodies of ``lax.scan``/``while_loop`` too (they run as Python
      loops).
    - ``"dispatch"``: JAX's default op-by-op mode outside ``jit``, with the env's un-jitted
      ``reset``/``step``: the env's own code runs on concrete arrays, while bodies of
      ``lax`` control flow and of ``vmap`` are traced and compiled as units, as any JAX code
      outside ``jit`` runs them. For envs whose scan bodies are a library's (MJX's
      ``mjx.step`` in the manipulation family): under ``disable_jit`` those run as ~80k
      Python-level primitive dispatches per step (minutes on CPU); here as one compiled scan.
    """
    if eager not in ("disable_jit", "dispatch"):
        raise ValueError(f"eager={eager!r}: must be 'disable_jit' or 'dispatch'")
    params, key = _with_max_steps(_params(env, params), max_steps), _key(key)
    keys = jax.random.split(key, 2 * num_steps + 1)
    space = env.action_space(params)
    actions = [space.sample(k) for k in keys[1 : num_steps + 1]]
    step_keys = keys[num_steps + 1 :]

    def run(e):
        outs = [e.reset(keys[0], params)]
        state = outs[0][1]
        for k, a in zip(step_keys, actions, strict=True):
            outs.append(e.step(k, state, a, params))
            state = outs[-1][1]
        return outs

    jitted = run(env)
    if eager == "dispatch":
        eager_outs = run(_Untraced(env))
    else:
        with jax.disable_jit():
            eager_outs = run(env)
    try:
        assert_trees_close(eager_outs[0], jitted[0], "reset (eager vs jit)", **(tol or _TOL))
        for t in range(1, num_steps + 1):
            what = f"step {t} (eager vs jit)"
            assert_trees_close(eager_outs[t], jitted[t], what, **(tol or _TOL))
    except AssertionError as err:
        _fail(env, "jit_matches_eager", str(err))


# --------------------------------------------------------------------------------------------
# 4. vmap


def _vmap_pairs(data: dict, first_slot: int, num_envs: int, num_steps: int):
    """``(what, vmapped, single)`` of the reset and every step of the vmap slots
    ``first_slot ..`` (vmapped: the program's vmap batch; single: its un-vmapped reference)."""
    v, r = data["vmap"], data["reference"]
    for i in range(num_envs):
        yield "reset", i, _slot(v["reset"], first_slot + i), _slot(r["reset"], first_slot + i)
    for t in range(num_steps):
        for i in range(num_envs):
            vs, rs = _step_at(v["steps"], t), _step_at(r["steps"], t)
            yield f"step {t + 1}", i, _slot(vs, first_slot + i), _slot(rs, first_slot + i)


def check_vmap_states(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    num_envs: int = 4,
    num_steps: int = 4,
    max_steps: int = 3,
    tol: dict | None = None,
) -> None:
    """``jax.vmap(env.step)`` over ``num_envs`` keys/states equals ``num_envs`` separate calls
    (floats within 1e-5; ``tol``: other ``rtol``/``atol``, see :data:`CONTACT_TOL`).

    ``max_steps_in_episode=max_steps`` < ``num_steps`` puts an auto-reset inside the batch.
    The separate calls are the env's own jitted ``reset``/``step``, one call per env and
    step (:func:`_reference`: the step's code sees one env). The contract program vmaps
    these slots together with :func:`check_vmap_params`' slots, so here params are batched
    (equal in every slot);
    ``vmap`` over states with one *shared* (unbatched) params, as the trainers run it, is
    compared with the same reference by :func:`check_batch_resets` (``VecEnv``).
    """
    params, key = _params(env, params), _key(key)
    _with_max_steps(params, max_steps)  # the time limit is a params field
    sizes = {"vmap_envs": num_envs, "vmap_steps": num_steps, "vmap_max_steps": max_steps}
    data = _contract_data(env, params, key, "vmap", **sizes)
    try:
        for what, i, batched, single in _vmap_pairs(data, 0, num_envs, num_steps):
            assert_trees_close(batched, single, f"vmap {what}, env {i}", **(tol or _TOL))
    except AssertionError as err:
        _fail(env, "vmap_states", str(err))


def check_vmap_params(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    num_envs: int = 4,
    num_steps: int = 4,
    scale: float = 0.05,
    tol: dict | None = None,
) -> None:
    """``vmap`` over ``num_envs`` *different* params equals one un-vmapped call per instance
    (floats within 1e-5; ``tol``: other ``rtol``/``atol``, see :data:`CONTACT_TOL`).

    Params come from :func:`perturb_params` (float leaf ``i`` times ``1 + scale * i``): this
    is domain randomization by ``vmap`` over params. Every instance uses the same keys, so
    the instances' trajectories may differ only through params; if they are all identical
    the env ignores the params it is given (e.g. reads ``self.default_params``).
    """
    prop = "vmap_params"
    params, key = _params(env, params), _key(key)
    _with_max_steps(params, 1)  # the time limit is a params field
    sizes = {"vmap_envs": num_envs, "vmap_steps": num_steps, "vmap_scale": scale}
    data = _contract_data(env, params, key, "vmap", **sizes)
    try:
        for what, i, batched, single in _vmap_pairs(data, num_envs, num_envs, num_steps):
            where = f"vmap-over-params {what}, params {i}"
            assert_trees_close(batched, single, where, **(tol or _TOL))
    except AssertionError as err:
        _fail(env, prop, str(err))
    if not jax.tree.leaves(_float_axes(params)):  # nothing differs between the instances
        return
    r = data["reference"]
    history = [
        [_slot(r["reset"], num_envs + i)]
        + [_slot(_step_at(r["steps"], t), num_envs + i)[:3] for t in range(num_steps)]
        for i in range(num_envs)
    ]
    for i in range(1, num_envs):
        try:
            assert_trees_close(history[i], history[0], "", exact=True)
        except AssertionError:
            return
    _fail(
        env,
        prop,
        f"{num_envs} params instances (float leaves x 1 + {scale} i) gave identical obs, state "
        f"and reward over {num_steps} steps: does the env ignore the params passed to it?",
    )


# --------------------------------------------------------------------------------------------
# 5. terminal semantics, hordax info, 6. fresh resets


def _uses_gymnax_step(env: Any) -> bool:
    """gymnax's inherited ``step``, or hordax's (the same body after an action-shape check)."""
    steps = (gx_env.Environment.step, HordaxEnvironment.step)
    return getattr(type(env), "step", None) in steps


def check_terminal_semantics(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    max_steps: int = 5,
    num_steps: int = 16,
) -> None:
    """Time limit, auto-reset and ``info["final_observation"]`` (``max_steps_in_episode`` small).

    At every step of a random rollout, with ``(key_step, key_reset) = split(key)`` as in
    gymnax's ``step``: ``final_observation``, reward and ``terminated`` equal
    ``step_env(key_step, ...)``; ``truncated == is_truncated(state_st)``; ``state.time``
    counts steps and reaching ``max_steps`` gives ``truncated`` (unless ``terminated``);
    a done step returns ``reset_env(key_reset)`` (``time == 0``), otherwise ``step_env``'s
    obs and state; ``step_env``'s ``terminated`` does not depend on the time limit (so
    ``terminated`` and ``truncated`` may both be true).
    """
    prop = "terminal_semantics"
    params, key = _params(env, params), _key(key)
    _with_max_steps(params, max_steps)  # the time limit is a params field
    if not _uses_gymnax_step(env):
        _fail(env, prop, "env overrides step(); this check covers gymnax's inherited step")
    sizes = {"terminal_max_steps": max_steps, "terminal_steps": num_steps}
    rec = _contract_data(env, params, key, "terminal", **sizes)["terminal"]
    obs, state, reward, terminated, truncated, info = rec.out
    done = np.asarray(terminated) | np.asarray(truncated)
    has_time = hasattr(rec.state_st, "time")
    for t in range(num_steps):
        at = functools.partial(_step_at, t=t)
        where = f"step {t + 1}"
        pairs = [
            ('info["final_observation"] vs step_env obs', info["final_observation"], rec.obs_st),
            ("reward vs step_env reward", reward, rec.reward_st),
            ("terminated vs step_env terminated", terminated, rec.terminated_st),
            ("truncated vs is_truncated(step_env state)", truncated, rec.is_truncated),
            (
                f"step_env terminated with no time limit vs with max_steps={max_steps} "
                "(the time limit must not fold into terminated)",
                rec.terminated_no_limit,
                rec.terminated_st,
            ),
        ]
        if done[t]:
            pairs += [
                ("done: obs vs reset_env obs", obs, rec.obs_re),
                ("done: state vs reset_env state", state, rec.state_re),
            ]
        else:
            pairs += [
                ("obs vs step_env obs", obs, rec.obs_st),
                ("state vs step_env state", state, rec.state_st),
            ]
        try:
            for what, actual, expected in pairs:
                assert_trees_close(at(actual), at(expected), f"{where}: {what}", **_TOL)
        except AssertionError as err:
            _fail(env, prop, str(err))
        if has_time:
            prev_time, time_st = int(rec.prev_state.time[t]), int(rec.state_st.time[t])
            if time_st != prev_time + 1:
                _fail(env, prop, f"{where}: step_env time {time_st}, want {prev_time} + 1")
            if time_st >= max_steps and not (truncated[t] or terminated[t]):
                _fail(
                    env,
                    prop,
                    f"{where}: time {time_st} reached max_steps_in_episode="
                    f"{max_steps} but truncated=False and terminated=False",
                )
            if done[t] and int(state.time[t]) != 0:
                _fail(
                    env,
                    prop,
                    f"{where}: done, but the auto-reset state has time "
                    f"{int(state.time[t])}, want 0",
                )
            if int(state.time[t]) >= max_steps:
                _fail(env, prop, f"{where}: state.time {int(state.time[t])} passed the limit")
    if not done.any():
        _fail(env, prop, f"no episode ended in {num_steps} steps with max_steps={max_steps}")


def check_hordax_info(
    env: Any, params: Any = None, key: jax.Array | None = None, num_steps: int = ROLLOUT_STEPS
) -> None:
    """hordax ``info``: ``metrics`` and ``reward_terms`` dicts of ``float32`` leaves.

    Leaves are scalars (multi-agent envs may also use ``(n_agents,)``); the top-level keys
    are exactly gymnax's three, these two and, for multi-agent envs, ``agent_terminated``
    and ``agent_mask``.
    """
    prop = "hordax_info"
    params, key = _params(env, params), _key(key)
    info = _trajectory(
        _contract_data(env, params, key, "traj", rollout_steps=num_steps), 0, num_steps
    ).info
    multi = is_multi_agent(env)
    allowed = HORDAX_INFO_KEYS | GYMNAX_INFO_KEYS | (MULTI_AGENT_INFO_KEYS if multi else set())
    if set(info) != allowed:
        _fail(
            env,
            prop,
            f"info keys {sorted(info)}, want exactly {sorted(allowed)} "
            "(a wrapper adds one key named after itself)",
        )
    shapes = [()] + ([(env.num_agents,)] if multi else [])
    for group in ("metrics", "reward_terms"):
        terms = info[group]
        if not isinstance(terms, dict) or not all(isinstance(k, str) for k in terms):
            _fail(env, prop, f'info["{group}"] must be a dict with str keys, got {terms!r}')
        for name, value in terms.items():
            if not isinstance(value, np.ndarray | jax.Array):
                _fail(env, prop, f'info["{group}"]["{name}"] is {type(value).__name__}')
            shape = tuple(value.shape[1:])
            if value.dtype != jnp.float32 or shape not in shapes:
                _fail(
                    env,
                    prop,
                    f'info["{group}"]["{name}"] is {value.dtype}{list(shape)}, '
                    f"want float32 with shape in {shapes}",
                )


def check_fresh_resets(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    max_steps: int = 5,
    num_steps: int = 16,
) -> None:
    """In one slot, the initial states of consecutive episodes (auto-reset in ``step``) are
    not all the same (all leaves but ``time``): no cached first state. Only for envs whose
    reset is random (``env.random_reset``, default True).
    """
    prop = "fresh_resets"
    params, key = _params(env, params), _key(key)
    _with_max_steps(params, max_steps)  # the time limit is a params field
    sizes = {"terminal_max_steps": max_steps, "terminal_steps": num_steps}
    rec = _contract_data(env, params, key, "terminal", **sizes)["terminal"]
    _, state, _, terminated, truncated, _ = rec.out
    done = np.asarray(terminated) | np.asarray(truncated)
    starts = [_step_at(rec.prev_state, 0)] + [_step_at(state, t) for t in np.flatnonzero(done)]
    if len(starts) < 3:
        _fail(env, prop, f"only {len(starts) - 1} auto-reset(s) in {num_steps} steps")

    def leaves(s):
        return [(p, x) for p, x in _flat(s)[0] if not p.endswith(".time")]

    # A cached reset starts every episode alike; a small start space (e.g. MiniGrid's
    # Memory-S8, 20 starts) may repeat a start by chance, so only "all alike" fails.
    def same(i: int, j: int) -> bool:
        return all(
            np.array_equal(_to_np(a), _to_np(b))
            for (_, a), (_, b) in zip(leaves(starts[i]), leaves(starts[j]), strict=True)
        )

    if all(same(0, j) for j in range(1, len(starts))):
        _fail(
            env,
            prop,
            f"all {len(starts)} episodes start in the same state (cached reset?): {starts[0]}",
        )


def _batch_impl(
    env: Any, params: Any, key: jax.Array, num_envs: int, num_steps: int, reset_pool: int
) -> tuple:
    """``num_steps`` random-action steps of ``VecEnv(env, num_envs, reset_pool=reset_pool)``.

    Returns ``(state0, keys [T], actions [T, B, ...], outputs)``: the batch state after
    ``reset``, each step's key (``VecEnv.step`` gets ``split(keys[t])[1]``), the actions and
    the ``step`` output tuples, every leaf ``[T, B, ...]``.
    """
    vec = VecEnv(env, num_envs, reset_pool=reset_pool)
    key_reset, key_steps = jax.random.split(key)
    _, state0 = vec.reset(key_reset, params)
    space = env.action_space(params)

    def body(state, k):
        k_act, k_step = jax.random.split(k)
        action = jax.vmap(space.sample)(jax.random.split(k_act, num_envs))
        out = vec.step(k_step, state, action, params)
        return out[1], (action, out)

    keys = jax.random.split(key_steps, num_steps)
    actions, outs = jax.lax.scan(body, state0, keys)[1]
    return state0, keys, actions, outs


#: :func:`_batch_impl` as its own jitted program (the checks read the contract program).
batch_rollout = jax.jit(_batch_impl, static_argnames=("env", "num_envs", "num_steps", "reset_pool"))


def check_batch_resets(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    num_envs: int = 4,
    num_steps: int = 8,
    max_steps: int = 3,
    reset_pool: int = 1,
    tol: dict | None = None,
) -> None:
    """The batch layer's amortized fresh resets equal gymnax's in-step resets (``tol``:
    float ``rtol``/``atol`` other than 1e-5, see :data:`CONTACT_TOL`).

    ``VecEnv(env, num_envs, reset_pool=1)`` steps without the reset and resets the finished
    slots one pool round at a time; with ``max_steps_in_episode=max_steps`` every env
    truncates together, so rounds overflow. Asserted: the env supports the no-reset step
    (it uses gymnax's inherited ``step``); every output (obs, state, reward, flags, info with
    ``final_observation``; a multi-agent ``VecEnv``'s ``info["next_agent_mask"]`` equals
    ``env.agent_mask`` of the slot's returned state) equals one ``env.step`` per slot on the
    slot's key (floats to
    1e-5: the two programs may fuse float arithmetic differently; the random draws are the
    same; the per-slot steps are the env's own jitted ``step``, :func:`_reference`); some step
    ended more than ``reset_pool`` episodes; and (``env.random_reset``) the slots reset on
    that step did not all start alike.
    """
    prop = "batch_resets"
    params, key = _params(env, params), _key(key)
    _with_max_steps(params, max_steps)  # the time limit is a params field
    if not supports_step_no_reset(env):
        _fail(env, prop, "env overrides step(): VecEnv cannot step it without the reset")
    sizes = {
        "batch_envs": num_envs,
        "batch_steps": num_steps,
        "batch_max_steps": max_steps,
        "reset_pool": reset_pool,
    }
    data = _contract_data(env, params, key, "vmap", **sizes)
    _, _, _, outs = data["batch"]
    first = 2 * _Sizes().vmap_envs  # the batch slots of the reference
    ref = data["reference"]["steps"]
    try:
        for t in range(num_steps):
            for i in range(num_envs):
                single = _slot(_step_at(ref, t), first + i)
                where = f"step {t + 1}, env {i}: pooled vs in-step reset"
                pooled = _slot(_step_at(outs, t), i)
                info = dict(pooled[5])
                if "next_agent_mask" in info:  # VecEnv's own: the returned state's agent_mask
                    mask = info.pop("next_agent_mask")
                    expected = np.asarray(env.agent_mask(single[1], params))
                    assert np.array_equal(mask, expected), f"{where}: next_agent_mask"
                assert_trees_close((*pooled[:5], info), single, where, **(tol or _TOL))
    except AssertionError as err:
        _fail(env, prop, str(err))
    done = np.asarray(outs[3]) | np.asarray(outs[4])
    t = int(np.argmax(done.sum(1)))
    if done[t].sum() <= reset_pool:
        _fail(env, prop, f"no step ended more than reset_pool={reset_pool} episodes")
    if not getattr(env, "random_reset", True):
        return
    starts = [
        [_to_np(x) for p, x in _flat(_slot(_step_at(outs[1], t), i))[0] if not p.endswith(".time")]
        for i in np.flatnonzero(done[t])
    ]
    if all(
        all(np.array_equal(a, b) for a, b in zip(starts[0], other, strict=True))
        for other in starts[1:]
    ):
        _fail(env, prop, f"the {len(starts)} envs reset on step {t + 1} all start alike")


# --------------------------------------------------------------------------------------------
# 7. finiteness


def _nonfinite(tree: Any) -> list[str]:
    bad = []
    for path, x in _flat(tree)[0]:
        x = _to_np(x)
        if np.issubdtype(x.dtype, np.inexact) and not np.all(np.isfinite(x)):
            t = int(np.argmax(~np.isfinite(x).reshape(x.shape[0], -1).all(-1))) if x.ndim else 0
            bad.append(f"{path or '<root>'} (first at step {t})")
    return bad


def _assert_finite(env: Any, prop: str, tree: Any, context: str) -> None:
    try:
        chex.assert_tree_all_finite(tree)
    except AssertionError as err:
        first = str(err).splitlines()[0]
        _fail(env, prop, f"{context}: non-finite values in {_nonfinite(tree)} ({first})")


def check_finite(
    env: Any, params: Any = None, key: jax.Array | None = None, num_steps: int = ROLLOUT_STEPS
) -> None:
    """``chex.assert_tree_all_finite`` over obs, state and reward of a random-action episode."""
    params, key = _params(env, params), _key(key)
    traj = _trajectory(
        _contract_data(env, params, key, "traj", rollout_steps=num_steps), 0, num_steps
    )
    tree = {
        "obs": traj.next_obs,
        "state": traj.next_state,
        "reward": traj.reward,
        "final_observation": traj.info["final_observation"],
    }
    _assert_finite(env, "finite", tree, f"{num_steps}-step random-action rollout")


def nonfinite_actions(space: spaces.Box, num_steps: int) -> jax.Array:
    """``[num_steps, *shape]`` actions cycling NaN, +inf, -inf, +-1e30 and mixes of them."""
    shape = tuple(space.shape)
    size = int(np.prod(shape))
    mix = np.resize(np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0]), size).reshape(shape)
    cycle = [np.full(shape, v) for v in (np.nan, np.inf, -np.inf, 1e30, -1e30)] + [mix, mix[::-1]]
    return jnp.asarray(np.stack([cycle[t % len(cycle)] for t in range(num_steps)]), space.dtype)


def check_nonfinite_actions(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    num_steps: int = 14,
    *,
    wrap: bool = True,
) -> None:
    """NaN, +-inf and huge actions through ``ClipAction(env)`` keep obs/state/reward finite.

    Box action spaces only; observations must also stay inside the observation space. With
    ``wrap=False`` the actions go to the env itself (hordax envs clip inside ``step_env``:
    DESIGN.md, NaN actions are never silently propagated into state). The actions
    (:func:`nonfinite_actions`, cycling over ``max(num_steps, ROLLOUT_STEPS)`` steps) are the
    contract program's second trajectory (clipped as ``ClipAction`` clips them) or, for a
    hordax env, its third (unclipped); for another env unwrapped they get their own program.
    """
    prop = "nonfinite_actions"
    params, key = _params(env, params), _key(key)
    space = env.action_space(params)
    if not has_box_actions(env, params):
        _fail(env, prop, f"needs a float Box action space, got {space!r}")
    if wrap or is_hordax_env(env):
        data = _contract_data(env, params, key, "traj", nonfinite_steps=num_steps)
        traj = _trajectory(data, 1 if wrap else 2)
    else:  # not among the program's trajectories
        steps = max(num_steps, ROLLOUT_STEPS)
        traj = jax.device_get(rollout(env, params, key, steps, nonfinite_actions(space, steps)))
    tree = {"obs": traj.next_obs, "state": traj.next_state, "reward": traj.reward}
    how = "through ClipAction" if wrap else "given to the env unwrapped"
    _assert_finite(env, prop, tree, f"NaN/inf actions {how}")
    obs_space = env.observation_space(params)
    _first_outside(env, prop, traj.next_obs_in_space, traj.next_obs, obs_space, "observation")


# --------------------------------------------------------------------------------------------
# 8. multi-agent, 9. render


def check_multi_agent(
    env: Any, params: Any = None, key: jax.Array | None = None, num_steps: int = ROLLOUT_STEPS
) -> None:
    """Agent axis: obs/action leading axis ``num_agents``, reward ``(n,)``, scalar flags.

    Also ``info["agent_terminated"]`` and ``info["agent_mask"]`` ``bool[n_agents]``, an
    agent leaving a running episode marked in ``agent_terminated``, and the teams and
    per-agent spaces consistent with the stack.
    """
    prop = "multi_agent"
    params, key = _params(env, params), _key(key)
    if not is_multi_agent(env):
        _fail(env, prop, "not a MultiAgentEnvironment")
    n = env.num_agents
    if not isinstance(n, int) or n < 1:
        _fail(env, prop, f"num_agents={n!r}, want an int >= 1")
    if len(env.agents) != n:
        _fail(env, prop, f"len(agents)={len(env.agents)} != num_agents={n}")
    traj = _trajectory(
        _contract_data(env, params, key, "traj", rollout_steps=num_steps), 0, num_steps
    )
    checks = [("reward", traj.reward, (n,), jnp.float32)]
    checks += [("terminated", traj.terminated, (), jnp.bool_)]
    checks += [("truncated", traj.truncated, (), jnp.bool_)]
    for k in ("agent_terminated", "agent_mask"):
        if k not in traj.info:
            _fail(env, prop, f'info lacks "{k}"')
        checks.append((f'info["{k}"]', traj.info[k], (n,), jnp.bool_))
    for what, x, shape, dtype in checks:
        if tuple(x.shape[1:]) != shape or x.dtype != dtype:
            _fail(
                env,
                prop,
                f"{what} is {x.dtype}{list(x.shape[1:])}, want {jnp.dtype(dtype)}{list(shape)}",
            )
    for what, tree in (("observation", traj.next_obs), ("action", traj.action)):
        for path, x in _flat(tree)[0]:
            if x.ndim < 2 or x.shape[1] != n:
                _fail(
                    env,
                    prop,
                    f"{what} leaf {path or '<root>'} has shape {x.shape[1:]}, "
                    f"want a leading agent axis of {n}",
                )
    _check_leaving_agents_terminate(env, params, traj)
    _check_teams(env, params, traj)
    if has_critic_observation(env):
        check_critic_observation(env, params, key, num_steps)


def _check_leaving_agents_terminate(env: Any, params: Any, traj: Trajectory) -> None:
    """An agent that leaves a running episode (active in the state it acted in, inactive in
    the state the step returns, the episode going on) is marked in
    ``info["agent_terminated"]`` on that step: trainers cut an agent's advantage trace only
    there, so a silent deactivation would bootstrap from the value of a state the agent is
    no longer in (docs/env_protocol.md, "Multi agent")."""
    acting = np.asarray(jax.vmap(lambda s: env.agent_mask(s, params))(traj.state))
    after = np.asarray(traj.info["agent_mask"])
    going_on = ~(np.asarray(traj.terminated) | np.asarray(traj.truncated))
    silent = acting & ~after & ~np.asarray(traj.info["agent_terminated"]) & going_on[:, None]
    if silent.any():
        t, i = np.argwhere(silent)[0]
        _fail(
            env,
            "multi_agent",
            f"agent {i} was active at step {t} and inactive after it, the episode going on, "
            'but info["agent_terminated"] does not mark it',
        )


def _check_teams(env: Any, params: Any, traj: Trajectory) -> None:
    """Teams and per-agent spaces agree with the stacked ones (multi-agent protocol).

    ``team_index`` has one valid entry per agent; agent ``i``'s observation space is a
    ``Box`` of at most the stacked size, its rows of every observation lie in it and the
    padding after its own size is zero; its action space is the stacked one's row
    (``Discrete(nvec[i])`` of a ``MultiDiscrete``, a ``Box`` no wider than the stack); agents of
    one team have equal spaces.
    """
    prop = "multi_agent"
    n, teams = env.num_agents, tuple(env.team_names)
    index = tuple(env.team_index)
    if len(index) != n or any(not (0 <= t < len(teams)) for t in index):
        _fail(env, prop, f"team_index={index} needs {n} entries in [0, {len(teams)})")
    stacked_obs, stacked_act = env.observation_space(params), env.action_space(params)
    obs = _to_np(traj.next_obs)  # [T, n, D, ...]
    seen: dict[int, tuple] = {}
    for i in range(n):
        o_space = env.agent_observation_space(i, params)
        a_space = env.agent_action_space(i, params)
        if not isinstance(o_space, spaces.Box):
            _fail(env, prop, f"agent_observation_space({i}) is {o_space!r}, want a Box")
        own = tuple(o_space.shape)
        if len(own) != len(stacked_obs.shape) - 1 or any(
            d > s for d, s in zip(own, stacked_obs.shape[1:], strict=True)
        ):
            _fail(
                env,
                prop,
                f"agent_observation_space({i}).shape={own} does not fit the stacked "
                f"observation {tuple(stacked_obs.shape)}",
            )
        row = obs[:, i]
        cut = (slice(None), *(slice(0, d) for d in own))
        pad = np.ones(row.shape, bool)
        pad[cut] = False
        if np.any(row[pad] != 0):
            _fail(env, prop, f"agent {i}: observation entries past its own size {own} are not 0")
        inside = jax.vmap(lambda x, s=o_space: _space_contains(s, x))(jnp.asarray(row[cut]))
        if not bool(np.all(np.asarray(inside))):
            _fail(env, prop, f"agent {i}: observation outside agent_observation_space({i})")
        if isinstance(stacked_act, MultiDiscrete):
            ok = isinstance(a_space, spaces.Discrete) and a_space.n == stacked_act.nvec[i]
        elif isinstance(stacked_act, spaces.Box):
            ok = (
                isinstance(a_space, spaces.Box)
                and len(a_space.shape) == len(stacked_act.shape) - 1
                and all(d <= s for d, s in zip(a_space.shape, stacked_act.shape[1:], strict=True))
            )
        else:
            ok = False
        if not ok:
            _fail(
                env,
                prop,
                f"agent_action_space({i})={a_space!r} is not a row of the stacked action space "
                f"{stacked_act!r} (MultiDiscrete -> Discrete(nvec[i]), Box[n, A] -> Box[a <= A])",
            )
        shapes = (own, tuple(a_space.shape), getattr(a_space, "n", None))
        if seen.setdefault(index[i], shapes) != shapes:
            _fail(
                env,
                prop,
                f"agent {i} of team {teams[index[i]]!r} has spaces {shapes}, another agent of "
                f"its team {seen[index[i]]}",
            )


def check_critic_observation(
    env: Any, params: Any = None, key: jax.Array | None = None, num_steps: int = ROLLOUT_STEPS
) -> None:
    """``critic_observation(state, params)`` lies in ``critic_observation_space(params)``
    (shape, dtype, bounds) and is finite, for every state of a random rollout; its shape is
    ``[C]`` for a single agent, ``[n_agents, C]`` for a multi-agent env."""
    prop = "critic_observation"
    params, key = _params(env, params), _key(key)
    if not has_critic_observation(env):
        _fail(env, prop, "env has no critic_observation(state, params) and its space")
    space = env.critic_observation_space(params)
    crit = _contract_data(env, params, key, "traj", rollout_steps=num_steps)["critic"][:num_steps]
    if is_multi_agent(env) and (len(space.shape) < 1 or space.shape[0] != env.num_agents):
        _fail(env, prop, f"space shape {space.shape} lacks the leading agent axis {env.num_agents}")
    errors = _space_layout_errors(space, crit, (num_steps,), "critic observation")
    if errors:
        _fail(env, prop, "; ".join(errors))
    if not np.all(np.isfinite(_to_np(crit))):
        _fail(env, prop, "critic observation is not finite")
    inside = _contract_data(env, params, key, "traj", rollout_steps=num_steps)["critic_in_space"]
    inside = np.asarray(inside)[:num_steps]
    if not inside.all():
        _fail(env, prop, f"critic observation at step {int(np.argmin(inside))} outside {space!r}")


def check_render(env: Any, params: Any = None, key: jax.Array | None = None) -> None:
    """``env.render(state, params)`` returns ``uint8[H, W, 3]`` after reset and after a step
    (the states of the contract program's random-action trajectory)."""
    params, key = _params(env, params), _key(key)
    traj = _contract_data(env, params, key, "traj")["traj"]
    state = jax.tree.map(lambda x: x[0], traj["state0"])
    stepped = jax.tree.map(lambda x: x[0, 0], traj["next_state"])
    for when, s in (("after reset", state), ("after a step", stepped)):
        frame = np.asarray(env.render(s, params))
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[-1] != 3 or 0 in frame.shape:
            _fail(
                env, "render", f"{when}: got {frame.dtype}{list(frame.shape)}, want uint8[H, W, 3]"
            )


# --------------------------------------------------------------------------------------------
# all of them


def check_env(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    *,
    hordax_protocol: bool | None = None,
) -> None:
    """Run every contract check that applies to ``env``; raise on the first violation.

    Args:
        env: the environment (a hordax or gymnax env).
        params: its params (``env.default_params`` if None).
        key: PRNG key (``jax.random.key(0)`` if None).
        hordax_protocol: also require hordax's ``info`` schema; default: when ``env`` is a
            :class:`hordax.envs.core.Environment`.
    """
    params, key = _params(env, params), _key(key)
    hordax_protocol = is_hordax_env(env) if hordax_protocol is None else hordax_protocol
    check_traces_once(env, params, key)
    check_spaces_and_dtypes(env, params, key)
    check_determinism(env, params, key)
    check_jit_matches_eager(env, params, key)
    check_vmap_states(env, params, key)
    check_vmap_params(env, params, key)
    check_terminal_semantics(env, params, key)
    if getattr(env, "random_reset", True):
        check_fresh_resets(env, params, key)
    check_batch_resets(env, params, key)
    check_finite(env, params, key)
    if hordax_protocol:
        check_hordax_info(env, params, key)
    if has_box_actions(env, params):
        check_nonfinite_actions(env, params, key)
        if hordax_protocol:
            check_nonfinite_actions(env, params, key, wrap=False)
    if is_multi_agent(env):
        check_multi_agent(env, params, key)
    elif has_critic_observation(env):
        check_critic_observation(env, params, key)
    if callable(getattr(env, "render", None)):
        check_render(env, params, key)
