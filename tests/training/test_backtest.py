"""``hordax backtest``: metrics on hand cases, a hand-made population run on real data."""

from __future__ import annotations

import csv
import functools
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ensemble_helpers import output_layer
from flax import serialization
from omegaconf import OmegaConf

import hordax
from hordax.agents.ppo import make_agent
from hordax.envs.trading import splits
from hordax.training import ensemble as E  # noqa: N812
from hordax.training.backtest import BacktestConfig, performance, run_backtest
from hordax.training.config import TrainConfig

pytestmark = pytest.mark.timeout(180)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_performance__hand_case():
    curve = np.array([1.0, 1.1, 0.99, 1.2])
    m = performance(curve, periods_per_year=252)
    r = np.array([0.1, -0.1, 1.2 / 0.99 - 1])
    assert m["cumulative_return"] == pytest.approx(0.2)
    assert m["max_drawdown"] == pytest.approx(0.1)  # 1.1 -> 0.99
    assert m["annualized_return"] == pytest.approx(1.2 ** (252 / 3) - 1)
    assert m["annualized_volatility"] == pytest.approx(np.std(r, ddof=1) * np.sqrt(252))
    assert m["sharpe"] == pytest.approx(r.mean() / np.std(r, ddof=1) * np.sqrt(252))


def test_performance__flat_and_falling():
    flat = performance(np.ones(10), 252)
    assert flat == {k: 0.0 for k in flat}
    down = performance(np.array([2.0, 1.5, 1.0, 1.2]), 12)
    assert down["max_drawdown"] == pytest.approx(0.5)
    assert down["cumulative_return"] == pytest.approx(-0.4)
    assert down["sharpe"] < 0


def _write_run(
    run_dir: str,
    env_id: str,
    outputs: list[list[float]],
    size: int | None = None,
    kwargs: dict | None = None,
    periods_per_year: float = 252.0,
    params: dict | None = None,
):
    """A run dir as ``hordax train agent=ensemble`` leaves it, with constant-action members."""
    os.makedirs(run_dir, exist_ok=True)
    cfg = OmegaConf.structured(TrainConfig)
    cfg.env.id = env_id
    if env_id == "StockTrading-v0":
        cfg.env.kwargs = {"data": "stocks"}
    cfg.env.kwargs = {**cfg.env.kwargs, **(kwargs or {})}
    cfg.env.params = dict(params or {})
    cfg.ensemble.periods_per_year = periods_per_year
    cfg.agent.network.hidden_sizes = [8]
    cfg.population.size = size or len(outputs)
    cfg.ensemble.enabled = True
    cfg.ensemble.window = 21
    with open(os.path.join(run_dir, "config.yaml"), "w") as f:
        f.write(OmegaConf.to_yaml(cfg))
    env, params = hordax.make(env_id, **dict(cfg.env.kwargs))
    agent = make_agent(
        OmegaConf.to_object(cfg).agent,
        env.observation_space(params).shape,
        env.action_space(params),
        1,
    )
    members = []
    for i, out in enumerate(outputs):
        p = agent.init(jax.random.key(i)).params
        head = output_layer(p["actor"])
        head["kernel"] = jnp.zeros_like(head["kernel"])
        head["bias"] = jnp.asarray(out, jnp.float32)
        members.append(p)
    stacked = jax.tree.map(lambda *x: np.stack(x), *members)
    with open(os.path.join(run_dir, "params.msgpack"), "wb") as f:
        f.write(serialization.to_bytes({"params": stacked, "normalizer": {}}))


@functools.cache
def _stock_backtest(tmp: str) -> tuple[str, dict]:
    run_dir = os.path.join(tmp, "run")
    # member 0 sells everything (holds cash), member 1 buys every stock each day.
    _write_run(run_dir, "StockTrading-v0", [[-1.0] * 4, [1.0] * 4])
    return run_dir, run_backtest(BacktestConfig(run_dir=run_dir, split="test"))


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    return _stock_backtest(str(tmp_path_factory.mktemp("bt")))


