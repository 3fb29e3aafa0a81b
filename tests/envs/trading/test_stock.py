"""StockTrading-v0 against an independent float64 NumPy ledger of FinRL's rules, ledger
invariants, turbulence liquidation, episode starts over splits, and no look-ahead."""

from __future__ import annotations

import functools
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.envs.trading import data as md
from hordax.envs.trading.panel import stock_panel
from hordax.envs.trading.stock import StockTrading, start_range

N = 3


@functools.cache
def _setup():
    data = md.synthetic_market(5, num_steps=400, num_assets=N, start_price=50.0)
    env = StockTrading(data=data, split="all", random_start=False, turbulence_threshold=np.inf)
    return data, env, jax.jit(env.step_env), jax.jit(env.reset_env)


def ref_step(cash, hold, a, t, P, delay=0):
    """FinRL StockTradingEnv rules in float64, one asset at a time (independent of ledger.py);
    ``delay`` 1: the orders decided on row ``t`` (turbulence of row ``t``) fill at row
    ``t + 1``'s close, with that row's volatility and volume."""
    f = t + delay  # the row the orders fill at
    price = P["close"][f].astype(np.float64)
    sig, adv = P["sigma"][f].astype(np.float64), P["adv"][f].astype(np.float64)
    hold = hold.astype(np.float64).copy()

    def cost(n, i, pct):
        if n <= 0:
            return 0.0
        imp = P["impact"] * sig[i] * np.sqrt(n / adv[i]) if adv[i] > 0 else 0.0
        return P["fixed"] + (pct + imp) * n * price[i]

    orders = np.trunc(a.astype(np.float32) * np.float32(P["hmax"])).astype(np.float64)
    turbulent = P["turbulence"][t] >= P["threshold"]
    total_cost = 0.0
    for i in range(N):  # sells first
        n = hold[i] if turbulent else min(max(-orders[i], 0.0), hold[i])
        c = cost(n, i, P["sell"])
        if n > 0 and n * price[i] >= c:
            cash += n * price[i] - c
            hold[i] -= n
            total_cost += c
    if not turbulent:
        for i in np.argsort(orders, kind="stable")[::-1]:  # buys: largest order first
            want = max(orders[i], 0.0)
            n = min(want, np.floor(max(cash - P["fixed"], 0) / (price[i] * (1 + P["buy"]))))
            while n > 0 and n * price[i] + cost(n, i, P["buy"]) > cash:
                n -= 1  # (the impact term can overshoot the linear bound)
            if n > 0:
                c = cost(n, i, P["buy"])
                cash -= n * price[i] + c
                hold[i] += n
                total_cost += c
    value = cash + hold @ P["close"][t + 1].astype(np.float64)
    return cash, hold, total_cost, value


def _ref_params(params):
    return {
        "close": np.asarray(params.close),
        "sigma": np.asarray(params.sigma),
        "adv": np.asarray(params.adv),
        "turbulence": np.asarray(params.turbulence),
        "threshold": float(params.turbulence_threshold),
        "hmax": float(params.hmax),
        "buy": float(params.buy_cost_pct),
        "sell": float(params.sell_cost_pct),
        "fixed": float(params.fixed_cost),
        "impact": float(params.impact_coef),
    }


COSTS = {
    "proportional": {},
    "fixed_proportional": {"fixed_cost": 5.0},
    "sqrt_impact": {"impact_coef": 40.0},
    "asymmetric_turbulent": {"buy_cost_pct": 2e-3, "sell_cost_pct": 5e-4, "fixed_cost": 1.0},
}


