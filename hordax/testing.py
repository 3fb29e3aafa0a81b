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
*instance*: reuse one ``(env, params)`` across checks to compile each program once.
"""

from __future__ import annotations

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
from hordax.envs.core import has_critic_observation, is_multi_agent, supports_step_no_reset
from hordax.envs.spaces import MultiDiscrete
from hordax.envs.wrappers.clip import ClipAction
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
_fresh_tag = itertools.count()


# --------------------------------------------------------------------------------------------
# small utilities


def unwrapped(env: Any) -> Any:
    """The innermost environment under any stack of wrappers (``_env`` chain)."""
    while hasattr(env, "_env"):
        env = env._env
    return env


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
    return str(jax.typeof(x)) if isinstance(x, jax.Array) else f"python {type(x).__name__}"


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


@functools.partial(jax.jit, static_argnames=("env", "num_steps"))
def terminal_rollout(env: Any, params: Any, key: jax.Array, num_steps: int) -> _TerminalRecord:
    """Random-action rollout recording, per step, the parts gymnax's ``step`` combines.

    Splits each step key as the base class does (``key_step, key_reset = split(key)``) and
    evaluates ``step_env``/``reset_env`` beside ``step``, so auto-reset and
    ``info["final_observation"]`` can be checked against them.
    """
    no_limit = _with_max_steps(params, np.iinfo(np.int32).max)
    key_reset, key_steps = jax.random.split(key)
    obs0, state0 = env.reset(key_reset, params)
    act_space = env.action_space(params)

    def body(carry, k):
        obs, state = carry
        k_act, k = jax.random.split(k)
        action = act_space.sample(k_act)
        out = env.step(k, state, action, params)
        key_step, key_reset = jax.random.split(k)
        obs_st, state_st, reward_st, terminated_st, _ = env.step_env(
            key_step, state, action, params
        )
        terminated_no_limit = env.step_env(key_step, state, action, no_limit)[3]
        obs_re, state_re = env.reset_env(key_reset, params)
        record = _TerminalRecord(
            prev_state=state,
            out=out,
            obs_st=obs_st,
            state_st=state_st,
            reward_st=reward_st,
            terminated_st=terminated_st,
            terminated_no_limit=terminated_no_limit,
            is_truncated=env.is_truncated(state_st, params),
            obs_re=obs_re,
            state_re=state_re,
        )
        return (out[0], out[1]), record

    _, record = jax.lax.scan(body, (obs0, state0), jax.random.split(key_steps, num_steps))
    return record


@functools.cache
def _clip_wrapped(env: Any) -> ClipAction:
    return ClipAction(env)


def _step_at(tree: Any, t: int) -> Any:
    return jax.tree.map(lambda x: _to_np(x)[t], tree)


# --------------------------------------------------------------------------------------------
# 1. tracing


def check_traces_once(
    env: Any, params: Any = None, key: jax.Array | None = None, num_calls: int = 4
) -> None:
    """``jax.jit(chex.assert_max_traces(fn, n=1))`` of ``reset`` and ``step`` over new inputs.

    Calls reset with ``num_calls`` keys and chains ``num_calls`` steps (each on the state the
    previous one returned). A second trace means an input's abstract value changed, most
    often a state leaf whose dtype or weak type differs between ``reset`` and ``step``.
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
            _, state = reset(k, params)
    except AssertionError as err:
        _fail(env, "traces_once", f"jitted reset traced more than once: {str(err).splitlines()[0]}")
    space = env.action_space(params)
    state0 = state
    try:
        for i in range(num_calls):
            action = space.sample(keys[num_calls + i])
            _, state, *_ = step(keys[2 * num_calls + i], state, action, params)
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


