"""``StockTrading-v0``: FinRL's multi-stock trading task on a daily price panel.

The whole price panel lives in :class:`StockParams` as device arrays (so ``vmap`` over params
gives different markets, costs or splits per env), and ``state.t`` indexes its rows.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.core import Environment
from hordax.envs.trading.data import MarketData
from hordax.envs.trading.ledger import execute_orders
from hordax.envs.trading.panel import WARMUP, named_stock_panel, resolve_split, stock_panel
from hordax.envs.trading.render import chart
from hordax.envs.wrappers.clip import clip_action

#: cost-model name -> (buy/sell pct, fixed $ per order, square-root impact coefficient)
COST_MODELS = {
    "proportional": (1e-3, 0.0, 0.0),
    "fixed_proportional": (1e-3, 5.0, 0.0),
    "sqrt_impact": (1e-3, 0.0, 1.0),
}


@struct.dataclass
class StockState:
    cash: jax.Array  # f32 []
    holdings: jax.Array  # f32 [N] integer share counts
    value: jax.Array  # f32 [] cash + holdings . close[t]
    t: jax.Array  # i32 [] current row of the panel
    start: jax.Array  # i32 [] first row of this episode
    time: jax.Array  # i32 [] steps taken


@struct.dataclass
class StockParams:
    close: jax.Array  # f32 [T, N] close prices
    features: jax.Array  # f32 [T, N, K] normalized indicators (panel.stock_panel)
    turbulence: jax.Array  # f32 [T]
    sigma: jax.Array  # f32 [T, N] 20-row volatility of log returns (impact model)
    adv: jax.Array  # f32 [T, N] 20-row average volume (impact model)
    start_lo: int  # first row an episode may start at
    start_hi: int  # last start row (== start_lo: fixed start); cut by start_range at reset
    end: int  # split end (exclusive); reaching row end - 1 terminates
    max_steps_in_episode: int = 252
    initial_cash: float = 1e6
    hmax: float = 100.0  # shares per unit action
    buy_cost_pct: float = 1e-3
    sell_cost_pct: float = 1e-3
    fixed_cost: float = 0.0  # dollars per non-zero order
    impact_coef: float = 0.0  # square-root impact Y (cost += Y sigma sqrt(n/adv) n price)
    reward_scaling: float = 1e-4
    # liquidate and stop buying when >= (inf disables: the one params field that takes inf)
    turbulence_threshold: float = struct.field(default=float("inf"), metadata={"allow_inf": True})
    execution_delay: int = 0  # 0: fill at close[t] (observed); 1: at close[t + 1] (next bar)


def start_range(params: Any) -> tuple[Any, Any]:
    """``(lo, hi)``: the rows an episode may start at, from the params of a trading env.

    ``hi = max(start_lo, min(start_hi, end - 1 - max_steps_in_episode))``: a random start
    leaves room for a whole episode of the *current* time limit before the split's last
    row, so every row of the split is reachable whatever ``params.max_steps_in_episode``
    is (it was fixed at construction before, so a shorter time limit set through params
    never visited the split's last rows). A fixed start (``start_hi == start_lo``) stays
    fixed; a time limit longer than the split starts every episode at ``start_lo``."""
    room = params.end - 1 - params.max_steps_in_episode
    return params.start_lo, jnp.maximum(params.start_lo, jnp.minimum(params.start_hi, room))


def episode_start(key: jax.Array, params: Any) -> jax.Array:
    """Uniform integer in :func:`start_range` ``(params)`` (int32)."""
    lo, hi = start_range(params)
    return jax.random.randint(key, (), lo, hi + 1, jnp.int32)


def split_params(data: MarketData, name: str | None, split: str, random_start: bool):
    """``(start_lo, start_hi, end)`` for a split (after a warm-up of :data:`WARMUP` rows);
    ``start_hi`` is the split's last possible start (``end - 2``) with ``random_start``, and
    :func:`start_range` cuts it to the time limit at reset."""
    lo, end = resolve_split(data, name, split)
    start_lo = max(lo, min(WARMUP, end - 2))
    if end - start_lo < 2:
        raise ValueError(f"split={split!r} has {end - lo} rows: too short for an episode")
    return start_lo, (end - 2 if random_start else start_lo), end


def resolve_data(data: str | MarketData, tickers) -> tuple[MarketData | None, str | None, dict]:
    if isinstance(data, MarketData):
        md = data.select(tickers) if tickers else data
        return md, None, stock_panel(md)
    from hordax.envs.trading.panel import load_named

    md = load_named(data)
    panel = named_stock_panel(data)
    if tickers:
        idx = [md.tickers.index(t) if t in md.tickers else -1 for t in tickers]
        if min(idx) < 0:
            raise ValueError(f"tickers={list(tickers)}: not all in {list(md.tickers)}")
        md = md.select(tickers)
        n = panel["close"].shape[1]
        panel = {k: (v[:, idx] if v.ndim > 1 and v.shape[1] == n else v) for k, v in panel.items()}
        if len(idx) > 1:
            from hordax.envs.trading.indicators import turbulence

            panel["turbulence"] = turbulence(md.close).astype(np.float32)
        else:
            panel["turbulence"] = np.zeros_like(panel["turbulence"])
    return md, data, panel


class StockTrading(Environment[StockState, StockParams]):
    """FinRL's stock trading task (``StockTradingEnv``), vectorizable.

    - observation ``f32[1 + 2N + 8N]``: ``cash / initial_cash``, ``close[t] / close[start]``
      ``[N]``, ``holdings * close[t] / initial_cash`` ``[N]`` and the 8 normalized
      indicators per asset ``[N * 8]`` (asset-major).
    - action ``f32[N]`` in ``[-1, 1]``: order ``trunc(a * hmax)`` shares (sell < 0 < buy);
      sells first, then buys from the largest order down (ledger.execute_orders); out of
      range entries are clipped and NaN entries act as 0 (hold).
    - execution: with ``execution_delay=0`` (default, FinRL's convention) orders fill at
      ``close[t]``, the close the agent has just observed: mildly optimistic, since a real
      order placed after seeing a close cannot trade at it. ``execution_delay=1`` fills
      them at the next bar's close ``close[t + 1]`` (holdings ride the move from ``t`` to
      ``t + 1`` first; costs and the impact model use row ``t + 1``).
    - turbulence: if ``turbulence[t] >= turbulence_threshold`` all holdings are sold and no
      buy happens (decided on row ``t``, filled as above).
    - reward: ``(V[t+1] - V[t]) * reward_scaling`` with ``V = cash + holdings . close``;
      ``info["reward_terms"]["value_change"]`` is ``V[t+1] - V[t]`` unscaled.
    - termination: the split's last row is reached (no later price); truncation at
      ``max_steps_in_episode`` (default 252 trading days).
    - reset: ``$initial_cash``, no holdings, start row uniform over :func:`start_range`
      (random start: every start that leaves room for a whole episode of
      ``params.max_steps_in_episode`` steps; FinRL instead runs one episode over the
      whole train period from its first day, which is ``random_start=False`` with a time
      limit longer than the split).
    - metrics: ``return`` (``V / initial_cash - 1``), ``buy_and_hold_return`` (equal-weight,
      costless, from the episode start), ``cost``, ``turnover`` and ``turbulent``.

    Args:
        data: ``"sp500"`` (default; 20 stocks, close-only), ``"stocks"`` (AAPL, IBM, MSFT,
            GOOG OHLCV) or a :class:`MarketData`.
        split: ``"train"``, ``"validation"``, ``"test"`` or ``"all"`` (panel.DEFAULT_SPLITS
            for shipped data; 60/20/20 % otherwise).
        tickers: a subset of the data's tickers.
        cost_model: ``"proportional"`` (0.1 %), ``"fixed_proportional"`` ($5 per order +
            0.1 %) or ``"sqrt_impact"`` (0.1 % + square-root impact; needs volume data).
        turbulence_threshold: ``None``: the 99th percentile of the positive turbulence in
            the train split; a float; ``inf`` disables it.
        random_start: episode start uniform over the split; False: the split's first row.
        max_steps_in_episode: default time limit.
    """

    def __init__(
        self,
        data: str | MarketData = "sp500",
        split: str = "train",
        tickers: tuple[str, ...] | None = None,
        cost_model: str = "proportional",
        turbulence_threshold: float | None = None,
        random_start: bool = True,
        max_steps_in_episode: int = 252,
    ):
        super().__init__()
        if cost_model not in COST_MODELS:
            raise ValueError(f"cost_model={cost_model!r}: must be one of {sorted(COST_MODELS)}")
        md, name, panel = resolve_data(data, tickers)
        if cost_model == "sqrt_impact" and md.close_only:
            raise ValueError(
                f"cost_model='sqrt_impact' needs volume, but data {md.source} is close-only"
            )
        start_lo, start_hi, end = split_params(md, name, split, random_start)
        if turbulence_threshold is None:
            t_lo, t_hi = resolve_split(md, name, "train")
            turb = panel["turbulence"][t_lo:t_hi]
            turbulence_threshold = (
                float(np.quantile(turb[turb > 0], 0.99)) if np.any(turb > 0) else float("inf")
            )
        pct, fixed, impact = COST_MODELS[cost_model]
        self.num_assets = md.num_assets
        self.tickers = md.tickers
        self.dates = md.dates
        self._default = StockParams(
            close=jnp.asarray(panel["close"]),
            features=jnp.asarray(panel["features"]),
            turbulence=jnp.asarray(panel["turbulence"]),
            sigma=jnp.asarray(panel["sigma"]),
            adv=jnp.asarray(panel["adv"]),
            start_lo=start_lo,
            start_hi=start_hi,
            end=end,
            max_steps_in_episode=max_steps_in_episode,
            buy_cost_pct=pct,
            sell_cost_pct=pct,
            fixed_cost=fixed,
            impact_coef=impact,
            turbulence_threshold=float(turbulence_threshold),
        )

    @property
    def name(self) -> str:
        return "StockTrading-v0"

    @property
    def default_params(self) -> StockParams:
        return self._default

    def reset_env(self, key: jax.Array, params: StockParams) -> tuple[jax.Array, StockState]:
        start = episode_start(key, params)
        n = params.close.shape[1]
        cash = jnp.asarray(params.initial_cash).astype(jnp.float32)
        state = StockState(
            cash=cash,
            holdings=jnp.zeros(n, jnp.float32),
            value=cash,
            t=start,
            start=start,
            time=jnp.int32(0),
        )
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: StockState, action: jax.Array, params: StockParams):
        a = clip_action(action, self.action_space(params))
        t = state.t
        t1 = jnp.minimum(t + 1, params.end - 1).astype(jnp.int32)
        fill = jnp.minimum(t + params.execution_delay, params.end - 1)  # the filling bar
        price = params.close[fill]
        liquidate = params.turbulence[t] >= params.turbulence_threshold
        orders = jnp.trunc(a * params.hmax)
        cash, holdings, sold, bought, cost = execute_orders(
            state.cash,
            state.holdings,
            orders,
            price,
            params.sigma[fill],
            params.adv[fill],
            buy_pct=params.buy_cost_pct,
            sell_pct=params.sell_cost_pct,
            fixed=params.fixed_cost,
            impact=params.impact_coef,
            liquidate=liquidate,
        )
        value = (cash + jnp.sum(holdings * params.close[t1])).astype(jnp.float32)
        # = value - state.value: the old holdings ride close[t] -> close[fill], the fill
        # conserves value minus costs, the new ones ride close[fill] -> close[t1]; written
        # without subtracting two ~1e6 numbers so the reward keeps float32 precision
        drift = jnp.sum(state.holdings * (price - params.close[t]))
        change = drift + jnp.sum(holdings * (params.close[t1] - price)) - cost
        change = change.astype(jnp.float32)
        new_state = StockState(cash, holdings, value, t1, state.start, state.time + 1)
        terminated = t1 >= params.end - 1
        bah = jnp.mean(params.close[t1] / params.close[state.start]) - 1.0
        info = {
            "metrics": {
                "return": value / params.initial_cash - 1.0,
                "buy_and_hold_return": bah,
                "cost": cost,
                "turnover": jnp.sum((sold + bought) * price)
                / jnp.maximum(state.value + drift, 1e-6),
                "turbulent": liquidate.astype(jnp.float32),
            },
            "reward_terms": {"value_change": change},
        }
        info = jax.tree.map(lambda x: jnp.asarray(x).astype(jnp.float32), info)
        reward = (change * params.reward_scaling).astype(jnp.float32)
        return self.observe(key, new_state, a, params), new_state, reward, terminated, info

    def observe(self, key: jax.Array, state: StockState, action: Any, params: StockParams):
        price = params.close[state.t]
        init = params.initial_cash
        parts = [
            jnp.reshape(state.cash / init, (1,)),
            price / params.close[state.start],
            state.holdings * price / init,
            params.features[state.t].reshape(-1),
        ]
        return jnp.concatenate(parts).astype(jnp.float32)

    def observation_space(self, params: StockParams) -> spaces.Box:
        n, k = params.features.shape[1:]
        return spaces.Box(-jnp.inf, jnp.inf, (1 + 2 * n + n * k,), jnp.float32)

    def action_space(self, params: StockParams) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (params.close.shape[1],), jnp.float32)

    def render(self, state: StockState, params: StockParams) -> np.ndarray:
        t = int(state.t)
        close = np.asarray(params.close[max(0, t - 63) : t + 1])
        price = np.asarray(params.close[t])
        weights = np.asarray(state.holdings) * price / max(float(state.value), 1e-6)
        return chart(close[:, :6], np.concatenate([[float(state.cash / state.value)], weights[:5]]))

    def validate_params(self, params: StockParams) -> None:
        super().validate_params(params)
        validate_panel(params)
        checks = {
            "initial_cash": (params.initial_cash, 0.0, None, False),
            "hmax": (params.hmax, 0.0, None, False),
            "buy_cost_pct": (params.buy_cost_pct, 0.0, 1.0, True),
            "sell_cost_pct": (params.sell_cost_pct, 0.0, 1.0, True),
            "fixed_cost": (params.fixed_cost, 0.0, None, True),
            "impact_coef": (params.impact_coef, 0.0, None, True),
            "reward_scaling": (params.reward_scaling, 0.0, None, False),
        }
        check_ranges(checks)
        check_execution_delay(params.execution_delay)
        if np.any(np.isnan(np.asarray(params.turbulence_threshold))):
            raise ValueError("params.turbulence_threshold is NaN: want a number (inf disables)")


def check_execution_delay(value: Any) -> None:
    """``params.execution_delay`` is an integer 0 or 1 (every entry, if vmapped)."""
    v = np.asarray(value)
    if not (np.issubdtype(v.dtype, np.integer) and np.all((v == 0) | (v == 1))):
        raise ValueError(
            f"params.execution_delay={v.tolist()!r}: must be the integer 0 (orders fill at the"
            " observed close) or 1 (at the next bar's close)"
        )


def check_ranges(checks: dict) -> None:
    """``{name: (value, low, high, low_inclusive)}``: finite, > low (>= if inclusive), < high."""
    for name, (value, low, high, inclusive) in checks.items():
        v = np.asarray(value, np.float64)
        bad = ~np.isfinite(v) | ((v < low) if inclusive else (v <= low))
        if high is not None:
            bad |= v >= high
        if np.any(bad):
            rule = (">= " if inclusive else "> ") + str(low)
            rule += f" and < {high}" if high is not None else ""
            raise ValueError(f"params.{name}={v.tolist()}: must be finite and {rule}")


def validate_panel(params: Any) -> None:
    """Shapes (``close [T, N]`` and the per-row arrays' leading ``[T, N]`` or ``[T]``),
    positive finite prices and a consistent episode range. Batched params (one panel per
    env, every leaf with the same leading axes ``[B...]``, as ``vmap`` over params takes
    them) are checked entry by entry."""
    close = np.asarray(params.close)
    if close.ndim < 2 or close.shape[-2] < 2:
        raise ValueError(
            f"params.close has shape {close.shape}: want [T >= 2, N] ([B, T, N] batched)"
        )
    bad = ~(np.isfinite(close) & (close > 0))
    if np.any(bad):
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"params.close{list(at)}={close[at]}: prices must be finite and > 0")
    batch, (T, n) = close.shape[:-2], close.shape[-2:]
    # per-row arrays: (field, leading shape); a mismatch would be clamped by JAX's indexing
    # (row t of a shorter array reads its last row) instead of failing
    for name, lead in (
        ("features", (T, n)),
        ("turbulence", (T,)),
        ("sigma", (T, n)),
        ("adv", (T, n)),
        ("factors", (T,)),
    ):
        if hasattr(params, name):
            shape = tuple(np.shape(getattr(params, name)))
            if shape[: len(batch) + len(lead)] != batch + lead:
                raise ValueError(
                    f"params.{name} has shape {shape}: want leading {batch + lead}, the rows "
                    f"(and assets) of params.close {close.shape}"
                )
    lo, hi, end = (np.asarray(x) for x in (params.start_lo, params.start_hi, params.end))
    ok = (lo >= 0) & (lo <= hi) & (hi <= end - 2) & (end <= T)
    if not np.all(ok):
        at = tuple(int(i) for i in np.argwhere(~ok)[0]) if np.ndim(ok) else ()
        lo, hi, end = (int(np.broadcast_to(x, np.shape(ok))[at]) for x in (lo, hi, end))
        where = f" (entry {list(at)})" if at else ""
        raise ValueError(
            f"params.start_lo={lo}, params.start_hi={hi}, params.end={end}{where}: want 0 <= "
            f"start_lo <= start_hi <= end - 2 and end <= T={T}"
        )