@pytest.mark.parametrize("delay", [0, 1])
@pytest.mark.parametrize("case", sorted(COSTS))
def test_stock__matches_numpy_ledger_step_by_step(case, delay):
    """Cash, holdings, costs, value and reward equal the float64 ledger at every step of a
    random-action episode (cash small enough that buy caps bind); also over the whole
    trajectory when the reference runs on its own state. ``execution_delay`` 0: orders
    fill at the observed close (FinRL); 1: at the next bar's close."""
    _, env, step, reset = _setup()
    params = env.default_params.replace(initial_cash=30_000.0, start_lo=260, start_hi=260)
    params = params.replace(execution_delay=delay, **COSTS[case])
    if case == "asymmetric_turbulent":
        thr = float(np.quantile(np.asarray(params.turbulence)[260:], 0.7))
        params = params.replace(turbulence_threshold=thr)
    P = _ref_params(params)
    rng = np.random.default_rng(zlib.crc32(case.encode()))  # hash() varies per process
    _, state = reset(jax.random.key(0), params)
    own_cash, own_hold = 30_000.0, np.zeros(N)
    max_rel, n_buys, n_turb = 0.0, 0, 0
    for k in range(120):
        a = rng.uniform(-1, 1, N).astype(np.float32)
        t = int(state.t)
        cash0, hold0, value0 = float(state.cash), np.asarray(state.holdings), float(state.value)
        _, state, reward, terminated, info = step(jax.random.key(k), state, jnp.asarray(a), params)
        cash, hold, cost, value = ref_step(cash0, hold0, a, t, P, delay)
        np.testing.assert_array_equal(np.asarray(state.holdings), hold, err_msg=f"step {k}")
        np.testing.assert_allclose(float(state.cash), cash, rtol=1e-6, atol=0.05)
        np.testing.assert_allclose(float(info["metrics"]["cost"]), cost, rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(float(state.value), value, rtol=1e-6)
        want_reward = (value - value0) * 1e-4
        np.testing.assert_allclose(float(reward), want_reward, rtol=1e-4, atol=1e-6)
        # the reference on its own state, never re-synchronized
        own_cash, own_hold, _, own_value = ref_step(own_cash, own_hold, a, t, P, delay)
        max_rel = max(max_rel, abs(float(state.value) - own_value) / own_value)
        n_buys += int(np.any(hold > hold0))
        n_turb += int(P["turbulence"][t] >= P["threshold"])
        assert not bool(terminated)
    np.testing.assert_array_equal(np.asarray(state.holdings), own_hold)
    assert max_rel < 1e-6, max_rel
    assert n_buys > 20
    if case == "asymmetric_turbulent":
        assert n_turb > 10


def test_stock__invariants_under_random_actions():
    """Never negative cash or holdings; holdings integer; trading at close[t] changes
    cash + holdings value by exactly minus the cost; turbulence sells everything."""
    _, env, step, reset = _setup()
    params = env.default_params.replace(initial_cash=20_000.0, fixed_cost=2.0, impact_coef=10.0)
    params = params.replace(start_lo=260, start_hi=260)
    thr = float(np.quantile(np.asarray(params.turbulence)[260:], 0.8))
    params = params.replace(turbulence_threshold=thr)
    close, turb = np.asarray(params.close), np.asarray(params.turbulence)
    rng = np.random.default_rng(1)
    _, state = reset(jax.random.key(0), params)
    liquidations = 0
    for k in range(130):
        t = int(state.t)
        before = float(state.cash) + np.asarray(state.holdings) @ close[t]
        a = jnp.asarray(rng.uniform(-1.2, 1.2, N), jnp.float32)
        _, state, _, _, info = step(jax.random.key(k), state, a, params)
        h = np.asarray(state.holdings)
        assert float(state.cash) >= 0 and np.all(h >= 0) and np.all(h == np.round(h))
        after = float(state.cash) + h @ close[t]
        cost = float(info["metrics"]["cost"])
        np.testing.assert_allclose(after, before - cost, rtol=1e-6)
        if turb[t] >= thr:
            assert np.all(h == 0)
            liquidations += 1
    assert liquidations > 5


def test_stock__nan_action_holds_and_out_of_range_clips():
    """NaN entries act as 0 (no trade); +-5 acts as +-1 (hmax shares)."""
    _, env, step, reset = _setup()
    params = env.default_params
    _, s0 = reset(jax.random.key(0), params)
    _, s1, _, _, _ = step(jax.random.key(1), s0, jnp.array([5.0, jnp.nan, 1.0]), params)
    np.testing.assert_array_equal(np.asarray(s1.holdings), [100.0, 0.0, 100.0])
    _, s2, _, _, _ = step(jax.random.key(2), s1, jnp.array([-9.0, jnp.nan, 0.0]), params)
    np.testing.assert_array_equal(np.asarray(s2.holdings), [0.0, 0.0, 100.0])


def test_stock__episode_starts_and_termination_follow_split():
    """Random starts lie in the test split (dates after the validation end) and leave room
    for a whole episode; stepping to the split's last row terminates."""
    data, env, step, reset = _setup()
    test_env = StockTrading(data=data, split="test", max_steps_in_episode=10)
    p = test_env.default_params
    lo, end = md.chronological_split(data.num_steps)["test"]
    assert p.start_lo == lo and p.end == end and p.start_hi == end - 2
    keys = jax.random.split(jax.random.key(0), 64)
    starts = jax.vmap(lambda k: test_env.reset_env(k, p)[1].t)(keys)
    assert int(starts.min()) >= lo and int(starts.max()) <= end - 11
    assert len(set(starts.tolist())) > 5
    # fixed start at the last possible row: one step reaches end - 1 and terminates
    params = env.default_params.replace(start_lo=398, start_hi=398)
    _, s = reset(jax.random.key(0), params)
    _, s, _, terminated, _ = step(jax.random.key(1), s, jnp.zeros(N), params)
    assert int(s.t) == 399 and bool(terminated)


def test_stock__observations_do_not_look_ahead():
    """Perturbing prices after row k leaves every observation up to row k unchanged."""
    data, env, step, reset = _setup()
    k = 300
    v = data.values.copy()
    v[k + 1 :, :, :4] *= 1.3
    v[k + 1 :, :, 4] *= 2.0
    panel = stock_panel(md.MarketData(data.dates, data.tickers, v))
    p1 = env.default_params.replace(start_lo=260, start_hi=260)
    fields = ("close", "features", "turbulence", "sigma", "adv")
    p2 = p1.replace(**{f: jnp.asarray(panel[f]) for f in fields})
    obs1, s1 = reset(jax.random.key(0), p1)
    obs2, s2 = reset(jax.random.key(0), p2)
    rng = np.random.default_rng(0)
    for i in range(k - 260):
        np.testing.assert_array_equal(np.asarray(obs1), np.asarray(obs2))
        a = jnp.asarray(rng.uniform(-1, 1, N), jnp.float32)
        obs1, s1, *_ = step(jax.random.key(i), s1, a, p1)
        obs2, s2, *_ = step(jax.random.key(i), s2, a, p2)
    assert int(s1.t) == k
    np.testing.assert_array_equal(np.asarray(obs1), np.asarray(obs2))
    obs1, *_ = step(jax.random.key(0), s1, jnp.zeros(N), p1)
    obs2, *_ = step(jax.random.key(0), s2, jnp.zeros(N), p2)
    assert not np.allclose(np.asarray(obs1), np.asarray(obs2))  # row k + 1 did change


def test_stock__make_validates_params():
    """hordax.make names the field and the allowed range for bad params or options."""
    with pytest.raises(ValueError, match=r"params.buy_cost_pct=\[?1.5"):
        hordax.make("StockTrading-v0", buy_cost_pct=1.5)
    with pytest.raises(ValueError, match="cost_model='sqrt_impact' needs volume"):
        hordax.make("StockTrading-v0", cost_model="sqrt_impact")
    with pytest.raises(ValueError, match="split='tst'"):
        hordax.make("StockTrading-v0", split="tst")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("env_id", "field", "cut"),
    [
        ("StockTrading-v0", "features", np.s_[:100]),
        ("StockTrading-v0", "features", np.s_[:, :2]),
        ("StockTrading-v0", "turbulence", np.s_[:100]),
        ("StockTrading-v0", "sigma", np.s_[:100]),
        ("StockTrading-v0", "adv", np.s_[:, :2]),
        ("StockPortfolio-v0", "features", np.s_[:100]),
        ("CryptoTrading-v0", "factors", np.s_[:100]),
    ],
)
def test_panel__per_row_arrays_must_match_the_close_panel(env_id, field, cut):
    """Every per-row array of the params has the close panel's rows (and assets): a
    ``features`` of 100 rows was accepted, and indexing it at row ``t >= 100`` (clamped by
    JAX) observed row 99's indicators for the rest of the panel, silently."""
    env, params = hordax.make(env_id)
    short = getattr(params, field)[cut]
    with pytest.raises(ValueError, match=rf"params\.{field} has shape \({short.shape[0]},"):
        env.validate_params(params.replace(**{field: short}))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("env_id", ["StockTrading-v0", "StockPortfolio-v0", "CryptoTrading-v0"])