def check_spaces_and_dtypes(
    env: Any, params: Any = None, key: jax.Array | None = None, num_steps: int = ROLLOUT_STEPS
) -> None:
    """Obs/actions inside their spaces with matching shape and dtype; reward, flags, time, info.

    Asserted at reset, at every step of a ``num_steps`` random rollout (through auto-resets)
    and on ``info["final_observation"]``: ``bool(observation_space(params).contains(obs))``;
    sampled actions inside ``action_space``; reward ``float32`` of shape ``()`` (multi-agent
    ``(n_agents,)``); ``terminated``/``truncated`` ``bool[]``; ``state.time`` ``int32[]``;
    ``info`` pytree structure and leaf shapes identical across steps.
    """
    prop = "spaces_and_dtypes"
    params, key = _params(env, params), _key(key)
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    k_reset, k_act, k_step1, k_step2 = jax.random.split(key, 4)

    obs, state = env.reset(k_reset, params)
    try:
        assert_in_space(obs_space, obs, "reset observation")
        action = act_space.sample(k_act)
        assert_in_space(act_space, action, "sampled action")
    except AssertionError as err:
        _fail(env, prop, str(err))

    time = getattr(state, "time", None)
    if time is not None and (jnp.shape(time) != () or jnp.result_type(time) != jnp.int32):
        _fail(env, prop, f"state.time is {_aval(time)}, want int32[]")

    n_agents = env.num_agents if is_multi_agent(env) else None
    reward_shape = () if n_agents is None else (n_agents,)
    out1 = env.step(k_step1, state, action, params)
    out2 = env.step(k_step2, out1[1], action, params)
    for i, out in enumerate((out1, out2), start=1):
        step_obs, step_state, reward, terminated, truncated, info = out
        try:
            assert_in_space(obs_space, step_obs, f"observation after step {i}")
        except AssertionError as err:
            _fail(env, prop, str(err))
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
    shapes = [
        jax.tree.map(lambda x: (jnp.shape(x), jnp.result_type(x)), o[5]) for o in (out1, out2)
    ]
    if shapes[0] != shapes[1]:
        _fail(env, prop, f"info leaf shapes/dtypes change between steps: {shapes}")
    if jax.tree.structure(out1[1]) != jax.tree.structure(state):
        _fail(env, prop, "state pytree structure differs between reset and step")

    traj = rollout(env, params, key, num_steps)
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


def check_determinism(
    env: Any, params: Any = None, key: jax.Array | None = None, num_steps: int = ROLLOUT_STEPS
) -> None:
    """Same key -> bitwise-identical ``num_steps`` trajectory, from two separate traces.

    The default length reuses the compiled rollout of the other checks (any length >= 50 is
    a meaningful test).

    The second run traces ``reset_env``/``step_env`` afresh (bypassing the jit cache of the
    env's own ``reset``/``step``), so host-side randomness baked in at trace time
    (``np.random`` in ``step_env``) is caught too.
    """
    params, key = _params(env, params), _key(key)
    first = rollout(env, params, key, num_steps)
    fresh = functools.partial(_rollout_impl, _Untraced(env), num_steps=num_steps, actions=None)
    second = jax.jit(fresh)(params, key)
    try:
        assert_trees_close(second, first, "trajectory (run 2 vs run 1)", exact=True)
    except AssertionError as err:
        _fail(env, "determinism", str(err))


def check_jit_matches_eager(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    num_steps: int = 4,
    max_steps: int = 2,
) -> None:
    """Jitted ``reset``/``step`` equal the same calls under ``jax.disable_jit()`` (atol 1e-5).

    Uses ``max_steps_in_episode=max_steps`` so the auto-reset branch is exercised too.
    """
    params, key = _with_max_steps(_params(env, params), max_steps), _key(key)
    keys = jax.random.split(key, 2 * num_steps + 1)
    space = env.action_space(params)
    actions = [space.sample(k) for k in keys[1 : num_steps + 1]]
    step_keys = keys[num_steps + 1 :]

    def run():
        outs = [env.reset(keys[0], params)]
        state = outs[0][1]
        for k, a in zip(step_keys, actions, strict=True):
            outs.append(env.step(k, state, a, params))
            state = outs[-1][1]
        return outs

    jitted = run()
    with jax.disable_jit():
        eager = run()
    try:
        assert_trees_close(eager[0], jitted[0], "reset (eager vs jit)", **_TOL)
        for t in range(1, num_steps + 1):
            assert_trees_close(eager[t], jitted[t], f"step {t} (eager vs jit)", **_TOL)
    except AssertionError as err:
        _fail(env, "jit_matches_eager", str(err))


# --------------------------------------------------------------------------------------------
# 4. vmap


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


def check_vmap_states(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    num_envs: int = 4,
    num_steps: int = 4,
    max_steps: int = 3,
) -> None:
    """``jax.vmap(env.step)`` over ``num_envs`` keys/states equals ``num_envs`` separate calls.

    ``max_steps_in_episode=max_steps`` < ``num_steps`` puts an auto-reset inside the batch.
    """
    params, key = _with_max_steps(_params(env, params), max_steps), _key(key)
    k_reset, k_act, k_step = jax.random.split(key, 3)
    space = env.action_space(params)
    vreset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    vstep = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    reset_keys = jax.random.split(k_reset, num_envs)
    obs, states = vreset(reset_keys, params)
    singles = [env.reset(reset_keys[i], params) for i in range(num_envs)]
    try:
        for i in range(num_envs):
            assert_trees_close(_slot((obs, states), i), singles[i], f"vmap reset, env {i}", **_TOL)
        for t in range(num_steps):
            keys = jax.random.split(jax.random.fold_in(k_step, t), num_envs)
            actions = jax.vmap(space.sample)(
                jax.random.split(jax.random.fold_in(k_act, t), num_envs)
            )
            batched = vstep(keys, states, actions, params)
            for i in range(num_envs):
                single = env.step(keys[i], singles[i][1], _slot(actions, i), params)
                assert_trees_close(_slot(batched, i), single, f"vmap step {t + 1}, env {i}", **_TOL)
                singles[i] = single
            states = batched[1]
    except AssertionError as err:
        _fail(env, "vmap_states", str(err))