def test_backtest__writes_table_curves_and_plot(stock):
    run_dir, out = stock
    d = out["out_dir"]
    assert d == os.path.join(run_dir, "backtest_test")
    for name in ("metrics.csv", "metrics.md", "equity.csv", "equity.png"):
        assert os.path.getsize(os.path.join(d, name)) > 0
    names = [r["run"] for r in out["rows"]]
    assert names == [
        "member_0",
        "member_1",
        "ensemble_average",
        "rolling_selection",
        "buy_and_hold",
        "equal_weight",
        "min_variance",
        "cash",
    ]
    with open(os.path.join(d, "metrics.csv")) as f:
        table = list(csv.DictReader(f))
    assert [r["run"] for r in table] == names
    with open(os.path.join(d, "metrics.md")) as f:
        md = f.read()
    assert md.count("\n") == len(names) + 2 and "| member_1 |" in md
    assert "| validation Sharpe (members) |" in md


def test_backtest__numbers_agree_with_independent_computations(stock):
    run_dir, out = stock
    rows = {r["run"]: r for r in out["rows"]}
    with open(os.path.join(out["out_dir"], "equity.csv")) as f:
        eq = list(csv.DictReader(f))
    curves = {k: np.array([float(r[k]) for r in eq]) for k in eq[0] if k != "step"}
    # A member that only sells never holds anything: its value stays the initial cash.
    np.testing.assert_allclose(curves["member_0"], 1.0)
    assert rows["member_0"]["max_drawdown"] < 1e-6 and rows["cash"]["sharpe"] == 0.0  # f32 value
    # It never trades (turnover 0); the env reports turnover for agent runs, not baselines.
    assert rows["member_0"]["turnover"] == 0.0 and rows["member_1"]["turnover"] >= 0.0
    assert np.isnan(rows["buy_and_hold"]["turnover"]) and np.isnan(rows["cash"]["turnover"])
    # Buy-and-hold: equal-weight price relatives from the split's first row (the env's own
    # prices, computed here without the env's step).
    env, params = hordax.make("StockTrading-v0", data="stocks", split="test", random_start=False)
    lo = int(params.start_lo)
    close = np.asarray(params.close, np.float64)[lo : lo + len(curves["buy_and_hold"])]
    np.testing.assert_allclose(curves["buy_and_hold"], (close / close[0]).mean(1), rtol=1e-5)
    assert out["steps"] == int(params.end) - 1 - lo == len(curves["cash"]) - 1
    # Equal-weight and minimum-variance baselines: rebalanced every step, computed here.
    rel = close[1:] / close[:-1]
    np.testing.assert_allclose(curves["equal_weight"][1:], np.cumprod(rel.mean(1)), rtol=1e-6)
    w = np.asarray(out["min_variance_weights"])
    assert w.min() >= 0.0 and w.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(curves["min_variance"][1:], np.cumprod(rel @ w), rtol=1e-6)
    # Every row is performance() of its curve.
    for name, curve in curves.items():
        ref = performance(curve, 252)
        for key, value in ref.items():
            assert rows[name][key] == pytest.approx(value, rel=1e-4, abs=1e-6), (name, key)
    # Weights are the positive-clipped validation Sharpes of the members; the ensemble rows
    # have none (fitted on that episode, it would be in-sample), nor the baselines.
    sharpe = [rows["member_0"]["validation_sharpe"], rows["member_1"]["validation_sharpe"]]
    assert all(np.isfinite(sharpe))
    for name in ("ensemble_average", "rolling_selection", "buy_and_hold", "cash"):
        assert np.isnan(rows[name]["validation_sharpe"]), name
    np.testing.assert_allclose(out["weights"], np.asarray(E.member_weights(sharpe)), rtol=1e-6)
    assert out["rolling_choices"][0] == [0, out["initial_member"]]
    assert all(s % 21 == 0 for s, _ in out["rolling_choices"])  # changes only at windows


