"""``StockPortfolio-v0``: FinRL's portfolio-allocation variant (action = target weights)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.core import Environment
from hordax.envs.trading.data import MarketData
from hordax.envs.trading.render import chart
from hordax.envs.trading.stock import (
    check_execution_delay,
    check_ranges,
    episode_start,
    resolve_data,
    split_params,
    validate_panel,
)
from hordax.envs.wrappers.clip import clip_action


@struct.dataclass
class PortfolioState:
    value: jax.Array  # f32 [] portfolio value
    weights: jax.Array  # f32 [N] current weights (sum 1), after drift with prices
    t: jax.Array  # i32 []
    start: jax.Array  # i32 []
    time: jax.Array  # i32 []


@struct.dataclass
class PortfolioParams:
    close: jax.Array  # f32 [T, N]
    features: jax.Array  # f32 [T, N, K]
    start_lo: int
    start_hi: int
    end: int
    max_steps_in_episode: int = 252
    initial_cash: float = 1e6
    cost_pct: float = 1e-3  # proportional cost on traded value (turnover x value)
    logit_scale: float = 1.0  # weights = softmax(logit_scale * action)
    reward_scaling: float = 1e-4
    execution_delay: int = 0  # 0: rebalance at close[t] (observed); 1: at close[t + 1]


class StockPortfolio(Environment[PortfolioState, PortfolioParams]):
    """Fully invested allocation over N stocks (FinRL ``StockPortfolioEnv``), vectorizable.

    - observation ``f32[1 + 2N + 8N]``: ``value / initial_cash``, current weights ``[N]``,
      ``close[t] / close[start]`` ``[N]`` and normalized indicators ``[N * 8]``. (FinRL's
      version observes the covariance matrix of returns instead; not included.)
    - action ``f32[N]`` in ``[-1, 1]``: target weights ``softmax(logit_scale * a)``;
      clipped, NaN entries act as 0.
    - step: rebalance at ``close[t]`` paying ``cost_pct * value * sum|w_target - w|``, then
      hold to ``close[t+1]``: ``V' = (V - cost) * sum(w_target * close[t+1] / close[t])``,
      weights drift with prices. This fills at the close the agent has just observed
      (``execution_delay=0``, FinRL's convention, mildly optimistic);
      ``execution_delay=1`` holds the current weights to ``close[t+1]`` and rebalances
      there (cost on the drifted weights and value), the next bar's close.
    - reward ``(V' - V) * reward_scaling``; termination at the split's last row, truncation
      at ``max_steps_in_episode``; reset to equal weights with ``V = initial_cash``.
    - metrics: ``return``, ``buy_and_hold_return`` (equal-weight, costless, from the start),
      ``turnover`` and ``cost``.

    Args: ``data``, ``split``, ``tickers``, ``random_start``, ``max_steps_in_episode`` as in
    :class:`~hordax.envs.trading.stock.StockTrading`.
    """

    def __init__(
        self,
        data: str | MarketData = "sp500",
        split: str = "train",
        tickers: tuple[str, ...] | None = None,
        random_start: bool = True,
        max_steps_in_episode: int = 252,
    ):
        super().__init__()
        md, name, panel = resolve_data(data, tickers)
        start_lo, start_hi, end = split_params(md, name, split, random_start)
        self.num_assets, self.tickers, self.dates = md.num_assets, md.tickers, md.dates
        self._default = PortfolioParams(
            close=jnp.asarray(panel["close"]),
            features=jnp.asarray(panel["features"]),
            start_lo=start_lo,
            start_hi=start_hi,
            end=end,
            max_steps_in_episode=max_steps_in_episode,
        )

    @property
    def name(self) -> str:
        return "StockPortfolio-v0"

    @property
    def default_params(self) -> PortfolioParams:
        return self._default

    def reset_env(self, key: jax.Array, params: PortfolioParams):
        start = episode_start(key, params)
        n = params.close.shape[1]
        state = PortfolioState(
            value=jnp.asarray(params.initial_cash).astype(jnp.float32),
            weights=jnp.full((n,), 1.0 / n, jnp.float32),
            t=start,
            start=start,
            time=jnp.int32(0),
        )
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: PortfolioState, action: jax.Array, params):
        a = clip_action(action, self.action_space(params))
        target = jax.nn.softmax(params.logit_scale * a)
        t1 = jnp.minimum(state.t + 1, params.end - 1).astype(jnp.int32)
        fill = jnp.minimum(state.t + params.execution_delay, params.end - 1)
        p0, pf, p1 = params.close[state.t], params.close[fill], params.close[t1]
        # hold the current weights to the fill bar (no move when it is row t) ...
        ret0 = jnp.sum(state.weights * (pf - p0) / p0)
        drifted = state.weights * (pf / p0)
        drifted = drifted / jnp.sum(drifted)
        value_fill = state.value * (1.0 + ret0)
        # ... rebalance there, then hold the target weights to row t1
        turnover = jnp.sum(jnp.abs(target - drifted))
        cost = params.cost_pct * value_fill * turnover
        ret = jnp.sum(target * (p1 - pf) / pf)  # portfolio returns: no 1e6-scale cancellation
        change = state.value * ret0 + value_fill * ret - cost * (1.0 + ret)
        change = change.astype(jnp.float32)
        value = (state.value + change).astype(jnp.float32)
        growth = p1 / pf
        weights = (target * growth / jnp.sum(target * growth)).astype(jnp.float32)
        new_state = PortfolioState(value, weights, t1, state.start, state.time + 1)
        info = {
            "metrics": {
                "return": value / params.initial_cash - 1.0,
                "buy_and_hold_return": jnp.mean(params.close[t1] / params.close[state.start]) - 1.0,
                "turnover": turnover,
                "cost": cost,
            },
            "reward_terms": {"value_change": change},
        }
        info = jax.tree.map(lambda x: jnp.asarray(x).astype(jnp.float32), info)
        reward = (change * params.reward_scaling).astype(jnp.float32)
        terminated = t1 >= params.end - 1
        return self.observe(key, new_state, a, params), new_state, reward, terminated, info

    def observe(self, key: jax.Array, state: PortfolioState, action: Any, params):
        parts = [
            jnp.reshape(state.value / params.initial_cash, (1,)),
            state.weights,
            params.close[state.t] / params.close[state.start],
            params.features[state.t].reshape(-1),
        ]
        return jnp.concatenate(parts).astype(jnp.float32)

    def observation_space(self, params: PortfolioParams) -> spaces.Box:
        n, k = params.features.shape[1:]
        return spaces.Box(-jnp.inf, jnp.inf, (1 + 2 * n + n * k,), jnp.float32)

    def action_space(self, params: PortfolioParams) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (params.close.shape[1],), jnp.float32)

    def render(self, state: PortfolioState, params: PortfolioParams) -> np.ndarray:
        t = int(state.t)
        close = np.asarray(params.close[max(0, t - 63) : t + 1])
        return chart(close[:, :6], np.asarray(state.weights)[:6])

    def validate_params(self, params: PortfolioParams) -> None:
        super().validate_params(params)
        validate_panel(params)
        check_ranges(
            {
                "initial_cash": (params.initial_cash, 0.0, None, False),
                "cost_pct": (params.cost_pct, 0.0, 1.0, True),
                "logit_scale": (params.logit_scale, 0.0, None, True),
                "reward_scaling": (params.reward_scaling, 0.0, None, False),
            }
        )
        check_execution_delay(params.execution_delay)