def check_vmap_params(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    num_envs: int = 4,
    num_steps: int = 4,
    scale: float = 0.05,
) -> None:
    """``vmap`` over ``num_envs`` *different* params equals one un-vmapped call per instance.

    Params come from :func:`perturb_params` (float leaf ``i`` times ``1 + scale * i``): this
    is domain randomization by ``vmap`` over params. Every instance uses the same keys, so
    the instances' trajectories may differ only through params; if they are all identical
    the env ignores the params it is given (e.g. reads ``self.default_params``).
    """
    prop = "vmap_params"
    params, key = _params(env, params), _key(key)
    batched_params, axes = perturb_params(params, num_envs, scale)
    perturbed = bool(jax.tree.leaves(axes))
    if not perturbed:  # no float field (e.g. grid layouts): vmap over identical copies
        batched_params = jax.tree.map(lambda x: jnp.stack([jnp.asarray(x)] * num_envs), params)
        axes = jax.tree.map(lambda _: 0, params)
    k_reset, k_act, k_step = jax.random.split(key, 3)
    vreset = jax.jit(jax.vmap(env.reset, in_axes=(None, axes)))
    vstep = jax.jit(jax.vmap(env.step, in_axes=(None, 0, None, axes)))
    each = [_slot(batched_params, i, axes) for i in range(num_envs)]
    obs, states = vreset(k_reset, batched_params)
    singles = [env.reset(k_reset, each[i]) for i in range(num_envs)]
    history = [[singles[i]] for i in range(num_envs)]
    space = env.action_space(params)
    try:
        for i in range(num_envs):
            assert_trees_close(
                _slot((obs, states), i), singles[i], f"vmap-over-params reset, params {i}", **_TOL
            )
        for t in range(num_steps):
            k, action = jax.random.fold_in(k_step, t), space.sample(jax.random.fold_in(k_act, t))
            batched = vstep(k, states, action, batched_params)
            for i in range(num_envs):
                single = env.step(k, singles[i][1], action, each[i])
                assert_trees_close(
                    _slot(batched, i), single, f"vmap-over-params step {t + 1}, params {i}", **_TOL
                )
                singles[i] = single
                history[i].append(single[:3])
            states = batched[1]
    except AssertionError as err:
        _fail(env, prop, str(err))
    if not perturbed:  # nothing differs between the instances to compare
        return
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
    params, key = _with_max_steps(_params(env, params), max_steps), _key(key)
    if not _uses_gymnax_step(env):
        _fail(env, prop, "env overrides step(); this check covers gymnax's inherited step")
    rec = jax.device_get(terminal_rollout(env, params, key, num_steps))
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
    info = rollout(env, params, key, num_steps).info
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
            if not isinstance(value, jax.Array):
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
    params, key = _with_max_steps(_params(env, params), max_steps), _key(key)
    rec = jax.device_get(terminal_rollout(env, params, key, num_steps))
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
            np.array_equal(a, b)
            for (_, a), (_, b) in zip(leaves(starts[i]), leaves(starts[j]), strict=True)
        )

    if all(same(0, j) for j in range(1, len(starts))):
        _fail(
            env,
            prop,
            f"all {len(starts)} episodes start in the same state (cached reset?): {starts[0]}",
        )


