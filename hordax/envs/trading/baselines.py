"""Portfolio baselines of the multi-asset stock envs, over a split's full-split episode:
``equal_weight`` (rebalanced to 1/N every step) and ``min_variance`` (rebalanced every step
to the long-only minimum-variance weights of the train split's returns), both costless."""

from __future__ import annotations

import numpy as np

from hordax.envs.trading.splits import split_params


def rebalanced_curve(close: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``f64[T]`` value of a costless portfolio rebalanced to ``weights[N]`` before every
    step: ``curve[t + 1] = curve[t] * sum_i w_i close[t + 1, i] / close[t, i]``, for
    ``close[T, N]`` and ``curve[0] = 1``."""
    close = np.asarray(close, np.float64)
    rel = close[1:] / close[:-1]
    return np.concatenate([[1.0], np.cumprod(rel @ np.asarray(weights, np.float64))])


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``v[N]`` onto ``{w >= 0, sum w = 1}`` (sort-based)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    rho = np.nonzero(u - css / np.arange(1, v.size + 1) > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1.0), 0.0)


def min_variance_weights(returns: np.ndarray, iterations: int = 5000) -> np.ndarray:
    """Long-only minimum-variance weights ``w[N]`` (``min w' S w`` over the simplex, ``S``
    the sample covariance of ``returns[T, N]``), by projected gradient descent with step
    ``1 / (2 * largest eigenvalue of S)``."""
    cov = np.cov(np.asarray(returns, np.float64), rowvar=False)
    step = 1.0 / (2.0 * np.linalg.eigvalsh(cov)[-1])
    w = np.full(cov.shape[0], 1.0 / cov.shape[0])
    for _ in range(iterations):
        w = project_simplex(w - step * 2.0 * cov @ w)
    return w


def portfolio_baselines(
    env_id: str, kwargs: dict, params: dict, split: str, length: int
) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """``equal_weight`` and ``min_variance`` curves (``f64[length]``) over ``split``'s episode
    rows, both costless and rebalanced every step; the minimum-variance weights come from the
    train split's per-step returns only (no look-ahead into the tested period). Single-asset
    data (the crypto env) has neither: ``({}, None)``."""
    env_params, lo = split_params(env_id, kwargs, params, split)
    close = np.asarray(env_params.close, np.float64)[lo : lo + length]
    if close.shape[1] < 2:
        return {}, None
    train, t_lo = split_params(env_id, kwargs, params, "train")
    t_close = np.asarray(train.close, np.float64)[t_lo : int(train.end)]
    w = min_variance_weights(t_close[1:] / t_close[:-1] - 1.0)
    n = close.shape[1]
    curves = {
        "equal_weight": rebalanced_curve(close, np.full(n, 1.0 / n)),
        "min_variance": rebalanced_curve(close, w),
    }
    return curves, w
