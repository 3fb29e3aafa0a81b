"""Side-by-side evaluation of an ensemble's members, their combination and the rolling
selection (one jitted program per episode), the scores that weight them, and the
``ensemble`` section of a train summary.

Scores (:func:`curve_scores`): the annualized Sharpe ratio of per-step returns when the env
reports ``info["metrics"]["return"]`` (trading envs), of per-step rewards otherwise, and the
total return or reward; both from :mod:`hordax.envs.trading.metrics` (the one Sharpe).
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from hordax import strict_json
from hordax.envs.registry import make
from hordax.envs.trading import metrics, splits
from hordax.envs.wrappers import ClipAction
from hordax.training.config import EnsembleConfig
from hordax.training.ensemble.combine import (
    majority_vote,
    member_weights,
    rolling_init,
    rolling_update,
    weighted_average,
)
from hordax.training.ensemble.members import (
    Members,
    MixedMembers,
    agent_for,
    load_members,
    member_actions_fn,
    member_algorithms,
)
from hordax.training.host.rundir import write_atomic


def make_evaluator(
    env: Any, env_params: Any, agent: Any, members: Members, num_steps: int, algo: str = "ppo"
):
    """A jitted ``evaluate(key, weights [K], initial, window) -> dict`` of one episode.

    ``agent``: the members' agent, of algorithm ``algo`` (ppo | pqn | pql); for
    :class:`MixedMembers`, a list: one per group (``algo`` unused).
    Runs ``K + 2`` copies of the env in lockstep from the same reset key: members
    ``0..K-1`` (each acting alone), the combination (vote for discrete actions, weighted
    average for continuous ones) and the rolling selection. Each copy stops counting at its
    first episode end. Returns ``reward``, ``alive`` (``[T, K + 2]``), ``metrics``
    (``{name: [T, K + 2]}``, the env's ``info["metrics"]``) and ``choice`` (``i32[T]``:
    the member the rolling selection acted with).
    """
    space = env.action_space(env_params)
    discrete = isinstance(space, spaces.Discrete)
    wenv = ClipAction(env)
    actions_of = member_actions_fn(agent, members, discrete, algo)
    k = members.size
    runs = k + 2

    def clip(a):
        return a if discrete else jnp.clip(a, space.low, space.high)

    def evaluate(key, weights, initial, window):
        k_reset, k_run = jax.random.split(key)
        obs, state = wenv.reset(k_reset, env_params)  # same start for every copy
        obs = jnp.repeat(obs[None], runs, 0)
        state = jax.tree.map(lambda x: jnp.repeat(x[None], runs, 0), state)
        carry = (obs, state, jnp.ones((runs,), bool), rolling_init(k, window, initial))

        def body(carry, step_key):
            obs, state, alive, sel = carry
            acts = jax.vmap(lambda o: clip(actions_of(o)))(obs)  # [R, K, *A]
            own = acts[jnp.arange(k), jnp.arange(k)]  # member k on its own copy
            if discrete:
                combo = majority_vote(acts[k], space.n, weights)
            else:
                combo = weighted_average(acts[k], weights)
            rolled = acts[k + 1, sel["choice"]]
            action = jnp.concatenate([own, combo[None], rolled[None]], 0)
            obs, state, reward, term, trunc, info = jax.vmap(wenv.step, in_axes=(None, 0, 0, None))(
                step_key, state, action, env_params
            )
            done = term | trunc
            reward = jnp.where(alive, reward, 0.0).astype(jnp.float32)
            sel_next = rolling_update(sel, reward[:k], window)
            out = {
                "reward": reward,
                "alive": alive,
                "metrics": info.get("metrics", {}),
                "choice": sel["choice"],
            }
            return (obs, state, alive & ~done, sel_next), out

        _, out = jax.lax.scan(body, carry, jax.random.split(k_run, num_steps))
        return out

    return jax.jit(evaluate, static_argnums=(3,))


def equity_curves(out: dict) -> tuple[np.ndarray, str]:
    """``f64[T + 1, R]`` per run: ``1 + info["metrics"]["return"]`` when the env reports it
    (trading envs), else the cumulative reward; and which of the two (``"return"``/``"reward"``).
    Steps after a run's episode end repeat its last value."""
    alive = np.asarray(out["alive"])
    if "return" in out["metrics"]:
        value = 1.0 + np.asarray(out["metrics"]["return"], np.float64)
        kind, start = "return", 1.0
    else:
        value = np.cumsum(np.asarray(out["reward"], np.float64), axis=0)
        kind, start = "reward", 0.0
    curve = np.empty((value.shape[0] + 1, value.shape[1]))
    curve[0] = start
    for t in range(value.shape[0]):
        curve[t + 1] = np.where(alive[t], value[t], curve[t])
    return curve, kind