def test_panel__batched_params_are_checked_entry_by_entry(env_id):
    """Params batched for ``vmap`` (one panel per env, a leading axis on every leaf) are
    validated per entry: they were refused outright ('params.close has shape (3, T, N)'),
    so no batched trading params could be validated; a bad entry is named."""
    env, params = hordax.make(env_id)
    batched = jax.tree.map(lambda x: jnp.stack([jnp.asarray(x)] * 3), params)
    env.validate_params(batched)
    T = params.close.shape[0]
    with pytest.raises(ValueError, match=rf"params.end=\d+ \(entry \[1\]\): .* end <= T={T}"):
        env.validate_params(batched.replace(end=batched.end.at[1].set(T + 5)))
    close = batched.close.at[2, 7, 0].set(-1.0)
    with pytest.raises(ValueError, match=r"params.close\[2, 7, 0\]=-1.0: prices must be"):
        env.validate_params(batched.replace(close=close))
    field = "factors" if env_id.startswith("Crypto") else "features"
    short = batched.replace(**{field: getattr(batched, field)[:, :100]})
    with pytest.raises(ValueError, match=r"want leading \(3, "):
        env.validate_params(short)


def test_ledger__buy_order_largest_first_ties_to_higher_index():
    """With cash for one order only, equal orders go to the higher asset index (FinRL's
    np.argsort(actions)[::-1]); a larger order goes first."""
    from hordax.envs.trading.ledger import execute_orders

    def run(orders):
        kw = dict(buy_pct=0.0, sell_pct=0.0, fixed=0.0, impact=0.0, liquidate=jnp.bool_(False))
        return execute_orders(
            jnp.float32(1000.0),
            jnp.zeros(3),
            jnp.asarray(orders, jnp.float32),
            jnp.full(3, 10.0),
            jnp.zeros(3),
            jnp.zeros(3),
            **kw,
        )[1]

    np.testing.assert_array_equal(np.asarray(run([100, 100, 10])), [0, 100, 0])
    np.testing.assert_array_equal(np.asarray(run([100, 99, 10])), [100, 0, 0])
    np.testing.assert_array_equal(np.asarray(run([30, 30, 30])), [30, 30, 30])