def _equity(out: dict) -> dict[str, np.ndarray]:
    with open(os.path.join(out["out_dir"], "equity.csv")) as f:
        eq = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) for r in eq]) for k in eq[0] if k != "step"}


@pytest.mark.slow
def test_backtest__training_time_limit_does_not_cut_the_split(tmp_path, stock):
    """A run trained with ``env.params.max_steps_in_episode=63`` is backtested over the
    whole test split, exactly as the same members without that limit: same steps, curves
    and table (it used to trade 63 steps, then score a flat curve annualized over the
    whole split), and its validation weights come from the whole validation split too."""
    _, ref = stock
    run_dir = str(tmp_path / "limited")
    _write_run(
        run_dir, "StockTrading-v0", [[-1.0] * 4, [1.0] * 4], params={"max_steps_in_episode": 63}
    )
    out = run_backtest(BacktestConfig(run_dir=run_dir, split="test"))
    assert out["steps"] == ref["steps"] > 63
    curves, want = _equity(out), _equity(ref)
    assert list(curves) == list(want)
    for name in curves:
        np.testing.assert_array_equal(curves[name], want[name], err_msg=name)
    assert out["weights"] == ref["weights"] and out["rows"] == ref["rows"]
    # the always-buy member's value still moves on the split's last days
    assert np.count_nonzero(np.diff(curves["member_1"][-20:])) == 19


def test_backtest__refuses_a_run_cut_short(monkeypatch, stock):
    """An episode that ends before the split's last row (here: the old split_env that left
    the run's time limit in place) is an error naming the run, not a flat, diluted curve."""
    run_dir, _ = stock
    split_env = splits.split_env

    def limited(env_id, kwargs, params, split):
        env, env_params, steps = split_env(env_id, kwargs, params, split)
        return env, env_params.replace(max_steps_in_episode=63), steps

    monkeypatch.setattr(splits, "split_env", limited)
    with pytest.raises(ValueError, match=r"run 'member_0' stopped after 63 of \d+ steps"):
        run_backtest(BacktestConfig(run_dir=run_dir, split="test", out_dir="/nonexistent"))


def test_backtest__crypto_equity_from_pnl(tmp_path):
    """CryptoTrading-v0 (hourly BTC, 8760 periods a year): equity = V / initial_cash. An
    always-sell member is short 2 units, an always-buy member long 2 units; the latter's
    curve is recomputed here from the close prices and the env's rules (buy 1 unit at bars
    0 and 1, hold 2, flatten on the last step, slippage 5e-5 per side) and buy-and-hold is
    2 units held from the first bar, costless."""
    run_dir = str(tmp_path / "crypto")
    big = 10.0
    _write_run(
        run_dir,
        "CryptoTrading-v0",
        [[big, 0.0, 0.0], [0.0, 0.0, big]],
        kwargs={"max_holding": 10**7},
        periods_per_year=8760.0,
    )
    out = run_backtest(BacktestConfig(run_dir=run_dir, split="test"))
    assert out["periods_per_year"] == 8760.0
    rows = {r["run"]: r for r in out["rows"]}
    assert list(rows) == [
        "member_0",
        "member_1",
        "ensemble_vote",
        "rolling_selection",
        "buy_and_hold",
        "cash",
    ]
    with open(os.path.join(out["out_dir"], "equity.csv")) as f:
        eq = list(csv.DictReader(f))
    curves = {k: np.array([float(r[k]) for r in eq]) for k in eq[0] if k != "step"}
    env, params = hordax.make("CryptoTrading-v0", split="test", random_start=False)
    lo, steps = int(params.start_lo), out["steps"]
    assert steps == int(params.end) - 1 - lo == len(curves["cash"]) - 1
    p = np.asarray(params.close[:, 0], np.float64)[lo : lo + steps + 1]
    np.testing.assert_allclose(curves["buy_and_hold"], 1 + 2 * (p - p[0]) / 1e6, atol=1e-6)
    pos = np.minimum(np.arange(1, steps + 1), 2.0)
    pos[-1] = 0.0  # flattened on the last step
    trade = np.diff(pos, prepend=0.0)
    pnl = np.cumsum(pos * np.diff(p) - np.abs(trade) * p[:-1] * 5e-5)
    np.testing.assert_allclose(curves["member_1"][1:], 1 + pnl / 1e6, atol=2e-6)
    short = np.cumsum(-pos * np.diff(p) - np.abs(trade) * p[:-1] * 5e-5)
    np.testing.assert_allclose(curves["member_0"][1:], 1 + short / 1e6, atol=2e-6)
    for name, curve in curves.items():
        ref = performance(curve, 8760)
        for key, value in ref.items():
            assert rows[name][key] == pytest.approx(value, rel=1e-4, abs=1e-6), (name, key)
    # the BTC test split rose (3,795 -> 8,036): long gains, short loses
    assert rows["member_1"]["cumulative_return"] > 0 > rows["member_0"]["cumulative_return"]


