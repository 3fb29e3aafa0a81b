"""Ensembles of trained members (PPO, or mixed PPO / PQN / PQL): vote, average, rolling.

A population run (``population.size = K``, :mod:`hordax.training.population`) leaves
``params.msgpack`` with every leaf stacked on a leading ``[K]`` member axis (plus the
members' normalizer statistics). This module turns those K members into combined policies
that are pure and jittable, and evaluates members and combinations side by side:

- **vote** (discrete actions): every member's greedy action gets one vote; the action with
  the most votes wins. Ties go to the action whose voters have the larger total weight
  (the validation weights below), then to the lowest action index.
- **weighted average** (continuous actions): each member's greedy action is clipped into
  the action box and the clipped actions are averaged with the validation weights.
- **rolling selection** (FinRL's ensemble strategy): time is cut into windows of ``W``
  steps; during window ``j`` the policy acts with the member whose own run had the best
  Sharpe ratio of per-step rewards over window ``j - 1`` (ties: lowest member index).
  Window 0 uses ``initial`` (the member with the best validation score). Only rewards of
  steps already taken are used (no look-ahead; tested). Unlike FinRL, members are not
  retrained between windows.

Weights from validation scores ``s[K]`` (Sharpe or return, see :class:`EnsembleConfig`):
``positive``: ``max(s, 0) / sum`` (equal weights if no score is positive); ``softmax``:
``softmax(s / temperature)``; ``equal``: ``1 / K``. Non-finite scores count as the worst.

Members are the members of one population of ``agent`` (they may differ in seed and in the
traced hyperparameters), or, with ``ensemble.algorithms=[ppo,pqn]`` (or ``[ppo,pql]``),
the members of one population group per algorithm trained side by side in one program
(:mod:`hordax.training.mixed`). Every member acts greedily through its agent's
``act_greedy``: PPO the Gaussian mean / the most likely action, PQN ``argmax_a Q``, PQL
its deterministic actor; each with its own frozen observation-normalizer statistics.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization
from gymnax.environments import spaces

from hordax import strict_json

WEIGHTINGS = ("positive", "softmax", "equal")
SCORES = ("auto", "sharpe", "return")


@dataclass
class EnsembleConfig:
    """Ensemble of the population's members (hydra group key ``ensemble``)."""

    enabled: bool = False
    """After training, evaluate members and ensembles on validation (``agent=ensemble``)."""
    members: int = 4
    """K, the population size of an ensemble run when ``population.size`` is left at 1
    (train.yaml's own value, which a group preset cannot override); ``population.size >= 2``
    wins."""
    score: str = "auto"
    """Validation score for weights and the initial rolling choice: sharpe | return | auto
    (Sharpe when the env reports ``info["metrics"]["return"]``, else the episode return)."""
    weighting: str = "positive"
    """positive (clipped-positive normalized) | softmax | equal."""
    temperature: float = 1.0
    """Softmax temperature (weighting=softmax)."""
    window: int = 63
    """Rolling selection window in env steps (63 trading days = FinRL's quarter)."""
    eval_episodes: int = 8
    """Non-trading envs: fresh evaluation episodes per member and ensemble."""
    eval_seed: int = 1_000_003
    """Seed of the evaluation episodes (never a training seed by default)."""
    periods_per_year: float = 0.0
    """Annualization of Sharpe and volatility; 0 = inferred from the env's market data
    (bars per year over its dates: about 252 for daily stock bars, 8,760 for hourly crypto;
    252 for an env without dates). Give a number to override."""
    algorithms: list[str] = field(default_factory=list)
    """Members of different algorithms side by side, e.g. [ppo, pqn] (discrete actions) or
    [ppo, pql] (continuous); [] = one population of ``agent``."""
    sizes: list[int] = field(default_factory=list)
    """Members per algorithm of ``algorithms`` ([] = ``members`` each)."""
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Config overrides of the algorithms other than ``agent``, e.g.
    ``ensemble.agents.pqn.learning_rate=5e-4`` (the ``agent`` algorithm uses ``agent.*``)."""


def apply_members(dict_cfg: Any) -> None:
    """``population.size = ensemble.members`` in a composed config (in place) when the
    ensemble is enabled and the population size is left at 1."""
    ens = dict_cfg.get("ensemble")
    if ens is not None and ens.get("enabled") and int(dict_cfg.population.size) == 1:
        if ens.get("algorithms"):  # mixed: the total over the algorithms' groups
            sizes = list(ens.sizes) or [int(ens.members)] * len(ens.algorithms)
            dict_cfg.population.size = int(sum(int(x) for x in sizes))
        else:
            dict_cfg.population.size = int(ens.members)


def validate_ensemble(cfg: EnsembleConfig) -> None:
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed."""
    if cfg.score not in SCORES:
        raise ValueError(f"ensemble.score={cfg.score!r}: allowed values are {list(SCORES)}")
    if cfg.weighting not in WEIGHTINGS:
        raise ValueError(
            f"ensemble.weighting={cfg.weighting!r}: allowed values are {list(WEIGHTINGS)}"
        )
    if not (cfg.temperature > 0 and math.isfinite(cfg.temperature)):
        raise ValueError(f"ensemble.temperature={cfg.temperature}: must be a finite number > 0")
    if int(cfg.window) < 1:
        raise ValueError(f"ensemble.window={cfg.window}: must be an integer >= 1")
    if int(cfg.eval_episodes) < 1:
        raise ValueError(f"ensemble.eval_episodes={cfg.eval_episodes}: must be an integer >= 1")
    if not (cfg.periods_per_year >= 0 and math.isfinite(cfg.periods_per_year)):
        raise ValueError(
            f"ensemble.periods_per_year={cfg.periods_per_year}: must be > 0, or 0 to infer it"
            " from the env's dates"
        )