def resolve_periods_per_year(value: float, env: Any) -> float:
    """``value`` if > 0; else the bars per year of ``env.dates`` (the env's market data:
    ``(len(dates) - 1) / span in years``, about 252 for daily stock bars, 365 for daily
    crypto, 8,760 for hourly); else 252 (an env without dates)."""
    if value > 0:
        return float(value)
    dates = getattr(env, "dates", None)
    if dates is None or len(dates) < 2:
        return 252.0
    seconds = np.asarray(dates).astype("datetime64[s]").astype(np.int64)
    years = float(seconds[-1] - seconds[0]) / (365.25 * 86400.0)
    return float((len(seconds) - 1) / years) if years > 0 else 252.0


def curve_scores(curve: np.ndarray, kind: str, periods_per_year: float) -> dict[str, np.ndarray]:
    """Per-run ``sharpe`` (annualized, of per-step returns, or of per-step rewards when the
    env reports no return; :func:`hordax.envs.trading.metrics.sharpe_of_steps`) and
    ``return`` (cumulative return or total reward) of ``curve f64[T + 1, R]``."""
    if kind == "return":
        steps = curve[1:] / curve[:-1] - 1.0
        total = curve[-1] - 1.0
    else:
        steps = np.diff(curve, axis=0)
        total = curve[-1]
    return {"sharpe": metrics.sharpe_of_steps(steps.T, periods_per_year), "return": total}


def evaluate_run(
    cfg: Any,
    members: Members | MixedMembers,
    split: str | None,
    ens: EnsembleConfig,
    weights=None,
    initial=None,
) -> dict:
    """Evaluate members, the combination and the rolling selection.

    ``split`` (trading envs): one deterministic episode over the whole split from its first
    row; ``None``: ``ens.eval_episodes`` fresh episodes of the configured env. Weights and
    the initial rolling member come from this evaluation's own member scores unless given
    (the backtest passes the validation ones). Returns numpy arrays: ``curve``
    (``[T + 1, R]`` or ``[E, T + 1, R]``), ``kind``, ``scores`` (``{sharpe, return}: [R]``),
    ``weights``, ``initial``, ``choice``, ``metrics``, ``num_steps``.
    """
    k = members.size
    if split is not None:
        env, env_params, num_steps = splits.split_env(
            cfg.env.id, dict(cfg.env.kwargs), dict(cfg.env.params), split
        )
        keys = jax.random.key(ens.eval_seed)[None]
    else:
        env, env_params = make(cfg.env.id, params=dict(cfg.env.params), **dict(cfg.env.kwargs))
        num_steps = int(getattr(env_params, "max_steps_in_episode", 1000))
        keys = jax.random.split(jax.random.key(ens.eval_seed), ens.eval_episodes)
    agent = agent_for(cfg, env, env_params)
    evaluate = make_evaluator(env, env_params, agent, members, num_steps, cfg.agent.name)
    ppy = resolve_periods_per_year(ens.periods_per_year, env)

    def run(w, init):
        outs = [jax.device_get(evaluate(key, w, init, int(ens.window))) for key in keys]
        curves = [equity_curves(o) for o in outs]
        kind = curves[0][1]
        per_ep = [curve_scores(c, kind, ppy) for c, _ in curves]
        scores = {n: np.mean([s[n] for s in per_ep], axis=0) for n in ("sharpe", "return")}
        return outs, curves, kind, scores

    if weights is None or initial is None:
        # Members do not depend on weights: score them first, then weight.
        _, _, kind, pre = run(jnp.full((k,), 1.0 / k), jnp.int32(0))
        member_scores = pre[score_name(ens.score, kind)][:k]
        if weights is None:
            weights = np.asarray(member_weights(member_scores, ens.weighting, ens.temperature))
        if initial is None:
            initial = best_member(member_scores)
    outs, curves, kind, scores = run(jnp.asarray(weights, jnp.float32), jnp.int32(initial))
    curve = curves[0][0] if len(curves) == 1 else np.stack([c for c, _ in curves])
    return {
        "curve": curve,
        "kind": kind,
        "scores": scores,
        "weights": np.asarray(weights, np.float64),
        "initial": int(initial),
        "choice": np.asarray(outs[0]["choice"]),
        "metrics": {n: np.asarray(v) for n, v in outs[0]["metrics"].items()},
        "alive": np.asarray(outs[0]["alive"]),
        "num_steps": num_steps,
        "discrete": isinstance(env.action_space(env_params), spaces.Discrete),
        "periods_per_year": ppy,
    }