def test_backtest__clear_errors(tmp_path, stock):
    run_dir, _ = stock
    with pytest.raises(ValueError, match="no such directory"):
        run_backtest(BacktestConfig(run_dir=str(tmp_path / "nope")))
    with pytest.raises(ValueError, match=r"split='holdout': allowed values"):
        run_backtest(BacktestConfig(run_dir=run_dir, split="holdout"))
    with pytest.raises(ValueError, match=r"periods_per_year=-252.0: must be > 0, or 0"):
        run_backtest(BacktestConfig(run_dir=run_dir, periods_per_year=-252.0))
    with pytest.raises(ValueError, match=r"data='sp500': observations have shape \(201,\)"):
        run_backtest(BacktestConfig(run_dir=run_dir, data="sp500"))
    single = str(tmp_path / "single")
    _write_run(single, "StockTrading-v0", [[0.0] * 4], size=1)
    with pytest.raises(ValueError, match="population.size=1; an ensemble needs a population"):
        run_backtest(BacktestConfig(run_dir=single))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="config.yaml is missing"):
        run_backtest(BacktestConfig(run_dir=str(empty)))
    cart = str(tmp_path / "cart")
    _write_run(cart, "CartPole-v1", [[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="needs an env with split="):
        run_backtest(BacktestConfig(run_dir=cart))


def test_backtest__data_the_env_cannot_take_names_the_key(tmp_path):
    """``data=sp500`` on a CryptoTrading-v0 run (one asset): the error names ``data=`` (it
    was the env's bare "data <path> has 20 assets: want exactly one")."""
    run_dir = str(tmp_path / "crypto")
    _write_run(run_dir, "CryptoTrading-v0", [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match=r"^data='sp500': data .* has 20 assets: want exactly"):
        run_backtest(BacktestConfig(run_dir=run_dir, data="sp500"))


def test_backtest_cli__positional_run_dir_and_one_line_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "hordax.training.cli", "backtest", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"hordax: error: run_dir={str(tmp_path / 'x')!r}: no such directory"
    ]
    assert not (tmp_path / "x").exists()  # hydra created nothing there


def test_ensemble_summary__cartpole_fresh_episodes(tmp_path):
    """agent=ensemble's summary on a non-trading env: fresh validation episodes."""
    run_dir = str(tmp_path / "cart")
    _write_run(run_dir, "CartPole-v1", [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    run = E.load_run(run_dir)
    run.cfg.ensemble.eval_episodes = 2
    summary = E.add_ensemble_to_summary(run.cfg, {"env": "CartPole-v1"}, run_dir)
    ens = summary["ensemble"]
    assert ens["validation"].startswith("2 fresh episodes")
    assert ens["combination"] == "ensemble_vote" and ens["sharpe_kind"] == "reward"
    assert ens["score"] == "return"  # auto: CartPole reports no return metric
    runs = ens["runs"]
    # Members 0 and 2 are identical, so the vote plays them: same validation return.
    assert runs["member_0"]["validation_return"] == runs["member_2"]["validation_return"]
    assert runs["ensemble_vote"]["validation_return"] == runs["member_0"]["validation_return"]
    assert runs["ensemble_vote"]["in_sample"] and runs["rolling_selection"]["in_sample"]
    assert "in_sample" not in runs["member_0"]
    assert sum(runs[f"member_{i}"]["weight"] for i in range(3)) == pytest.approx(1.0)
    with open(os.path.join(run_dir, "summary.json")) as f:
        assert json.load(f)["ensemble"]["runs"] == json.loads(json.dumps(runs))


def test_min_variance_weights__diagonal_and_against_scipy():
    """Long-only minimum variance: w_i ~ 1/var_i for uncorrelated assets; on correlated
    returns the objective equals scipy's SLSQP optimum over the simplex."""
    from scipy.optimize import minimize

    from hordax.envs.trading.baselines import min_variance_weights, project_simplex

    rng = np.random.default_rng(0)
    std = np.array([0.01, 0.02, 0.04])
    r = rng.standard_normal((20000, 3))
    r = (r - r.mean(0)) / r.std(0, ddof=1) * std  # exactly these stds
    w = min_variance_weights(r)
    cov = np.cov(r, rowvar=False)
    want = np.linalg.solve(cov, np.ones(3))
    np.testing.assert_allclose(w, want / want.sum(), atol=2e-3)
    mix = rng.standard_normal((500, 6)) @ rng.standard_normal((6, 6)) * 0.01
    mix[:, 0] += 0.05 * rng.standard_normal(500)  # one volatile asset: weight 0
    w = min_variance_weights(mix)
    cov = np.cov(mix, rowvar=False)
    ref = minimize(
        lambda x: x @ cov @ x,
        np.full(6, 1 / 6),
        method="SLSQP",
        bounds=[(0, 1)] * 6,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert w.min() >= 0 and w.sum() == pytest.approx(1.0) and w[0] < 1e-3
    assert w @ cov @ w <= ref.fun * (1 + 1e-6)
    p = project_simplex(np.array([0.5, 2.0, -1.0]))
    np.testing.assert_allclose(p, [0.0, 1.0, 0.0])


def _train_population(run_dir: str, agent_cfg, env_id: str, kwargs: dict) -> None:
    """A tiny real population run of ``agent_cfg`` (2 members), as ``hordax train`` leaves it
    (``config.yaml`` and ``params.msgpack``), trained with a 63-step time limit."""
    from hordax.training.config import PopulationConfig, TrainerConfig
    from hordax.training.host.loop import train_and_log
    from hordax.training.trainers import validate

    cfg = TrainConfig(
        agent=agent_cfg,
        trainer=TrainerConfig(num_envs=4, rollout_length=4, total_env_steps=64, num_chunks=1),
        population=PopulationConfig(size=2),
    )
    cfg.env.id, cfg.env.kwargs = env_id, kwargs
    cfg.env.params = {"max_steps_in_episode": 63}
    cfg.ensemble.periods_per_year = 252.0
    cfg.run_dir, cfg.progress = run_dir, False
    os.makedirs(run_dir, exist_ok=True)
    resolved = validate(cfg)
    env, params = hordax.make(env_id, params=dict(cfg.env.params), **kwargs)
    train_and_log(cfg, env, params, resolved)
    with open(os.path.join(run_dir, "config.yaml"), "w") as f:
        f.write(OmegaConf.to_yaml(OmegaConf.structured(cfg)))


def _greedy_reference(run_dir: str, env_id: str, kwargs: dict, algo: str, member: int):
    """``f64[T + 1]`` equity of one member over the whole test split, stepped here in a
    Python loop: the member's own network straight from ``params.msgpack`` (PQN: argmax of
    its Q-network; PQL: its tanh actor rescaled to the action box), observations normalized
    with its saved statistics as the NormalizeObservation wrapper does."""
    with open(os.path.join(run_dir, "params.msgpack"), "rb") as f:
        saved = serialization.msgpack_restore(f.read())
    params = jax.tree.map(lambda x: x[member], saved["params"])
    stats = (saved.get("normalizer") or {}).get("obs_stats")
    env, env_params = hordax.make(
        env_id, split="test", random_start=False, max_steps_in_episode=10**7, **kwargs
    )
    shape, space = env.observation_space(env_params).shape, env.action_space(env_params)
    if algo == "pqn":
        from hordax.agents.pqn import PQNConfig
        from hordax.agents.pqn import make_agent as make_pqn
        from hordax.agents.pqn.config import QNetworkConfig

        net = make_pqn(PQNConfig(network=QNetworkConfig(hidden_sizes=[16])), shape, space, 1).q
        policy = lambda o: jnp.argmax(net.apply(params, o[None])[0])  # noqa: E731
    else:
        from hordax.agents.pql import PQLConfig
        from hordax.agents.pql import make_agent as make_pql

        agent = make_pql(PQLConfig(hidden_sizes=[16]), shape, space)
        policy = lambda o: agent.to_env(agent.actor.apply(params["actor"], o[None]))[0]  # noqa: E731

    def act(o):
        if stats is not None:
            o = jnp.clip(
                (o - stats["mean"][member]) / jnp.sqrt(stats["var"][member] + 1e-8), -10, 10
            )
        return policy(o)

    act, step = jax.jit(act), jax.jit(env.step_env)
    obs, state = env.reset_env(jax.random.key(0), env_params)
    curve, done = [1.0], False
    while not done:
        obs, state, _, done, info = step(jax.random.key(0), state, act(obs), env_params)
        curve.append(1.0 + float(info["metrics"]["return"]))
    return np.asarray(curve)


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "algo,env_id,kwargs",
    [
        ("pqn", "CryptoTrading-v0", {"data": "btc_usd_1d"}),
        ("pql", "StockTrading-v0", {"data": "stocks"}),
    ],
)
@pytest.mark.slow
def test_backtest__pqn_and_pql_populations(tmp_path, algo, env_id, kwargs):
    """``hordax backtest`` of an ``agent=pqn`` / ``agent=pql`` population (it used to build
    a PPO agent and crash): every member's equity curve over the test split equals that
    member's greedy policy stepped independently, and the table names the algorithm."""
    from hordax.agents.pql import PQLConfig
    from hordax.agents.pqn import PQNConfig
    from hordax.agents.pqn.config import QNetworkConfig

    if algo == "pqn":
        acfg = PQNConfig(
            network=QNetworkConfig(hidden_sizes=[16]), num_minibatches=2, normalize_obs=True
        )
    else:
        acfg = PQLConfig(hidden_sizes=[16], batch_size=16, buffer_size=64, beta_av=1.0)
    run_dir = str(tmp_path / algo)
    _train_population(run_dir, acfg, env_id, kwargs)
    out = run_backtest(BacktestConfig(run_dir=run_dir, split="test"))
    rows = {r["run"]: r for r in out["rows"]}
    assert [rows[f"member_{i}"]["algorithm"] for i in range(2)] == [algo, algo]
    curves = _equity(out)
    for i in range(2):
        want = _greedy_reference(run_dir, env_id, kwargs, algo, i)
        assert len(want) == out["steps"] + 1
        np.testing.assert_allclose(curves[f"member_{i}"], want, rtol=0, atol=1e-6)
    assert np.isfinite(rows["rolling_selection"]["sharpe"])