# --- combination rules (pure, jittable) ---------------------------------------------------


def member_weights(scores: Any, weighting: str = "positive", temperature: float = 1.0):
    """``f32[K]`` weights summing to 1 from validation ``scores[K]`` (see module doc)."""
    s = jnp.asarray(scores, jnp.float32)
    k = s.shape[0]
    finite = jnp.isfinite(s)
    if weighting == "equal":
        return jnp.full((k,), 1.0 / k, jnp.float32)
    if weighting == "positive":
        pos = jnp.where(finite, jnp.maximum(s, 0.0), 0.0)
        total = pos.sum()
        return jnp.where(total > 0, pos / jnp.where(total > 0, total, 1.0), 1.0 / k)
    if weighting == "softmax":
        logits = jnp.where(finite, s / temperature, -jnp.inf)
        logits = jnp.where(finite.any(), logits, 0.0)
        return jax.nn.softmax(logits)
    raise ValueError(f"weighting={weighting!r}: allowed values are {list(WEIGHTINGS)}")


def majority_vote(actions: jax.Array, num_actions: int, weights: jax.Array | None = None):
    """``i32[]`` winner of ``actions: int[K]`` (one vote each; ties: larger total weight of
    the voters, then the lowest action index). Weights must sum to at most 1."""
    onehot = jax.nn.one_hot(actions, num_actions, dtype=jnp.float32)  # [K, A]
    counts = onehot.sum(0)
    if weights is not None:
        # The weight term is < 1, so it only orders actions with equal counts.
        counts = counts + 0.5 * (weights[:, None] * onehot).sum(0)
    return jnp.argmax(counts).astype(jnp.int32)  # argmax: first maximum = lowest index


def weighted_average(actions: jax.Array, weights: jax.Array) -> jax.Array:
    """``f32[*A]``: ``sum_k weights[k] * actions[k]`` for ``actions: f32[K, *A]``."""
    w = weights.reshape((-1,) + (1,) * (actions.ndim - 1))
    return jnp.sum(w * actions, axis=0)


def window_sharpe(total: jax.Array, total_sq: jax.Array, n: Any) -> jax.Array:
    """Sharpe (mean / std, not annualized) from sums of ``n`` per-step rewards; 0 if flat."""
    mean = total / n
    var = jnp.maximum(total_sq / n - mean**2, 0.0)
    std = jnp.sqrt(var)
    return jnp.where(std > 1e-12, mean / jnp.where(std > 1e-12, std, 1.0), 0.0)


def rolling_init(num_members: int, initial: Any = 0) -> dict:
    """State of the rolling selector: current choice and the current window's sums."""
    z = jnp.zeros((num_members,), jnp.float32)
    return {"choice": jnp.int32(initial), "sum": z, "sum_sq": z, "n": jnp.int32(0)}


def rolling_update(sel: dict, member_rewards: jax.Array, window: int) -> dict:
    """Add one step's ``member_rewards: f32[K]``; at a window's end, choose the member with
    the best Sharpe over that window (it acts during the next window)."""
    total = sel["sum"] + member_rewards
    total_sq = sel["sum_sq"] + member_rewards**2
    n = sel["n"] + 1
    full = n >= window
    best = jnp.argmax(window_sharpe(total, total_sq, jnp.float32(window))).astype(jnp.int32)
    zero = jnp.zeros_like(total)
    return {
        "choice": jnp.where(full, best, sel["choice"]),
        "sum": jnp.where(full, zero, total),
        "sum_sq": jnp.where(full, zero, total_sq),
        "n": jnp.where(full, 0, n),
    }