def score_name(score: str, kind: str) -> str:
    """The score actually used: ``auto`` is Sharpe for return curves, else the return."""
    if score != "auto":
        return score
    return "sharpe" if kind == "return" else "return"


def best_member(scores: Any) -> int:
    """Index of the best score (lowest index on ties; NaN counts as the worst, ``+inf`` as
    the best, as in :func:`~hordax.training.ensemble.combine.member_weights`; 0 if every
    score is NaN)."""
    s = np.where(np.isnan(scores), -np.inf, scores)
    return int(np.argmax(s))


def run_names(k: int, discrete: bool) -> list[str]:
    """Names of the ``K + 2`` evaluated runs."""
    return [f"member_{i}" for i in range(k)] + [
        "ensemble_vote" if discrete else "ensemble_average",
        "rolling_selection",
    ]


def ensemble_summary(cfg: Any, members: Members | MixedMembers) -> dict:
    """The ``ensemble`` section of a train summary: validation score of every member, the
    combination and the rolling selection, and the weights."""
    ens = cfg.ensemble
    split = "validation" if splits.supports_split(cfg.env.id) else None
    res = evaluate_run(cfg, members, split, ens)
    names = run_names(members.size, res["discrete"])
    rows = {
        name: {
            "validation_sharpe": float(res["scores"]["sharpe"][i]),
            "validation_return": float(res["scores"]["return"][i]),
        }
        for i, name in enumerate(names)
    }
    for i, algo in enumerate(member_algorithms(cfg, members)):
        rows[f"member_{i}"] = {"algorithm": algo, **rows[f"member_{i}"]}
        rows[f"member_{i}"]["weight"] = float(res["weights"][i])
    for name in names[members.size :]:
        # Their weights / first member were fitted on this same validation episode.
        rows[name]["in_sample"] = True
    return {
        "validation": split or f"{ens.eval_episodes} fresh episodes (seed {ens.eval_seed})",
        "validation_steps": res["num_steps"],
        "combination": names[members.size],
        "score": score_name(ens.score, res["kind"]),
        "weighting": ens.weighting,
        "window": int(ens.window),
        "initial_member": res["initial"],
        "sharpe_kind": res["kind"],
        "periods_per_year": res["periods_per_year"],
        "runs": rows,
    }


def add_ensemble_to_summary(cfg: Any, summary: dict, run_dir: str | None) -> dict:
    """After a population run: evaluate the ensemble, add it to ``summary`` (and to
    ``summary.json`` in ``run_dir``)."""
    if not run_dir:
        raise ValueError("agent=ensemble needs a run directory (params.msgpack)")
    members = load_members(os.path.join(run_dir, "params.msgpack"), cfg.ensemble.algorithms)
    summary = dict(summary, ensemble=ensemble_summary(cfg, members))
    if run_dir:
        write_atomic(
            os.path.join(run_dir, "summary.json"),
            strict_json.dumps(summary, indent=1, default=float),
        )
    return summary
