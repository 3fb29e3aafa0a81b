"""``hordax backtest RUN_DIR split=test``: members, ensembles and baselines on held-out data.

The run directory of a population run (``hordax train agent=ensemble ...``) is rebuilt from
``config.yaml`` and ``params.msgpack``; every member, the vote / weighted-average ensemble,
the rolling selection and the baselines then trade one deterministic episode over the whole
split (from its first row, ``random_start=False``, no time limit). Ensemble weights and the
first rolling member come from the members' scores on the validation split, never from the
split being tested. Baselines (:mod:`hordax.envs.trading.baselines`): ``buy_and_hold``
(the env's ``buy_and_hold_return`` metric, costless, from the same first row: equal weights
for the stock envs, ``max_position`` BTC for the crypto env), ``cash`` (flat) and, for the
multi-asset stock envs, ``equal_weight`` (rebalanced to 1/N every step) and ``min_variance``
(rebalanced every step to the long-only minimum-variance weights of the train split's
returns), both costless.
Equity curves are ``1 + info["metrics"]["return"]``: portfolio value over initial capital
(the crypto env: net assets ``cash + position * close`` over its ``initial_cash``, FinRL's
convention).

The table's ``validation_sharpe`` is given for members only: the ensemble's weights and the
rolling selection's first member were fitted on the validation episode, so a validation
score of those rows would be in-sample.

Outputs in ``out_dir`` (default ``RUN_DIR/backtest_<split>``): ``metrics.csv``,
``metrics.md``, ``equity.png`` (equity curves) and ``equity.csv`` (the curves).
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from hordax.envs.registry import make
from hordax.envs.trading import metrics, splits
from hordax.envs.trading.baselines import portfolio_baselines
from hordax.training import ensemble as ens_mod
from hordax.training.host.rundir import write_atomic

SPLITS = ("train", "validation", "test", "all")
#: The table's metric columns (:mod:`hordax.envs.trading.metrics`).
COLUMNS = metrics.NAMES


@dataclass
class BacktestConfig:
    """``hordax backtest`` options (hordax/configs/backtest.yaml)."""

    run_dir: str = ""
    """Directory of a finished population run (``hordax train agent=ensemble``)."""
    split: str = "test"
    """train | validation | test | all."""
    data: str = ""
    """Market data name to trade instead of the run's own (e.g. ``stocks``); '' = the run's."""
    out_dir: str = ""
    """Where to write the table and plot ('' = ``RUN_DIR/backtest_<split>``)."""
    periods_per_year: float = 0.0
    """Annualization factor (0 = the run's ``ensemble.periods_per_year``; if that is 0 too,
    inferred from the market data's dates, see ``ensemble.resolve_periods_per_year``)."""


def performance(curve: np.ndarray, periods_per_year: float) -> dict[str, float]:
    """Every metric of :mod:`hordax.envs.trading.metrics` (cumulative and annualized return,
    volatility, Sharpe, Sortino, max drawdown, Calmar, win and loss rate) of one equity curve
    ``f[T + 1]`` (``curve[0]`` = starting value > 0), as Python floats."""
    return {k: float(v) for k, v in metrics.summary(curve, periods_per_year).items()}


def validate_backtest(cfg: BacktestConfig) -> None:
    """The checks that need no run; ``ValueError`` naming the key (the run directory itself
    is checked when it is loaded)."""
    if cfg.split not in SPLITS:
        raise ValueError(f"split={cfg.split!r}: allowed values are {list(SPLITS)}")
    if not (cfg.periods_per_year >= 0 and math.isfinite(cfg.periods_per_year)):
        raise ValueError(
            f"periods_per_year={cfg.periods_per_year}: must be > 0, or 0 for the run's own"
        )
    if not cfg.run_dir:
        raise ValueError("run_dir is required: hordax backtest RUN_DIR split=test")


def run_backtest(cfg: BacktestConfig) -> dict:
    """Run the backtest and write its files; return a summary dict.

    Raises ``ValueError`` (clear message) for a missing run dir, a run that is not a
    population, an env without splits or returns, or an unknown split.
    """
    validate_backtest(cfg)
    run = ens_mod.load_run(cfg.run_dir)
    tc = run.cfg
    if not splits.supports_split(tc.env.id):
        raise ValueError(
            f"env={tc.env.id!r}: backtest needs an env with split= and random_start= "
            "(the trading envs: StockTrading-v0, StockPortfolio-v0, CryptoTrading-v0)"
        )
    if cfg.data:
        before = _obs_shape(tc)
        tc.env.kwargs = {**dict(tc.env.kwargs), "data": cfg.data}
        try:
            after = _obs_shape(tc)
        except ValueError as e:  # e.g. the crypto env takes one asset: name the key
            msg = str(e)
            prefix = f"data={cfg.data!r}: "
            raise ValueError(msg if msg.startswith(prefix) else prefix + msg) from None
        if after != before:
            raise ValueError(
                f"data={cfg.data!r}: observations have shape {after}, the members were trained"
                f" on {before} (a different number of assets)"
            )
    ens = tc.ensemble
    if cfg.periods_per_year > 0:
        ens.periods_per_year = float(cfg.periods_per_year)

    val = ens_mod.evaluate_run(tc, run.members, "validation", ens)
    res = ens_mod.evaluate_run(tc, run.members, cfg.split, ens, val["weights"], val["initial"])
    ppy = float(res["periods_per_year"])  # the given value, or inferred from the data's dates
    if res["kind"] != "return":
        raise ValueError(
            f"env={tc.env.id!r} reports no info['metrics']['return']; the backtest table needs"
            " returns (StockTrading-v0, StockPortfolio-v0 and CryptoTrading-v0 have them)"
        )
    k = run.members.size
    names = ens_mod.run_names(k, res["discrete"])
    check_whole_split(res["alive"], names, cfg.split)
    curves = {n: res["curve"][:, i] for i, n in enumerate(names)}
    if "buy_and_hold_return" in res["metrics"]:
        bh = 1.0 + res["metrics"]["buy_and_hold_return"][:, 0].astype(np.float64)
        alive = res["alive"][:, 0]
        full = np.ones(bh.shape[0] + 1)
        for t in range(bh.shape[0]):
            full[t + 1] = bh[t] if alive[t] else full[t]
        curves["buy_and_hold"] = full
    env = (tc.env.id, dict(tc.env.kwargs), dict(tc.env.params))
    base, mv_weights = portfolio_baselines(*env, cfg.split, res["curve"].shape[0])
    curves.update(base)
    curves["cash"] = np.ones(res["curve"].shape[0])

    algos = ens_mod.member_algorithms(tc, run.members)
    rows = []
    for i, (name, curve) in enumerate(curves.items()):
        row = {"run": name, "algorithm": algos[i] if i < k else "", **performance(curve, ppy)}
        row["validation_weight"] = float(val["weights"][i]) if i < k else math.nan
        # Members only: the ensemble's weights and the rolling selection's first member were
        # fitted on the validation episode, so their score there would be in-sample.
        row["validation_sharpe"] = float(val["scores"]["sharpe"][i]) if i < k else math.nan
        row["turnover"] = math.nan  # mean traded value / portfolio value per step
        if "turnover" in res["metrics"] and i < k + 2:
            alive = res["alive"][:, i].astype(bool)
            row["turnover"] = float(np.mean(res["metrics"]["turnover"][:, i][alive]))
        rows.append(row)

    out_dir = cfg.out_dir or os.path.join(cfg.run_dir, f"backtest_{cfg.split}")
    os.makedirs(out_dir, exist_ok=True)
    write_csv(os.path.join(out_dir, "metrics.csv"), rows)
    write_atomic(os.path.join(out_dir, "metrics.md"), markdown_table(rows) + "\n")
    write_curves(os.path.join(out_dir, "equity.csv"), curves)
    counts = {a: algos.count(a) for a in dict.fromkeys(algos)}
    who = " + ".join(f"{n} {a.upper()}" for a, n in counts.items())
    title = f"{tc.env.id} {cfg.split} split ({res['num_steps']} steps), {who} members"
    plot_curves(os.path.join(out_dir, "equity.png"), curves, title)
    return {
        "run_dir": cfg.run_dir,
        "env": tc.env.id,
        "split": cfg.split,
        "steps": res["num_steps"],
        "periods_per_year": ppy,
        "weights": [float(w) for w in val["weights"]],
        "initial_member": val["initial"],
        "rolling_choices": _segments(res["choice"]),
        "min_variance_weights": None if mv_weights is None else mv_weights.tolist(),
        "out_dir": out_dir,
        "rows": rows,
    }


def check_whole_split(alive: np.ndarray, names: list[str], split: str) -> None:
    """``ValueError`` if a run's episode ended before the split's last row (``alive
    bool[T, R]``): its flat tail would be scored, and annualized, as steps it never took."""
    steps = alive.sum(axis=0)
    short = [(n, int(s)) for n, s in zip(names, steps, strict=True) if s < alive.shape[0]]
    if short:
        name, taken = short[0]
        raise ValueError(
            f"split={split!r}: run {name!r} stopped after {taken} of {alive.shape[0]} steps"
            " (an episode end before the split's last row); the backtest scores whole splits"
        )


def _obs_shape(tc: Any) -> tuple[int, ...]:
    env, params = make(tc.env.id, params=dict(tc.env.params), **dict(tc.env.kwargs))
    return tuple(env.observation_space(params).shape)


def _segments(choice: np.ndarray) -> list[list[int]]:
    """``[[first_step, member], ...]`` where the rolling selection changes member."""
    out: list[list[int]] = []
    for t, c in enumerate(np.asarray(choice).tolist()):
        if not out or out[-1][1] != c:
            out.append([t, int(c)])
    return out


def write_csv(path: str, rows: list[dict]) -> None:
    """``rows`` as a CSV, whole or not at all (a rerun never leaves a half-written table)."""
    f = io.StringIO(newline="")
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    write_atomic(path, f.getvalue())


def write_curves(path: str, curves: dict[str, np.ndarray]) -> None:
    """``step, <run>...`` equity curves as a CSV, whole or not at all."""
    names = list(curves)
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(["step", *names])
    for t in range(len(curves[names[0]])):
        w.writerow([t, *(f"{curves[n][t]:.10g}" for n in names)])
    write_atomic(path, f.getvalue())


def _fmt(v: float, pct: bool) -> str:
    if isinstance(v, float) and math.isnan(v):
        return ""
    return f"{100 * v:.2f} %" if pct else f"{v:.3f}"


def markdown_table(rows: list[dict]) -> str:
    head = [
        "run",
        "algorithm",
        "cumulative return",
        "annualized return",
        "annualized volatility",
        "Sharpe",
        "Sortino",
        "max drawdown",
        "Calmar",
        "win / loss steps",
        "turnover / step",
        "validation weight",
        "validation Sharpe (members)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r["run"],
            r.get("algorithm", ""),
            _fmt(r["cumulative_return"], True),
            _fmt(r["annualized_return"], True),
            _fmt(r["annualized_volatility"], True),
            _fmt(r["sharpe"], False),
            _fmt(r["sortino"], False),
            _fmt(r["max_drawdown"], True),
            _fmt(r["calmar"], False),
            f"{_fmt(r['win_rate'], True)} / {_fmt(r['loss_rate'], True)}",
            _fmt(r["turnover"], True),
            _fmt(r["validation_weight"], False),
            _fmt(r["validation_sharpe"], False),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_curves(path: str, curves: dict[str, np.ndarray], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    for name, curve in curves.items():
        if name.startswith("member_"):
            style = {"lw": 0.9, "alpha": 0.6}
        elif name in ("buy_and_hold", "cash"):
            style = {"lw": 1.2, "ls": "--"}
        else:
            style = {"lw": 2.0}
        ax.plot(np.arange(len(curve)), curve, label=name, **style)
    ax.set_xlabel("step (one bar of the data: a trading day, an hour for btc_usd_1h)")
    ax.set_ylabel("portfolio value / initial")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
