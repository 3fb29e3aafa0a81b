"""``CryptoTrading-v0``: the FinRL Contest 2024 crypto task (``TradeSimulator``) on bars.

FinRL's version trades second-level Bitcoin limit-order-book data with 8 factors from a
trained LSTM/GRU; that data does not exist offline, so this env runs on any OHLCV bars
(the shipped Coinbase BTC-USD hourly bars by default) with 8 factors computed from the
price and volume series (:func:`crypto_factors`, causal).
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
from hordax.envs.trading.indicators import rolling_mean, rolling_std, rsi
from hordax.envs.trading.panel import load_named, resolve_split
from hordax.envs.trading.render import chart
from hordax.envs.trading.stock import check_ranges, episode_start, validate_panel
from hordax.envs.wrappers.clip import clip_action

NUM_FACTORS = 8


def crypto_factors(data: MarketData, asset: int = 0) -> np.ndarray:
    """``f32[T, 8]`` factors of one asset; row ``t`` uses bars ``<= t`` only.

    log returns over 1, 6 and 24 bars (percent, divided by sqrt(bars)); 24-bar volatility
    of 1-bar returns (percent); close / SMA24 - 1 (x100); close / SMA168 - 1 (x10);
    RSI-14 / 100 - 0.5; z-score of log(1 + volume) over 24 bars. Clipped to [-10, 10].
    """
    c = data.close[:, asset]
    v = data.feature("volume")[:, asset]
    logc = np.log(c)

    def ret(k):
        past = np.concatenate([np.full(k, logc[0]), logc[:-k]])
        return (logc - past) * 100 / np.sqrt(k)

    r1 = ret(1)
    lv = np.log1p(v)
    lv_sd = rolling_std(lv[:, None], 24)[:, 0]
    safe_sd = np.where(lv_sd > 0, lv_sd, 1.0)
    cols = [
        r1,
        ret(6),
        ret(24),
        rolling_std(r1[:, None], 24)[:, 0],
        (c / rolling_mean(c[:, None], 24)[:, 0] - 1) * 100,
        (c / rolling_mean(c[:, None], 168)[:, 0] - 1) * 10,
        rsi(c[:, None], 14)[:, 0] / 100 - 0.5,
        np.where(lv_sd > 0, (lv - rolling_mean(lv[:, None], 24)[:, 0]) / safe_sd, 0.0),
    ]
    return np.clip(np.stack(cols, axis=-1), -10, 10).astype(np.float32)


@struct.dataclass
class CryptoState:
    cash: jax.Array  # f32 []
    position: jax.Array  # f32 [] units held (short < 0)
    holding: jax.Array  # i32 [] steps the current non-zero position has been open
    t: jax.Array  # i32 [] current bar
    start: jax.Array  # i32 []
    time: jax.Array  # i32 []


@struct.dataclass
class CryptoParams:
    close: jax.Array  # f32 [T, 1] mid price per bar (the bar close)
    factors: jax.Array  # f32 [T, 8]
    start_lo: int
    start_hi: int
    end: int
    max_steps_in_episode: int = 3600  # FinRL's window length in steps
    max_holding: int = 3600  # forced close after this many steps in one position
    max_position: float = 2.0  # |position| cap in units
    trade_size: float = 1.0  # units per buy/sell action
    slippage: float = 5e-5  # fraction of the price paid per side
    initial_cash: float = 1e6
    reward_scaling: float = 1.0


class CryptoTrading(Environment[CryptoState, CryptoParams]):
    """Discrete BTC trading over random windows of bars (FinRL Contest 2024 Task 1).

    - action ``Discrete(3)``: 0 sell, 1 hold, 2 buy ``trade_size`` units at ``close[t]``
      with ``slippage`` per side (buy pays ``p (1 + s)``, sell gets ``p (1 - s)``); other
      integers are clipped into ``[0, 2]``.
    - position: clipped to ``[-max_position, max_position]``; a trade that would cross zero
      closes the position first (ends flat); after ``max_holding`` steps in a position it
      is force-closed; on the window's last step (time limit or end of data) it is
      flattened, as FinRL does at the end of an episode.
    - observation ``f32[10]``: ``position / max_position``, ``holding / max_holding`` and
      the 8 factors of bar ``t``.
    - reward ``(V[t+1] - V[t]) * reward_scaling`` with ``V = cash + position * close``.
    - episode: start uniform over the split (random windows); truncation at
      ``max_steps_in_episode`` (3600 steps, FinRL's window), termination only if the
      split's last bar is reached.
    - metrics: ``pnl`` (``V - initial_cash``), ``return`` (``V / initial_cash - 1``: the
      account's return, FinRL's net-asset convention, so it is small: at most
      ``max_position`` units are ever held), ``buy_and_hold_pnl`` (one unit held from the
      window start, costless), ``buy_and_hold_return`` (``max_position`` units held from the
      window start, costless, over ``initial_cash``: the always-long account),
      ``position``, ``cost``.
    - Not modelled: FinRL's trailing stop-loss and one-step execution delay (orders fill at
      the decision bar's close here).

    Args:
        data: ``"btc_usd_1h"`` (default), ``"btc_usd_1d"`` or a single-asset
            :class:`MarketData` (any bar frequency).
        split: ``"train"``, ``"validation"``, ``"test"`` or ``"all"``.
        random_start: random window starts (default) or the split's first bar.
        max_steps_in_episode, max_holding: default window and holding limit in steps.
    """

    def __init__(
        self,
        data: str | MarketData = "btc_usd_1h",
        split: str = "train",
        random_start: bool = True,
        max_steps_in_episode: int = 3600,
        max_holding: int = 3600,
    ):
        super().__init__()
        md, name = (data, None) if isinstance(data, MarketData) else (load_named(data), data)
        if md.num_assets != 1:
            raise ValueError(f"data {md.source} has {md.num_assets} assets: want exactly one")
        lo, end = resolve_split(md, name, split)
        start_lo = max(lo, min(168, end - 2))  # the 168-bar SMA factor fills first
        if end - start_lo < 2:
            raise ValueError(f"split={split!r} has {end - lo} bars: too short for an episode")
        start_hi = end - 2 if random_start else start_lo  # cut to the time limit at reset
        self.dates = md.dates
        self._default = CryptoParams(
            close=jnp.asarray(md.close.astype(np.float32)),
            factors=jnp.asarray(crypto_factors(md)),
            start_lo=start_lo,
            start_hi=start_hi,
            end=end,
            max_steps_in_episode=max_steps_in_episode,
            max_holding=max_holding,
        )

    @property
    def name(self) -> str:
        return "CryptoTrading-v0"

    @property
    def default_params(self) -> CryptoParams:
        return self._default

    def reset_env(self, key: jax.Array, params: CryptoParams):
        start = episode_start(key, params)
        state = CryptoState(
            cash=jnp.asarray(params.initial_cash).astype(jnp.float32),
            position=jnp.float32(0.0),
            holding=jnp.int32(0),
            t=start,
            start=start,
            time=jnp.int32(0),
        )
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: CryptoState, action: Any, params: CryptoParams):
        a = clip_action(action, self.action_space(params))
        old = state.position
        new = jnp.clip(
            old + (a - 1).astype(jnp.float32) * params.trade_size,
            -params.max_position,
            params.max_position,
        )
        new = jnp.where(old * new < 0, 0.0, new)  # crossing zero closes first
        opened = (old == 0) & (new != 0)
        holding = jnp.where(new == 0, 0, jnp.where(opened, 1, state.holding + 1)).astype(jnp.int32)
        forced = holding >= params.max_holding
        t1 = jnp.minimum(state.t + 1, params.end - 1).astype(jnp.int32)
        last = (state.time + 1 >= params.max_steps_in_episode) | (t1 >= params.end - 1)
        flat = forced | last
        new = jnp.where(flat, 0.0, new)
        holding = jnp.where(flat, 0, holding).astype(jnp.int32)
        p0, p1 = params.close[state.t, 0], params.close[t1, 0]
        p_start = params.close[state.start, 0]
        q = new - old
        cost = jnp.abs(q) * p0 * params.slippage
        cash = state.cash - q * p0 - cost
        change = (new * (p1 - p0) - cost).astype(jnp.float32)
        new_state = CryptoState(
            cash.astype(jnp.float32),
            new.astype(jnp.float32),
            holding,
            t1,
            state.start,
            state.time + 1,
        )
        value = cash + new * p1
        info = {
            "metrics": {
                "pnl": value - params.initial_cash,
                "return": value / params.initial_cash - 1.0,
                "buy_and_hold_pnl": p1 - p_start,
                "buy_and_hold_return": params.max_position * (p1 - p_start) / params.initial_cash,
                "position": new,
                "cost": cost,
            },
            "reward_terms": {"value_change": change},
        }
        info = jax.tree.map(lambda x: jnp.asarray(x).astype(jnp.float32), info)
        reward = (change * params.reward_scaling).astype(jnp.float32)
        terminated = t1 >= params.end - 1
        return self.observe(key, new_state, a, params), new_state, reward, terminated, info

    def observe(self, key: jax.Array, state: CryptoState, action: Any, params: CryptoParams):
        head = jnp.stack([state.position / params.max_position, state.holding / params.max_holding])
        return jnp.concatenate([head, params.factors[state.t]]).astype(jnp.float32)

    def observation_space(self, params: CryptoParams) -> spaces.Box:
        return spaces.Box(-jnp.inf, jnp.inf, (2 + NUM_FACTORS,), jnp.float32)

    def action_space(self, params: CryptoParams) -> spaces.Discrete:
        return spaces.Discrete(3)

    def render(self, state: CryptoState, params: CryptoParams) -> np.ndarray:
        t = int(state.t)
        close = np.asarray(params.close[max(0, t - 99) : t + 1])
        pos = float(state.position) / float(params.max_position)
        return chart(close, np.array([max(pos, 0.0), max(-pos, 0.0)]))

    def validate_params(self, params: CryptoParams) -> None:
        super().validate_params(params)
        validate_panel(params)
        check_ranges(
            {
                "max_position": (params.max_position, 0.0, None, False),
                "trade_size": (params.trade_size, 0.0, None, False),
                "slippage": (params.slippage, 0.0, 1.0, True),
                "initial_cash": (params.initial_cash, 0.0, None, False),
                "reward_scaling": (params.reward_scaling, 0.0, None, False),
                "max_holding": (params.max_holding, 0.0, None, False),
            }
        )
