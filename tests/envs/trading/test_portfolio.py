"""StockPortfolio-v0 against a float64 NumPy rebalancing ledger; weights stay a simplex."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hordax.envs.trading import data as md
from hordax.envs.trading.portfolio import StockPortfolio


@pytest.mark.parametrize("delay", [0, 1])
def test_portfolio__matches_numpy_rebalancing_ledger(delay):
    """Value, weights, cost and reward equal an independent float64 re-implementation over a
    random-action episode; weights are non-negative and sum to 1. ``execution_delay`` 0:
    rebalance at the observed close; 1: hold the current weights one bar, rebalance at the
    next close (cost on the drifted value and weights)."""
    data = md.synthetic_market(2, num_steps=160, num_assets=4)
    env = StockPortfolio(data=data, split="all", random_start=False)
    params = env.default_params.replace(cost_pct=2e-3, logit_scale=3.0, execution_delay=delay)
    step = jax.jit(env.step_env)
    _, state = env.reset_env(jax.random.key(0), params)
    close = np.asarray(params.close, np.float64)
    value, w = 1e6, np.full(4, 0.25)
    rng = np.random.default_rng(0)
    for k in range(90):
        a = rng.uniform(-1, 1, 4).astype(np.float32)
        t = int(state.t)
        _, state, reward, _, info = step(jax.random.key(k), state, jnp.asarray(a), params)
        z = np.exp(3.0 * a.astype(np.float64))
        target = z / z.sum()
        f = t + delay  # the rebalancing bar
        held = w * close[f] / close[t]  # current weights ride to the rebalancing bar
        v_f, w_f = value * held.sum(), held / held.sum()
        cost = 2e-3 * v_f * np.abs(target - w_f).sum()
        growth = close[t + 1] / close[f]
        new_value = (v_f - cost) * (target @ growth)
        w = target * growth / (target @ growth)
        np.testing.assert_allclose(float(info["metrics"]["cost"]), cost, rtol=1e-4)
        np.testing.assert_allclose(float(reward), (new_value - value) * 1e-4, rtol=1e-4, atol=1e-6)
        value = new_value
        np.testing.assert_allclose(float(state.value), value, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(state.weights), w, rtol=1e-5, atol=1e-7)
        assert np.all(np.asarray(state.weights) >= 0)
        np.testing.assert_allclose(float(jnp.sum(state.weights)), 1.0, atol=1e-6)
