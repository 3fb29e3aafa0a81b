"""Performance metrics of equity curves: one implementation for NumPy and for JAX.

Every function takes ``curve``: ``[..., T + 1]`` values (the start, then the value after each
step; > 0), reduces over the last axis, and takes ``xp`` = ``numpy`` (default; float64 on
the host, used by ``hordax backtest``) or ``jax.numpy`` (float32, jittable and vmappable,
e.g. over envs or members inside a training program). Per-step returns are
``r_t = curve[t] / curve[t - 1] - 1``; ``P`` is the number of periods per year (252 for daily
stock bars, 8,766 for hourly crypto bars).

- ``cumulative_return = curve[-1] / curve[0] - 1``;
- ``annualized_return = (1 + cumulative) ** (P / T) - 1``;
- ``annualized_volatility = std(r, ddof=1) sqrt(P)``;
- ``sharpe = mean(r) / std(r, ddof=1) sqrt(P)`` (risk-free rate 0);
- ``sortino = mean(r) / sqrt(mean(min(r, 0) ** 2)) sqrt(P)`` (downside deviation over all
  steps, target 0);
- ``max_drawdown = max_t 1 - curve[t] / max_{s <= t} curve[s]`` (a positive fraction);
- ``calmar = annualized_return / max_drawdown``;
- ``win_rate`` / ``loss_rate``: the fraction of steps whose return is above / below
  ``+-FLAT`` (flat steps, e.g. holding cash, count as neither).

A ratio whose denominator is below :data:`FLAT` (a flat curve: float32 portfolio values of
about 1e6 carry rounding noise of about 1e-7 per step) is ``inf`` when its numerator is above
:data:`FLAT` (a curve that never loses has an infinite Sortino and Calmar) and 0 otherwise
(rounding noise on a flat curve is not a return).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Per-step return size below which a step, or a deviation, counts as flat.
FLAT = 1e-6

NAMES = (
    "cumulative_return",
    "annualized_return",
    "annualized_volatility",
    "sharpe",
    "sortino",
    "max_drawdown",
    "calmar",
    "win_rate",
    "loss_rate",
)


def step_returns(curve: Any, xp: Any = np) -> Any:
    """``[..., T]`` per-step returns."""
    curve = xp.asarray(curve)
    return curve[..., 1:] / curve[..., :-1] - 1.0


def _ratio(num: Any, den: Any, xp: Any) -> Any:
    safe = xp.where(den > FLAT, den, 1.0)
    return xp.where(den > FLAT, num / safe, xp.where(num > FLAT, xp.inf, 0.0))


def cumulative_return(curve: Any, xp: Any = np) -> Any:
    curve = xp.asarray(curve)
    return curve[..., -1] / curve[..., 0] - 1.0


def annualized_return(curve: Any, periods_per_year: float, xp: Any = np) -> Any:
    steps = xp.asarray(curve).shape[-1] - 1
    return (1.0 + cumulative_return(curve, xp)) ** (periods_per_year / steps) - 1.0


def _std(r: Any, xp: Any) -> Any:
    n = r.shape[-1]
    if n < 2:
        return xp.zeros(r.shape[:-1])
    return xp.std(r, axis=-1, ddof=1)


def annualized_volatility(curve: Any, periods_per_year: float, xp: Any = np) -> Any:
    return _std(step_returns(curve, xp), xp) * xp.sqrt(periods_per_year)


def sharpe_of_steps(r: Any, periods_per_year: float = 1.0, xp: Any = np) -> Any:
    """Sharpe ratio of per-step returns ``r[..., T]`` (or per-step rewards): ``mean / std``
    (``ddof=1``) times ``sqrt(periods_per_year)``, with the flat rule above. The one Sharpe
    of hordax: :func:`sharpe` of a curve, the ensemble's validation scores and its rolling
    selection (``periods_per_year=1``: not annualized) all call it."""
    r = xp.asarray(r)
    return _ratio(r.mean(-1), _std(r, xp), xp) * xp.sqrt(periods_per_year)


def sharpe(curve: Any, periods_per_year: float, xp: Any = np) -> Any:
    return sharpe_of_steps(step_returns(curve, xp), periods_per_year, xp)


def sortino(curve: Any, periods_per_year: float, xp: Any = np) -> Any:
    r = step_returns(curve, xp)
    downside = xp.sqrt(xp.mean(xp.minimum(r, 0.0) ** 2, axis=-1))
    return _ratio(r.mean(-1), downside, xp) * xp.sqrt(periods_per_year)


def max_drawdown(curve: Any, xp: Any = np) -> Any:
    curve = xp.asarray(curve)
    if xp is np:
        peak = np.maximum.accumulate(curve, axis=-1)
    else:
        import jax

        peak = jax.lax.cummax(curve, axis=curve.ndim - 1)
    return xp.max(1.0 - curve / peak, axis=-1)


def calmar(curve: Any, periods_per_year: float, xp: Any = np) -> Any:
    return _ratio(annualized_return(curve, periods_per_year, xp), max_drawdown(curve, xp), xp)


def win_rate(curve: Any, xp: Any = np) -> Any:
    return xp.mean(step_returns(curve, xp) > FLAT, axis=-1)


def loss_rate(curve: Any, xp: Any = np) -> Any:
    return xp.mean(step_returns(curve, xp) < -FLAT, axis=-1)


def summary(curve: Any, periods_per_year: float, xp: Any = np) -> dict[str, Any]:
    """Every metric in :data:`NAMES` of ``curve`` (``[..., T + 1]``, ``T >= 1``)."""
    if xp.asarray(curve).shape[-1] < 2:
        raise ValueError(f"an equity curve needs at least 2 points, got {np.shape(curve)}")
    if xp is np:
        curve = np.asarray(curve, np.float64)
    p = periods_per_year
    out = {
        "cumulative_return": cumulative_return(curve, xp),
        "annualized_return": annualized_return(curve, p, xp),
        "annualized_volatility": annualized_volatility(curve, p, xp),
        "sharpe": sharpe(curve, p, xp),
        "sortino": sortino(curve, p, xp),
        "max_drawdown": max_drawdown(curve, xp),
        "calmar": calmar(curve, p, xp),
        "win_rate": win_rate(curve, xp),
        "loss_rate": loss_rate(curve, xp),
    }
    return {k: out[k] for k in NAMES}