def test_ledger__buys_the_largest_affordable_order_under_impact_and_fixed_costs():
    """Each buy is the largest integer n with n * price + cost(n) <= cash, checked in
    float64 against n + 1 over random cash, prices and costs (the earlier one-step shrink
    could stop a share or more short of it when the square-root impact overshot)."""
    from hordax.envs.trading.ledger import execute_orders, trade_cost

    rng = np.random.default_rng(0)
    n_case = 2000
    cash = rng.uniform(100.0, 50_000.0, n_case).astype(np.float32)
    price = rng.uniform(5.0, 300.0, n_case).astype(np.float32)
    sigma = rng.uniform(0.005, 0.05, n_case).astype(np.float32)
    adv = rng.uniform(50.0, 5_000.0, n_case).astype(np.float32)
    fixed = rng.choice([0.0, 1.0, 20.0], n_case).astype(np.float32)
    impact = rng.choice([0.0, 10.0, 100.0], n_case).astype(np.float32)

    def one(c, p, s, a, f, y):
        kw = dict(buy_pct=1e-3, sell_pct=1e-3, fixed=f, impact=y, liquidate=jnp.bool_(False))
        out = execute_orders(c, jnp.zeros(1), jnp.full(1, 1000.0), p[None], s[None], a[None], **kw)
        return out[0], out[1][0]

    left, n = jax.jit(jax.vmap(one))(cash, price, sigma, adv, fixed, impact)
    left, n = np.asarray(left, np.float64), np.asarray(n, np.float64)
    assert np.all(left >= 0) and np.all(n == np.round(n)) and np.all(n <= 1000)

    def total(k):
        c = trade_cost(k, price, 1e-3, fixed, impact, sigma, adv)
        return k * price + np.asarray(c, np.float64)

    fits_next = total(n + 1) <= cash.astype(np.float64) * (1 - 1e-6)  # clear of float32 ties
    assert not np.any(fits_next & (n < 1000)), np.flatnonzero(fits_next & (n < 1000))[:5]
    assert np.mean(n > 0) > 0.9 and np.sum((impact > 0) & (n < 1000)) > 500


