"""Fresh evaluation episodes in one jitted batch, their seed space, and their statistics.

Seed space: training draws every key from ``jax.random.key(seed)`` (a threefry key whose
high word is ``seed >> 32 < 2**31``, as ``seed < 2**63``); evaluation draws from
:func:`eval_root`, the key whose data is ``[2**31 | seed >> 32, seed & 0xFFFFFFFF]``, a root no
training run ever starts from. Episode ``i`` resets from ``split(eval_root(seed), N)[i]``,
so the same seed gives the same episodes for every policy (common random numbers) and
``N`` episodes are a prefix-free draw independent of training's keys.

Every episode runs to its natural end (terminated or truncated) and is counted once: an env
whose episode ended is frozen (its state, observation and totals stop changing; no
auto-reset into a second episode). The loop stops when every episode ended; an episode
still running after ``max_steps`` is an error (never a partial episode in the mean).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.core import step_no_reset, supports_step_no_reset
from hordax.envs.wrappers import ClipAction

#: The high bit of the first key word: set in every evaluation root, never in a training one.
EVAL_TAG = 0x80000000


def eval_root(seed: int) -> jax.Array:
    """The root key of evaluation seed ``seed`` (``0 <= seed < 2**63``); disjoint from
    ``jax.random.key(s)`` for every training seed ``s`` (see the module docstring)."""
    if not 0 <= int(seed) < 2**63:
        raise ValueError(f"seed={seed}: must be an integer in [0, 2**63)")
    data = np.array([EVAL_TAG | (int(seed) >> 32), int(seed) & 0xFFFFFFFF], np.uint32)
    return jax.random.wrap_key_data(jnp.asarray(data), impl="threefry2x32")


def episode_keys(seed: int, num_episodes: int) -> jax.Array:
    """``key[num_episodes]``: the reset-and-step key of each evaluation episode."""
    return jax.random.split(eval_root(seed), num_episodes)


class Policy:
    """What the runner calls, batched over episodes ``[N]``:

    - ``initial_carry(n)``: the recurrent state (``()`` for feed-forward policies);
    - ``act(params, stats, carry, obs [N, ...], first bool[N], key) -> (action [N, ...],
      carry)``: ``first`` marks an episode's first observation (recurrent carries reset).
    """

    initial_carry: Callable[[int], Any]
    act: Callable[..., tuple[Any, Any]]


def _where(mask: jax.Array, new: Any, old: Any) -> Any:
    """Per-episode select of two batched pytrees (``mask bool[N]``)."""

    def sel(a, b):
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree.map(sel, new, old)


def _env_step(env: Any) -> Callable:
    """``step(key, state, action, params)`` of one env without its auto-reset where the
    stack supports it (the reset would be thrown away: ended episodes are frozen)."""
    if supports_step_no_reset(env):
        return lambda k, s, a, p: step_no_reset(env, k, s, a, p)
    return env.step


def make_runner(env: Any, env_params: Any, policy: Policy, max_steps: int) -> Callable:
    """``run(params, stats, keys [N]) -> dict`` (jitted): ``N`` episodes, one per key.

    Returns ``return f32[N]`` (multi-agent envs, reward ``[N, A]``: ``f32[N, A]``, each
    agent's reward summed over the steps it was active on: ``env.agent_mask`` of the state
    it acted in, its arrival step included, as :class:`~hordax.envs.wrappers.LogEpisode`
    sums it), ``active bool[N, A]`` (multi-agent: the agent was active in a state it acted
    in, i.e. on some step), ``length i32[N]``, ``terminated bool[N]`` (vs truncated),
    ``metrics {name: [N]}`` (``info["metrics"]`` on each episode's last step) and ``done
    bool[N]`` (False: still running after ``max_steps``, which the caller refuses).
    Actions go through :class:`~hordax.envs.wrappers.ClipAction`, as in training.
    """
    wenv = ClipAction(env)
    step = _env_step(wenv)

    def run(params, stats, keys):
        n = keys.shape[0]
        ks = jax.vmap(jax.random.split)(keys)  # [N, 2]: reset key, loop key
        obs, state = jax.vmap(wenv.reset, in_axes=(0, None))(ks[:, 0], env_params)
        act0, _ = policy.act(
            params, stats, policy.initial_carry(n), obs, jnp.ones(n, bool), ks[0, 1]
        )
        info0 = jax.eval_shape(
            jax.vmap(step, in_axes=(0, 0, 0, None)), ks[:, 0], state, act0, env_params
        )[5]
        metrics0 = jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), info0.get("metrics", {}))
        shape = jax.eval_shape(
            jax.vmap(step, in_axes=(0, 0, 0, None)), ks[:, 0], state, act0, env_params
        )[2].shape  # [N] or [N, A]
        carry = {
            "t": jnp.int32(0),
            "obs": obs,
            "state": state,
            "rnn": policy.initial_carry(n),
            "first": jnp.ones(n, bool),
            "alive": jnp.ones(n, bool),
            "return": jnp.zeros(shape, jnp.float32),
            "active": jnp.zeros(shape, bool),
            "length": jnp.zeros(n, jnp.int32),
            "terminated": jnp.zeros(n, bool),
            "metrics": metrics0,
            "keys": ks[:, 1],
        }

        def cond(c):
            return jnp.any(c["alive"]) & (c["t"] < max_steps)

        def body(c):
            keys = jax.vmap(jax.random.split)(c["keys"])  # [N, 2]
            k_act = jax.random.fold_in(keys[0, 1], c["t"])
            action, rnn = policy.act(params, stats, c["rnn"], c["obs"], c["first"], k_act)
            obs, state, reward, term, trunc, info = jax.vmap(step, in_axes=(0, 0, 0, None))(
                keys[:, 1], c["state"], action, env_params
            )
            alive = c["alive"]
            ended = alive & (term | trunc)
            counted = alive.reshape(alive.shape + (1,) * (reward.ndim - 1))
            if reward.ndim > 1:  # multi-agent: agents masked in the state they acted in add
                # nothing (``info["agent_mask"]`` is the mask of the state the step returns)
                acting = jax.vmap(wenv.agent_mask, in_axes=(0, None))(c["state"], env_params)
                counted = counted & acting
            metrics = {
                k: jnp.where(ended, v.astype(jnp.float32), c["metrics"][k])
                for k, v in info.get("metrics", {}).items()
            }
            return {
                "t": c["t"] + 1,
                "obs": _where(alive, obs, c["obs"]),
                "state": _where(alive, state, c["state"]),
                "rnn": _where(alive, rnn, c["rnn"]),
                "first": jnp.zeros(n, bool),
                "alive": alive & ~(term | trunc),
                "return": c["return"] + jnp.where(counted, reward.astype(jnp.float32), 0.0),
                "active": c["active"] | counted,
                "length": c["length"] + alive.astype(jnp.int32),
                "terminated": c["terminated"] | (alive & term),
                "metrics": metrics,
                "keys": keys[:, 0],
            }

        out = jax.lax.while_loop(cond, body, carry)
        return {
            "return": out["return"],
            "active": out["active"],
            "length": out["length"],
            "terminated": out["terminated"],
            "metrics": out["metrics"],
            "done": ~out["alive"],
        }

    return jax.jit(run)


def make_trajectory(env: Any, env_params: Any, policy: Policy, num_steps: int) -> Callable:
    """``trajectory(params, stats, keys [V]) -> (states [T, V], alive bool[T, V])``: the
    env states of the first ``V`` evaluation episodes (the same keys and actions as
    :func:`make_runner`'s), for rendering; ``alive[t]``: the episode had not ended before
    step ``t``."""
    wenv = ClipAction(env)
    step = _env_step(wenv)

    def trajectory(params, stats, keys):
        n = keys.shape[0]
        ks = jax.vmap(jax.random.split)(keys)
        obs, state = jax.vmap(wenv.reset, in_axes=(0, None))(ks[:, 0], env_params)

        def body(c, t):
            obs, state, rnn, first, alive, keys = c
            keys = jax.vmap(jax.random.split)(keys)
            action, rnn = policy.act(
                params, stats, rnn, obs, first, jax.random.fold_in(keys[0, 1], t)
            )
            nobs, nstate, _, term, trunc, _ = jax.vmap(step, in_axes=(0, 0, 0, None))(
                keys[:, 1], state, action, env_params
            )
            out = (state, alive)
            c = (
                _where(alive, nobs, obs),
                _where(alive, nstate, state),
                rnn,
                jnp.zeros(n, bool),
                alive & ~(term | trunc),
                keys[:, 0],
            )
            return c, out

        init = (obs, state, policy.initial_carry(n), jnp.ones(n, bool), jnp.ones(n, bool), ks[:, 1])
        _, (states, alive) = jax.lax.scan(body, init, jnp.arange(num_steps))
        return states, alive

    return jax.jit(trajectory)


def t_quantile(n: int, level: float = 0.95) -> float:
    """Two-sided Student-t quantile for ``n`` samples (``n - 1`` degrees of freedom)."""
    from scipy import stats  # a dependency of jax

    return float(stats.t.ppf(0.5 + level / 2, n - 1))


def interval(values: Any, level: float = 0.95) -> dict[str, Any]:
    """``{"mean", "ci95": [lo, hi], "std"}`` of ``values [n]``: the sample mean and its
    Student-t confidence interval, ``mean -/+ t_{n-1} s / sqrt(n)`` (``s``: sample standard
    deviation, ``ddof=1``); ``ci95`` and ``std`` are None for ``n < 2``."""
    x = np.asarray(values, np.float64).reshape(-1)
    n = x.size
    mean = float(np.mean(x)) if n else math.nan
    if n < 2:
        return {"mean": mean, "ci95": None, "std": None}
    std = float(np.std(x, ddof=1))
    half = t_quantile(n, level) * std / math.sqrt(n)
    return {"mean": mean, "ci95": [mean - half, mean + half], "std": std}


def masked_mean(returns: Any, active: Any) -> np.ndarray:
    """Per episode: the mean return over the agents that were ever active (``[N, A]`` ->
    ``[N]``; NaN where none was)."""
    r, a = np.asarray(returns, np.float64), np.asarray(active, bool)
    with np.errstate(invalid="ignore"):
        return np.sum(np.where(a, r, 0.0), axis=1) / np.sum(a, axis=1)


def episode_stats(out: dict, team_index: Any = None, team_names: Any = None) -> dict[str, Any]:
    """The statistics of a runner's output (numpy): ``return``, ``episode_length`` and
    every task metric as :func:`interval`, ``terminated`` (fraction), ``episodes`` and
    ``steps`` (env steps taken by the episodes). Multi-agent (``return [N, A]``): ``return``
    is the masked mean over agents per episode, ``team_return`` that of each team
    (``team_index``: the static team of each agent slot, ``team_names``)."""
    ret = np.asarray(out["return"])
    extra = {}
    if ret.ndim > 1:
        active = np.asarray(out["active"])
        teams = np.zeros(ret.shape[1], int) if team_index is None else np.asarray(team_index)
        names = team_names or [f"team_{t}" for t in range(int(teams.max()) + 1)]
        extra["team_return"] = {
            name: interval(masked_mean(ret[:, teams == t], active[:, teams == t]))
            for t, name in enumerate(names)
        }
        ret = masked_mean(ret, active)
    return {
        "episodes": int(ret.shape[0]),
        "steps": int(np.sum(out["length"])),
        "return": interval(ret),
        **extra,
        "episode_length": interval(out["length"]),
        "terminated": float(np.mean(out["terminated"])),
        "metrics": {k: interval(v) for k, v in sorted(out["metrics"].items())},
    }
