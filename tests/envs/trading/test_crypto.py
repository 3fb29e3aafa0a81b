"""CryptoTrading-v0 against a float64 NumPy position/cash reference (caps, forced close,
end-of-window flattening, slippage), zero-crossing rule, and causal factors."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.envs.trading import data as md
from hordax.envs.trading.crypto import CryptoTrading, crypto_factors


@functools.cache
def _setup():
    env, params = hordax.make("CryptoTrading-v0")
    return env, params, jax.jit(env.step_env), jax.jit(env.reset_env)


def ref_episode(close, start, actions, max_steps, max_holding, max_pos, size, slip, cash):
    """FinRL TradeSimulator position rules, float64, written as a plain loop."""
    pos, hold, t, out = 0.0, 0, start, []
    for k, act in enumerate(actions):
        d = {0: -1.0, 1: 0.0, 2: 1.0}[int(act)]
        new = min(max(pos + d * size, -max_pos), max_pos)
        if pos * new < 0:
            new = 0.0
        if new == 0:
            hold = 0
        elif pos == 0:
            hold = 1
        else:
            hold += 1
        if hold >= max_holding or k + 1 >= max_steps:
            new, hold = 0.0, 0
        q = new - pos
        cost = abs(q) * close[t] * slip
        cash -= q * close[t] + cost
        reward = new * (close[t + 1] - close[t]) - cost
        pos, t = new, t + 1
        out.append((pos, hold, cash, reward, cost))
    return out


@pytest.mark.parametrize("size", [1.0, 1.5])
def test_crypto__matches_numpy_reference(size):
    """Position, holding time, cash, cost and reward equal the reference over 3 random
    windows of 40 bars with max_holding 7 (forced closes happen) on the hourly BTC data."""
    env, params, step, reset = _setup()
    params = params.replace(max_steps_in_episode=40, max_holding=7, trade_size=size)
    close = np.asarray(params.close[:, 0], np.float64)
    rng = np.random.default_rng(int(size * 10))
    forced = 0
    for ep in range(3):
        _, state = reset(jax.random.key(ep), params)
        start = int(state.t)
        actions = rng.choice(3, size=40, p=[0.3, 0.2, 0.5])
        ref = ref_episode(close, start, actions, 40, 7, 2.0, size, 5e-5, 1e6)
        for k, act in enumerate(actions):
            _, state, reward, _, info = step(jax.random.key(k), state, jnp.int32(act), params)
            pos, hold, cash, rew, cost = ref[k]
            assert float(state.position) == pos and int(state.holding) == hold, (ep, k)
            np.testing.assert_allclose(float(state.cash), cash, rtol=1e-6)
            np.testing.assert_allclose(float(reward), rew, rtol=1e-4, atol=1e-3)
            np.testing.assert_allclose(float(info["metrics"]["cost"]), cost, rtol=1e-5)
            # equity convention: V / initial_cash (V = cash + position * close[t + 1]);
            # buy-and-hold: max_position units from the window's first bar, costless
            value = float(state.cash) + pos * close[start + k + 1]  # cash checked above
            m = info["metrics"]
            np.testing.assert_allclose(float(m["return"]), value / 1e6 - 1.0, atol=3e-7)  # f32 V
            bh = 2.0 * (close[start + k + 1] - close[start]) / 1e6
            np.testing.assert_allclose(float(m["buy_and_hold_return"]), bh, rtol=1e-5, atol=1e-9)
            forced += int(k > 0 and ref[k - 1][1] == 6 and hold == 0)
            assert abs(float(state.position)) <= 2.0
        assert float(state.position) == 0.0  # flattened on the window's last step
    assert forced > 0


def test_crypto__crossing_zero_closes_first():
    """With trade_size 1.5, a sell from +0.5 (which would end at -1) ends flat, not short."""
    env, params, step, reset = _setup()
    params = params.replace(trade_size=1.5)
    _, s = reset(jax.random.key(0), params)
    _, s, *_ = step(jax.random.key(1), s, jnp.int32(2), params)  # +1.5
    _, s, *_ = step(jax.random.key(2), s, jnp.int32(2), params)  # capped at +2
    assert float(s.position) == 2.0
    _, s, *_ = step(jax.random.key(3), s, jnp.int32(0), params)  # 2 - 1.5 = 0.5
    assert float(s.position) == 0.5
    _, s, *_ = step(jax.random.key(4), s, jnp.int32(0), params)  # would be -1: closes to 0
    assert float(s.position) == 0.0 and int(s.holding) == 0


def test_crypto__factors_causal_and_finite():
    """Factors are finite and perturbing bars after k leaves rows <= k unchanged."""
    data = md.synthetic_market(4, num_steps=400, num_assets=1, freq="h")
    f = crypto_factors(data)
    assert f.shape == (400, 8) and np.all(np.isfinite(f))
    v = data.values.copy()
    v[251:, :, :4] *= 1.2
    v[251:, :, 4] *= 5
    g = crypto_factors(md.MarketData(data.dates, data.tickers, v))
    np.testing.assert_array_equal(f[:251], g[:251])
    assert not np.allclose(f[251:], g[251:])


def test_crypto__window_starts_in_split_and_bad_data():
    env, params, _, reset = _setup()
    starts = jax.vmap(lambda k: reset(k, params)[1].t)(jax.random.split(jax.random.key(1), 32))
    assert int(starts.min()) >= params.start_lo and int(starts.max()) <= params.end - 1 - 3600
    assert params.start_hi == params.end - 2  # cut to end - 1 - max_steps at reset
    assert str(env.dates[params.end])[:10] == "2018-10-01"
    with pytest.raises(ValueError, match="want exactly one"):
        CryptoTrading(data=md.synthetic_market(0, 300, 2))
    with pytest.raises(ValueError, match=r"params.slippage"):
        hordax.make("CryptoTrading-v0", slippage=-0.1)