def rolling_choices(member_rewards: jax.Array, window: int, initial: Any = 0) -> jax.Array:
    """``i32[T]``: the member acting at each step, given ``member_rewards: f32[T, K]``."""

    def body(sel, r):
        return rolling_update(sel, r, window), sel["choice"]

    _, choices = jax.lax.scan(body, rolling_init(member_rewards.shape[1], initial), member_rewards)
    return choices


# --- members: loading and greedy actions --------------------------------------------------


@dataclass
class Members:
    """K trained PPO members (numpy pytrees with a leading ``[K]`` axis)."""

    params: Any  # {"actor": ..., "critic": ...} stacked [K]
    obs_stats: Any  # {"mean": [K, *obs], "var": [K, *obs]} or None (no normalization)

    @property
    def size(self) -> int:
        return int(jax.tree.leaves(self.params)[0].shape[0])


@dataclass
class MixedMembers:
    """Members of several algorithms: ``groups = [(algorithm, Members), ...]`` in the order
    of ``ensemble.algorithms``; member ``j`` counts across groups."""

    groups: list[tuple[str, Members]]

    @property
    def size(self) -> int:
        return sum(m.size for _, m in self.groups)

    @property
    def labels(self) -> list[str]:
        """The algorithm of every member."""
        return [a for a, m in self.groups for _ in range(m.size)]


def _members_of(saved: dict) -> Members:
    stats = (saved.get("normalizer") or {}).get("obs_stats")
    if stats is not None:
        stats = {"mean": stats["mean"], "var": stats["var"]}
    return Members(saved["params"], stats)


def load_members(path: str, algorithms: list[str] | None = None) -> Members | MixedMembers:
    """Read ``params.msgpack`` of a population run (or, with ``algorithms``, of a mixed
    ensemble: one group per algorithm, in that order)."""
    with open(path, "rb") as f:
        saved = serialization.msgpack_restore(f.read())
    if algorithms:
        groups = saved.get("groups")
        if not isinstance(groups, dict) or set(groups) != set(algorithms):
            found = sorted(groups) if isinstance(groups, dict) else "no groups"
            raise ValueError(
                f"{path}: holds {found}, the config's ensemble.algorithms={list(algorithms)}"
            )
        return MixedMembers([(a, _members_of(groups[a])) for a in algorithms])
    return _members_of(saved)


def greedy_policy(agent: Any, obs_clip: float = 10.0, obs_eps: float = 1e-8, algo: str = "ppo"):
    """``act(member_params, obs_stats | None, obs) -> action`` for one member and one obs,
    through ``agent.act_greedy`` (``algo``: ppo | pqn | pql, which state type to build).

    Observations are normalized exactly as :class:`~hordax.envs.wrappers.NormalizeObservation`
    does with frozen statistics (its default clip and eps)."""
    zero = jnp.int32(0)

    def state_of(params: Any) -> Any:
        if algo == "pqn":
            from hordax.agents.pqn import PQNState

            return PQNState(params, None, {}, zero, zero)
        if algo == "pql":
            from hordax.agents.pql.agent import PQLState

            return PQLState(params, None, None, {}, zero, zero, zero)
        from hordax.agents.ppo import PPOState

        return PPOState(params, None, {}, zero)

    def act(params: Any, stats: Any, obs: jax.Array) -> jax.Array:
        obs = obs.astype(jnp.float32)
        if stats is not None:
            z = (obs - stats["mean"]) / jnp.sqrt(stats["var"] + obs_eps)
            obs = jnp.clip(z, -obs_clip, obs_clip)
        return agent.act_greedy(state_of(params), obs[None])[0]

    return act


def all_member_actions(act: Any, members: Members, obs: jax.Array) -> jax.Array:
    """``[K, *A]``: every member's greedy action for one observation."""
    return jax.vmap(act, in_axes=(0, 0 if members.obs_stats is not None else None, None))(
        members.params, members.obs_stats, obs
    )


def _on_device(members: Members) -> Members:
    stats = None if members.obs_stats is None else jax.tree.map(jnp.asarray, members.obs_stats)
    return Members(jax.tree.map(jnp.asarray, members.params), stats)