@functools.partial(jax.jit, static_argnames=("env", "num_envs", "num_steps", "reset_pool"))
def batch_rollout(
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


def check_batch_resets(
    env: Any,
    params: Any = None,
    key: jax.Array | None = None,
    num_envs: int = 4,
    num_steps: int = 8,
    max_steps: int = 3,
    reset_pool: int = 1,
) -> None:
    """The batch layer's amortized fresh resets equal gymnax's in-step resets.

    ``VecEnv(env, num_envs, reset_pool=1)`` steps without the reset and resets the finished
    slots one pool round at a time; with ``max_steps_in_episode=max_steps`` every env
    truncates together, so rounds overflow. Asserted: the env supports the no-reset step
    (it uses gymnax's inherited ``step``); every output (obs, state, reward, flags, info with
    ``final_observation``; a multi-agent ``VecEnv``'s ``info["next_agent_mask"]`` equals
    ``env.agent_mask`` of the slot's returned state) equals one ``env.step`` per slot on the
    slot's key (floats to
    1e-5: the two programs may fuse float arithmetic differently; the random draws are the
    same); some step ended more than ``reset_pool`` episodes; and (``env.random_reset``) the
    slots reset on that step did not all start alike. The reference reuses the compiled
    ``env.step`` of the other checks, so this check compiles one program.
    """
    prop = "batch_resets"
    params, key = _with_max_steps(_params(env, params), max_steps), _key(key)
    if not supports_step_no_reset(env):
        _fail(env, prop, "env overrides step(): VecEnv cannot step it without the reset")
    state0, keys, actions, outs = batch_rollout(env, params, key, num_envs, num_steps, reset_pool)
    outs = jax.device_get(outs)
    singles = [_slot(state0, i) for i in range(num_envs)]
    try:
        for t in range(num_steps):
            slot_keys = jax.random.split(jax.random.split(keys[t])[1], num_envs)
            for i in range(num_envs):
                single = env.step(slot_keys[i], singles[i], _slot(actions[t], i), params)
                where = f"step {t + 1}, env {i}: pooled vs in-step reset"
                pooled = _slot(_step_at(outs, t), i)
                info = dict(pooled[5])
                if "next_agent_mask" in info:  # VecEnv's own: the returned state's agent_mask
                    mask = info.pop("next_agent_mask")
                    expected = np.asarray(env.agent_mask(single[1], params))
                    assert np.array_equal(mask, expected), f"{where}: next_agent_mask"
                assert_trees_close((*pooled[:5], info), single, where, **_TOL)
                singles[i] = single[1]
    except AssertionError as err:
        _fail(env, prop, str(err))
    done = np.asarray(outs[3]) | np.asarray(outs[4])
    t = int(np.argmax(done.sum(1)))
    if done[t].sum() <= reset_pool:
        _fail(env, prop, f"no step ended more than reset_pool={reset_pool} episodes")
    if not getattr(env, "random_reset", True):
        return
    starts = [
        [x for p, x in _flat(_slot(_step_at(outs[1], t), i))[0] if not p.endswith(".time")]
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
    traj = rollout(env, params, key, num_steps)
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
    DESIGN.md, NaN actions are never silently propagated into state).
    """
    prop = "nonfinite_actions"
    params, key = _params(env, params), _key(key)
    space = env.action_space(params)
    if not has_box_actions(env, params):
        _fail(env, prop, f"needs a float Box action space, got {space!r}")
    target = _clip_wrapped(env) if wrap else env
    traj = rollout(target, params, key, num_steps, nonfinite_actions(space, num_steps))
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

    Also ``info["agent_terminated"]`` and ``info["agent_mask"]`` ``bool[n_agents]``.
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
    traj = rollout(env, params, key, num_steps)
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
    _check_teams(env, params, traj)
    if has_critic_observation(env):
        check_critic_observation(env, params, key)


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


@functools.partial(jax.jit, static_argnames=("env",))
def _critic_obs(env: Any, states: Any, params: Any) -> Any:
    return jax.vmap(env.critic_observation, in_axes=(0, None))(states, params)


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
    traj = rollout(env, params, key, num_steps)
    crit = _critic_obs(env, traj.next_state, params)
    if is_multi_agent(env) and (len(space.shape) < 1 or space.shape[0] != env.num_agents):
        _fail(env, prop, f"space shape {space.shape} lacks the leading agent axis {env.num_agents}")
    errors = _space_layout_errors(space, crit, (num_steps,), "critic observation")
    if errors:
        _fail(env, prop, "; ".join(errors))
    if not np.all(np.isfinite(_to_np(crit))):
        _fail(env, prop, "critic observation is not finite")
    inside = np.asarray(jax.vmap(lambda x: _space_contains(space, x))(crit))
    if not inside.all():
        _fail(env, prop, f"critic observation at step {int(np.argmin(inside))} outside {space!r}")


def check_render(env: Any, params: Any = None, key: jax.Array | None = None) -> None:
    """``env.render(state, params)`` returns ``uint8[H, W, 3]`` after reset and after a step."""
    params, key = _params(env, params), _key(key)
    k_reset, k_act, k_step = jax.random.split(key, 3)
    _, state = env.reset(k_reset, params)
    action = env.action_space(params).sample(k_act)
    stepped = env.step(k_step, state, action, params)[1]
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
