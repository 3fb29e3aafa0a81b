"""StockTrading-v0 against the ``finrl`` package's own ``StockTradingEnv`` (FinRL 0.3.7).

Needs ``finrl`` (the README's test command installs it: ``pip install --no-deps
finrl==0.3.7``; FinRL's heavy dependencies are not needed: the one module used is loaded from
its file and ``stable_baselines3`` is stubbed if absent). Without it these tests fail, naming
the install line, rather than skip: a skipped reference check hid in CI's output before.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd  # the dev extra
import pytest

from hordax.envs.trading import data as md
from hordax.envs.trading.stock import StockTrading

_SPEC = importlib.util.find_spec("finrl")


def _finrl_env_class(monkeypatch):
    assert _SPEC is not None, "finrl is not installed: pip install --no-deps finrl==0.3.7"
    if importlib.util.find_spec("stable_baselines3") is None:
        vec_env = types.ModuleType("stable_baselines3.common.vec_env")
        vec_env.DummyVecEnv = object
        for name, mod in (
            ("stable_baselines3", types.ModuleType("stable_baselines3")),
            ("stable_baselines3.common", types.ModuleType("stable_baselines3.common")),
            ("stable_baselines3.common.vec_env", vec_env),
        ):
            monkeypatch.setitem(sys.modules, name, mod)
    path = pathlib.Path(_SPEC.submodule_search_locations[0])
    path = path / "meta" / "env_stock_trading" / "env_stocktrading.py"
    spec = importlib.util.spec_from_file_location("_finrl_env_stocktrading", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.StockTradingEnv


@pytest.mark.parametrize("turbulence", [False, True])
def test_stock__matches_finrl_stocktradingenv(monkeypatch, turbulence):
    """Same prices, turbulence and actions: cash, holdings and reward equal FinRL's own env at
    every step (FinRL in float64, hordax in float32)."""
    N, steps = 4, 80
    data = md.synthetic_market(9, num_steps=400, num_assets=N, start_price=40.0)
    env = StockTrading(data=data, split="all", random_start=False, turbulence_threshold=np.inf)
    all_turb = np.asarray(env.default_params.turbulence)
    # a calm first day: FinRL's reset sets its turbulence to 0 for the first step
    start = 260 + int(np.argmax(all_turb[260:300] < np.quantile(all_turb[260:], 0.5)))
    params = env.default_params.replace(start_lo=start, start_hi=start, initial_cash=50_000.0)
    close = np.asarray(params.close, np.float64)[start : start + steps + 1]
    turb = np.asarray(params.turbulence, np.float64)[start : start + steps + 1]
    thr = None
    if turbulence:
        thr = float(np.quantile(turb, 0.75))
        assert turb[0] < thr
        params = params.replace(turbulence_threshold=thr)
    rows = [
        {"date": d, "tic": f"S{j}", "close": close[d, j], "macd": 0.5, "turbulence": turb[d]}
        for d in range(steps + 1)
        for j in range(N)
    ]
    df = pd.DataFrame(rows)
    df.index = df["date"].factorize()[0]
    StockTradingEnv = _finrl_env_class(monkeypatch)
    ref = StockTradingEnv(
        df=df,
        stock_dim=N,
        hmax=100,
        initial_amount=50_000,
        num_stock_shares=[0] * N,
        buy_cost_pct=[1e-3] * N,
        sell_cost_pct=[1e-3] * N,
        reward_scaling=1e-4,
        state_space=1 + 2 * N + N,
        action_space=N,
        tech_indicator_list=["macd"],
        turbulence_threshold=thr,
        print_verbosity=10**9,
    )
    ref_state, _ = ref.reset()
    step = jax.jit(env.step_env)
    _, state = env.reset_env(jax.random.key(0), params)
    rng = np.random.default_rng(3)
    turbulent_steps = 0
    for k in range(steps - 1):
        a = rng.uniform(-1, 1, N).astype(np.float32)
        ref_state, ref_reward, ref_term, _, _ = ref.step(a.copy())
        _, state, reward, terminated, _ = step(jax.random.key(k), state, jnp.asarray(a), params)
        np.testing.assert_array_equal(np.asarray(state.holdings), ref_state[1 + N : 1 + 2 * N])
        # float32 cash: within 1e-6 of the portfolio value
        np.testing.assert_allclose(float(state.cash), ref_state[0], rtol=1e-6, atol=0.05)
        np.testing.assert_allclose(float(reward), ref_reward, rtol=1e-4, atol=1e-6)
        assert not ref_term and not bool(terminated)
        turbulent_steps += int(turbulence and turb[k] >= thr)
    assert int(jnp.sum(state.holdings > 0)) > 0 or turbulence
    if turbulence:
        assert turbulent_steps > 10