def member_actions_fn(
    agent: Any, members: Members | MixedMembers, discrete: bool, algo: str = "ppo"
):
    """``actions(obs) -> [K, *A]`` of all members (``algo``: the members' algorithm; mixed:
    ``agent`` is one agent per group and the groups' actions are concatenated in member
    order, as int32 or float32)."""
    if not isinstance(members, MixedMembers):
        act, mem = greedy_policy(agent, algo=algo), _on_device(members)
        return lambda obs: all_member_actions(act, mem, obs)
    dtype = jnp.int32 if discrete else jnp.float32
    parts = [
        (greedy_policy(ag, algo=a), _on_device(m))
        for ag, (a, m) in zip(agent, members.groups, strict=True)
    ]

    def actions(obs):
        return jnp.concatenate(
            [all_member_actions(act, m, obs).astype(dtype) for act, m in parts], axis=0
        )

    return actions


# --- side-by-side evaluation --------------------------------------------------------------


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
    from hordax.envs.wrappers import ClipAction

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
        carry = (obs, state, jnp.ones((runs,), bool), rolling_init(k, initial))

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


def full_split_steps(env_params: Any) -> int | None:
    """Steps of a fixed-start episode over a whole split (trading envs), else ``None``."""
    if all(hasattr(env_params, f) for f in ("start_lo", "end")):
        return int(env_params.end) - 1 - int(env_params.start_lo)
    return None


def supports_split(env_id: str) -> bool:
    """Whether the env's constructor takes ``split`` and ``random_start`` (trading envs)."""
    import gymnax.registration as gx_registration

    from hordax.envs.registry import _split_kwargs

    factory = gx_registration._registry.get(env_id)
    if factory is None:
        return False
    ctor, _ = _split_kwargs(factory, {"split": "x", "random_start": False})
    return set(ctor) == {"split", "random_start"}


#: Time limit of a full-split episode: longer than any split, so only the split's end stops it.
NO_TIME_LIMIT = 10**7


def split_env(env_id: str, kwargs: dict, params: dict, split: str):
    """``(env, env_params, num_steps)`` for a deterministic full-split episode: from the
    split's first row, with no time limit whatever the run's ``env.params`` or
    ``env.kwargs`` set (``make`` applies ``params`` after the constructor, so the lifted
    limit goes into ``params``: a run trained with ``env.params.max_steps_in_episode=63``
    is still evaluated over its whole split)."""
    from hordax.envs.registry import make

    kw = {**kwargs, "split": split, "random_start": False, "max_steps_in_episode": NO_TIME_LIMIT}
    env, env_params = make(env_id, params={**params, "max_steps_in_episode": NO_TIME_LIMIT}, **kw)
    return env, env_params, full_split_steps(env_params)


# --- scores ---------------------------------------------------------------------------------


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
    env reports no return) and ``return`` (cumulative return or total reward)."""
    if kind == "return":
        steps = curve[1:] / curve[:-1] - 1.0
        total = curve[-1] - 1.0
    else:
        steps = np.diff(curve, axis=0)
        total = curve[-1]
    std = steps.std(axis=0, ddof=1) if steps.shape[0] > 1 else np.zeros(steps.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        flat = std <= (1e-6 if kind == "return" else 0.0)  # float32 rounding, see backtest
        sharpe = np.where(flat, 0.0, steps.mean(0) / std * math.sqrt(periods_per_year))
    return {"sharpe": sharpe, "return": total}


# --- the run-level API (train summary and backtest) ----------------------------------------


@dataclass
class LoadedRun:
    """A population run rebuilt from its directory."""

    run_dir: str
    cfg: Any  # TrainConfig
    members: Members | MixedMembers


def load_run(run_dir: str) -> LoadedRun:
    """Rebuild the config and members of ``run_dir``; ``ValueError`` with a clear message
    for a missing directory, missing files or a run that is not a population."""
    from omegaconf import OmegaConf

    from hordax.training.config import TrainConfig

    if not os.path.isdir(run_dir):
        raise ValueError(f"run_dir={run_dir!r}: no such directory")
    for name in ("config.yaml", "params.msgpack"):
        if not os.path.isfile(os.path.join(run_dir, name)):
            raise ValueError(
                f"run_dir={run_dir!r}: {name} is missing (not a finished hordax train run)"
            )
    from hordax.training.mixed import ALGORITHMS, agent_schema

    raw = OmegaConf.load(os.path.join(run_dir, "config.yaml"))
    raw = OmegaConf.masked_copy(raw, [k for k in raw if k != "hydra"])
    algo = OmegaConf.select(raw, "agent.name", default="ppo")
    if algo not in ALGORITHMS:
        raise ValueError(
            f"run_dir={run_dir!r}: config.yaml has agent.name={algo!r}; allowed values are"
            f" {list(ALGORITHMS)}"
        )
    schema = OmegaConf.structured(TrainConfig)
    schema.agent = OmegaConf.structured(agent_schema(algo))  # typed Any: the run's agent
    cfg = OmegaConf.to_object(OmegaConf.merge(schema, raw))
    if cfg.ensemble.algorithms:  # a mixed ensemble
        from hordax.training.mixed import group_sizes

        members = load_members(os.path.join(run_dir, "params.msgpack"), cfg.ensemble.algorithms)
        got = [m.size for _, m in members.groups]
        if got != group_sizes(cfg.ensemble):
            raise ValueError(
                f"run_dir={run_dir!r}: params.msgpack holds {got} members per algorithm,"
                f" config says {group_sizes(cfg.ensemble)}"
            )
        return LoadedRun(run_dir, cfg, members)
    if cfg.population.size < 2:
        raise ValueError(
            f"run_dir={run_dir!r}: population.size={cfg.population.size}; an ensemble needs a"
            " population run (train with agent=ensemble or population.size >= 2)"
        )
    members = load_members(os.path.join(run_dir, "params.msgpack"))
    if members.size != cfg.population.size:
        raise ValueError(
            f"run_dir={run_dir!r}: params.msgpack holds {members.size} members, config says"
            f" population.size={cfg.population.size}"
        )
    return LoadedRun(run_dir, cfg, members)


def _agent_for(cfg: Any, env: Any, env_params: Any) -> Any:
    """The members' agent, of ``cfg.agent.name`` (ppo | pqn | pql); mixed: one agent per
    group, from that group's config."""
    if cfg.ensemble.algorithms:
        from hordax.training.mixed import agent_config

        return [
            _make_algo_agent(a, agent_config(cfg, a), env, env_params)
            for a in cfg.ensemble.algorithms
        ]
    return _make_algo_agent(cfg.agent.name, cfg.agent, env, env_params)


