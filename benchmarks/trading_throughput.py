"""Trading env throughput: hordax at 1 and 2,048 envs (both jitted) vs FinRL's own env.

The FinRL contest paper reports a 1,746x sampling speed-up with 2,048 parallel envs over one
env. This script measures, in one run, random-action env steps per second of

- ``StockTrading-v0`` (S&P 500, 20 stocks, train split) and ``CryptoTrading-v0`` (BTC-USD
  hourly) with ``jit(scan(vmap(step)))`` at each ``--num-envs``;
- the ``finrl`` package's own ``StockTradingEnv`` (single process, NumPy/pandas) on the same
  prices and indicators, if ``finrl`` is importable (``pip install --no-deps finrl==0.3.7``;
  ``stable_baselines3`` is stubbed if absent, as in tests/envs/trading).

Usage: ``python benchmarks/trading_throughput.py [--num-envs 1 2048] [--steps 1000]
[--out results.json]``. Prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import platform
import sys
import time
import types

import jax
import numpy as np

import hordax
from hordax import strict_json


def rollout_fn(env, params, num_envs: int, num_steps: int):
    space = env.action_space(params)

    def run(key):
        k_reset, k_run = jax.random.split(key)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(k_reset, num_envs), params
        )

        def body(state, k):
            k_act, k_step = jax.random.split(k)
            actions = jax.vmap(space.sample)(jax.random.split(k_act, num_envs))
            _, state, reward, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(k_step, num_envs), state, actions, params
            )
            return state, reward.sum()

        _, rewards = jax.lax.scan(body, state, jax.random.split(k_run, num_steps))
        return rewards.sum()

    return jax.jit(run)


def time_hordax(env_id: str, num_envs: int, num_steps: int, repeats: int = 3) -> dict:
    env, params = hordax.make(env_id)
    run = rollout_fn(env, params, num_envs, num_steps)
    t0 = time.perf_counter()
    jax.block_until_ready(run(jax.random.key(0)))
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for r in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(run(jax.random.key(r + 1)))
        best = min(best, time.perf_counter() - t0)
    return {
        "env": env_id,
        "impl": "hordax jit(scan(vmap(step)))",
        "num_envs": num_envs,
        "steps_per_env": num_steps,
        "compile_s": round(compile_s, 2),
        "seconds": round(best, 4),
        "env_steps_per_s": num_envs * num_steps / best,
    }


def _finrl_env_class():
    if importlib.util.find_spec("finrl") is None:
        return None
    if importlib.util.find_spec("stable_baselines3") is None:
        vec_env = types.ModuleType("stable_baselines3.common.vec_env")
        vec_env.DummyVecEnv = object
        sys.modules.setdefault("stable_baselines3", types.ModuleType("stable_baselines3"))
        sys.modules.setdefault("stable_baselines3.common", types.ModuleType("sb3.common"))
        sys.modules.setdefault("stable_baselines3.common.vec_env", vec_env)
    root = pathlib.Path(importlib.util.find_spec("finrl").submodule_search_locations[0])
    path = root / "meta" / "env_stock_trading" / "env_stocktrading.py"
    spec = importlib.util.spec_from_file_location("_finrl_env_stocktrading", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.StockTradingEnv


def time_finrl(num_steps: int) -> dict | None:
    """FinRL's StockTradingEnv on the same S&P 500 train-split prices and 8 indicators."""
    cls = _finrl_env_class()
    if cls is None:
        return None
    import pandas as pd

    from hordax.envs.trading import datasets
    from hordax.envs.trading.indicators import INDICATORS, compute_indicators, turbulence

    data = datasets.load_sp500()
    days = 600
    sub = data.slice(300, 300 + days)
    ind = compute_indicators(data)[300 : 300 + days]
    turb = turbulence(data.close)[300 : 300 + days]
    n = sub.num_assets
    frame = {
        "date": np.repeat(np.arange(days), n),
        "tic": np.tile(np.array(sub.tickers), days),
        "close": sub.close.reshape(-1),
        "turbulence": np.repeat(turb, n),
    }
    for k, name in enumerate(INDICATORS):
        frame[name] = ind[:, :, k].reshape(-1)
    df = pd.DataFrame(frame)
    df.index = df["date"].factorize()[0]
    env = cls(
        df=df,
        stock_dim=n,
        hmax=100,
        initial_amount=1_000_000,
        num_stock_shares=[0] * n,
        buy_cost_pct=[1e-3] * n,
        sell_cost_pct=[1e-3] * n,
        reward_scaling=1e-4,
        state_space=1 + 2 * n + len(INDICATORS) * n,
        action_space=n,
        tech_indicator_list=list(INDICATORS),
        turbulence_threshold=None,
        print_verbosity=10**9,
    )
    rng = np.random.default_rng(0)
    env.reset()
    t0 = time.perf_counter()
    for _ in range(num_steps):
        _, _, terminal, _, _ = env.step(rng.uniform(-1, 1, n).astype(np.float32))
        if terminal:
            env.reset()
    seconds = time.perf_counter() - t0
    return {
        "env": "StockTrading (finrl 0.3.7 StockTradingEnv)",
        "impl": "finrl numpy/pandas, single process",
        "num_envs": 1,
        "steps_per_env": num_steps,
        "seconds": round(seconds, 4),
        "env_steps_per_s": num_steps / seconds,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", type=int, nargs="+", default=[1, 2048])
    ap.add_argument("--steps", type=int, default=1000, help="scan length per env")
    ap.add_argument("--finrl-steps", type=int, default=2000)
    ap.add_argument("--envs", nargs="+", default=["StockTrading-v0", "CryptoTrading-v0"])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    device = f"{jax.devices()[0].platform}:{jax.devices()[0].device_kind}"
    header = {"jax": jax.__version__, "device": device, "machine": platform.processor()}
    print(strict_json.dumps(header), flush=True)
    results = []
    for env_id in args.envs:
        rows = [time_hordax(env_id, b, args.steps) for b in args.num_envs]
        for r in rows:
            r["speedup_vs_1_env"] = r["env_steps_per_s"] / rows[0]["env_steps_per_s"]
            print(strict_json.dumps(r), flush=True)
        results += rows
    finrl = time_finrl(args.finrl_steps)
    if finrl is not None:
        stock = [r for r in results if r["env"] == "StockTrading-v0"]
        for r in stock:
            r["speedup_vs_finrl"] = r["env_steps_per_s"] / finrl["env_steps_per_s"]
        print(strict_json.dumps(finrl), flush=True)
        print(
            strict_json.dumps(
                {"speedup_vs_finrl": {r["num_envs"]: r["speedup_vs_finrl"] for r in stock}}
            )
        )
        results.append(finrl)
    if args.out:
        pathlib.Path(args.out).write_text(
            strict_json.dumps({"header": header, "results": results}, indent=1)
        )


if __name__ == "__main__":
    main()