def test_stock__ticker_subset_and_ohlcv_data():
    """tickers= selects columns of the shipped panel and recomputes turbulence on them;
    the OHLCV dataset runs with the square-root impact model and charges more than 0.1 %."""
    from hordax.envs.trading import datasets
    from hordax.envs.trading.indicators import turbulence

    env, p = hordax.make("StockTrading-v0", tickers=("MSFT", "AAPL"))
    sp = datasets.load_sp500()
    cols = [sp.tickers.index("MSFT"), sp.tickers.index("AAPL")]
    np.testing.assert_array_equal(np.asarray(p.close), sp.close[:, cols].astype(np.float32))
    np.testing.assert_allclose(np.asarray(p.turbulence), turbulence(sp.close[:, cols]), rtol=1e-5)
    assert env.observation_space(p).shape == (1 + 2 * 2 + 8 * 2,)
    env, p = hordax.make("StockTrading-v0", data="stocks", cost_model="sqrt_impact", split="test")
    _, s = env.reset(jax.random.key(0), p)
    _, s, _, _, _, info = env.step(jax.random.key(1), s, jnp.ones(4), p)
    traded = float(jnp.sum(s.holdings * p.close[s.t - 1]))
    assert traded > 0 and float(info["metrics"]["cost"]) > 1e-3 * traded


@pytest.mark.parametrize("env_id", ["StockTrading-v0", "StockPortfolio-v0", "CryptoTrading-v0"])
def test_random_starts__follow_a_time_limit_set_through_params(env_id):
    """A time limit set through ``params`` (as ``env.params.max_steps_in_episode=63`` on
    the CLI does, after the constructor ran with its default) moves the last random start
    to ``end - 1 - 63``: every row of the split is reachable. (It used to stay where the
    constructor's default limit put it, so the split's last rows were never visited.)
    A fixed start stays at ``start_lo`` whatever the limit."""
    kw = {"data": "stocks" if env_id.startswith("Stock") else "btc_usd_1d", "split": "test"}
    env, params = hordax.make(env_id, params={"max_steps_in_episode": 63}, **kw)
    lo, end = int(params.start_lo), int(params.end)
    keys = jax.random.split(jax.random.key(0), 4096)
    starts = np.asarray(jax.jit(jax.vmap(lambda k: env.reset_env(k, params)[1].t))(keys))
    assert starts.min() == lo and starts.max() == end - 1 - 63  # uniform over ~280 rows
    # the same range under vmap over params with different time limits
    both = jax.tree.map(lambda *x: jnp.stack(x), params, params.replace(max_steps_in_episode=200))
    hi = jax.vmap(lambda p: start_range(p)[1])(both)
    np.testing.assert_array_equal(np.asarray(hi), [end - 1 - 63, max(lo, end - 1 - 200)])
    fixed = params.replace(start_hi=lo)
    assert int(jax.jit(env.reset_env)(jax.random.key(3), fixed)[1].t) == lo


def test_execution_delay__fills_at_the_next_close_and_is_validated():
    """One buy of 100 shares of asset 0, no costs: with delay 0 it fills at close[t], with
    delay 1 at close[t + 1] (so the first step's value does not change at all); any other
    value is an error naming the field, for both stock envs."""
    _, env, step, reset = _setup()
    params = env.default_params.replace(start_lo=260, start_hi=260, buy_cost_pct=0.0)
    close = np.asarray(params.close, np.float64)
    a = jnp.asarray([1.0, 0.0, 0.0])
    for delay, fill in ((0, 260), (1, 261)):
        p = params.replace(execution_delay=delay)
        _, s0 = reset(jax.random.key(0), p)
        _, s1, reward, _, _ = step(jax.random.key(1), s0, a, p)
        np.testing.assert_allclose(float(s1.cash), 1e6 - 100 * close[fill, 0], rtol=1e-7)
        gain = 100 * (close[261, 0] - close[fill, 0])
        np.testing.assert_allclose(float(reward), gain * 1e-4, atol=1e-6)
    for env_id in ("StockTrading-v0", "StockPortfolio-v0"):
        for bad in (2, -1, 0.5):
            with pytest.raises(
                ValueError, match=r"params.execution_delay=.*must be (the|an) integer"
            ):
                hordax.make(env_id, data="stocks", execution_delay=bad)