def _make_algo_agent(algo: str, acfg: Any, env: Any, env_params: Any) -> Any:
    """The agent of one algorithm (ppo | pqn | pql) whose members act greedily."""
    if algo == "ppo" and int(getattr(acfg.network, "rnn_size", 0)) > 0:
        raise ValueError(
            f"agent.network.rnn_size={acfg.network.rnn_size}: ensembles and backtests"
            " combine feed-forward PPO members only (recurrent members are not supported)"
        )
    obs_shape = env.observation_space(env_params).shape
    space = env.action_space(env_params)
    if algo == "pqn":
        from hordax.agents.pqn import make_agent as make_pqn

        return make_pqn(acfg, obs_shape, space, 1)
    if algo == "pql":
        from hordax.agents.pql import make_agent as make_pql

        return make_pql(acfg, obs_shape, space)
    from hordax.agents.ppo import make_agent as make_ppo

    return make_ppo(acfg, obs_shape, space, 1)


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
    from hordax.envs.registry import make

    k = members.size
    if split is not None:
        env, env_params, num_steps = split_env(
            cfg.env.id, dict(cfg.env.kwargs), dict(cfg.env.params), split
        )
        keys = jax.random.key(ens.eval_seed)[None]
    else:
        env, env_params = make(cfg.env.id, params=dict(cfg.env.params), **dict(cfg.env.kwargs))
        num_steps = int(getattr(env_params, "max_steps_in_episode", 1000))
        keys = jax.random.split(jax.random.key(ens.eval_seed), ens.eval_episodes)
    agent = _agent_for(cfg, env, env_params)
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
    """Index of the best finite score (lowest index on ties; 0 if none is finite)."""
    s = np.where(np.isfinite(scores), scores, -np.inf)
    return int(np.argmax(s))


def run_names(k: int, discrete: bool) -> list[str]:
    """Names of the ``K + 2`` evaluated runs."""
    return [f"member_{i}" for i in range(k)] + [
        "ensemble_vote" if discrete else "ensemble_average",
        "rolling_selection",
    ]


def member_algorithms(cfg: Any, members: Members | MixedMembers) -> list[str]:
    """The algorithm of every member."""
    if isinstance(members, MixedMembers):
        return members.labels
    return [cfg.agent.name] * members.size


def ensemble_summary(cfg: Any, members: Members | MixedMembers) -> dict:
    """The ``ensemble`` section of a train summary: validation score of every member, the
    combination and the rolling selection, and the weights."""
    ens = cfg.ensemble
    split = "validation" if supports_split(cfg.env.id) else None
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
        from hordax.training.rundir import write_atomic

        write_atomic(
            os.path.join(run_dir, "summary.json"),
            strict_json.dumps(summary, indent=1, default=float),
        )
    return summary


def as_dict(cfg: EnsembleConfig) -> dict:
    return dataclasses.asdict(cfg)
