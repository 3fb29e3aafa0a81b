"""FinRL's technical indicators and turbulence index, causal, on host numpy arrays.

Every function maps ``[T, N]`` (or ``[T]``) series to arrays of the same leading shape and
value ``t`` uses rows ``<= t`` only (no look-ahead; ``tests/envs/trading`` perturbs future
rows and checks that past values do not move). Definitions (FinRL computes them with
``stockstats``; these are independent implementations of the textbook formulas, so early
rows, before a window fills, can differ from stockstats' warm-up conventions):

- ``macd``: ``EMA12(close) - EMA26(close)``, EMA ``e_t = a x_t + (1 - a) e_{t-1}``,
  ``a = 2 / (span + 1)``, ``e_0 = x_0``.
- ``boll_ub`` / ``boll_lb``: ``SMA20(close) +- 2 * STD20(close)`` (sample std, ddof 1; 0 on
  the first row).
- ``rsi_30``: ``100 * G / (G + L)`` with ``G, L`` Wilder averages (``a = 1/30``) of the
  gains and losses of the close; 50 when both are 0.
- ``cci_30``: ``(TP - SMA30(TP)) / (0.015 * MAD30(TP))``, ``TP = (high + low + close) / 3``,
  MAD the mean absolute deviation from the window mean; 0 when MAD is 0.
- ``dx_30``: ``100 * |DI+ - DI-| / (DI+ + DI-)``, ``DI+- = 100 * W(DM+-) / W(TR)`` with Wilder
  averages ``W`` (``a = 1/30``) of directional movement and true range; 0 when undefined.
- ``close_30_sma`` / ``close_60_sma``: rolling means (over the rows available at the start).
- turbulence: ``(r_t - mean(R)) pinv(cov(R)) (r_t - mean(R))^T`` with ``r_t`` the simple
  returns of all assets at ``t`` and ``R`` the ``window`` (252) returns before ``t``; 0 while
  fewer than ``window`` past returns exist.
"""

from __future__ import annotations

import numpy as np

from hordax.envs.trading.data import MarketData

INDICATORS = (
    "macd",
    "boll_ub",
    "boll_lb",
    "rsi_30",
    "cci_30",
    "dx_30",
    "close_30_sma",
    "close_60_sma",
)


def ema(x: np.ndarray, alpha: float) -> np.ndarray:
    """Recursive exponential average along axis 0, seeded with the first row."""
    out = np.empty_like(x, dtype=np.float64)
    out[0] = x[0]
    for t in range(1, len(x)):
        out[t] = alpha * x[t] + (1 - alpha) * out[t - 1]
    return out


def _windows(x: np.ndarray, window: int) -> np.ndarray:
    """``[T, ..., window]`` trailing windows, NaN-padded before the first row."""
    pad = np.full((window - 1, *x.shape[1:]), np.nan)
    return np.lib.stride_tricks.sliding_window_view(np.concatenate([pad, x]), window, axis=0)


def rolling_mean(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over the last ``window`` rows (fewer at the start)."""
    c = np.cumsum(np.concatenate([np.zeros((1, *x.shape[1:])), x]), axis=0)
    t = np.arange(1, len(x) + 1)
    lo = np.maximum(t - window, 0)
    n = (t - lo).reshape(-1, *([1] * (x.ndim - 1)))
    return (c[t] - c[lo]) / n


def rolling_std(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing sample standard deviation (ddof 1; 0 where only one row is available)."""
    w = _windows(x, window)
    n = np.sum(~np.isnan(w), axis=-1)
    var = np.nansum((w - np.nanmean(w, axis=-1, keepdims=True)) ** 2, axis=-1)
    return np.sqrt(np.where(n > 1, var / np.maximum(n - 1, 1), 0.0))


def macd(close: np.ndarray) -> np.ndarray:
    return ema(close, 2 / 13) - ema(close, 2 / 27)


def bollinger(close: np.ndarray, window: int = 20, k: float = 2.0) -> tuple[np.ndarray, ...]:
    mid, sd = rolling_mean(close, window), rolling_std(close, window)
    return mid + k * sd, mid - k * sd


def rsi(close: np.ndarray, window: int = 30) -> np.ndarray:
    d = np.diff(close, axis=0, prepend=close[:1])
    g = ema(np.maximum(d, 0.0), 1 / window)
    lo = ema(np.maximum(-d, 0.0), 1 / window)
    den = g + lo
    return np.where(den > 0, 100 * g / np.where(den > 0, den, 1.0), 50.0)


def cci(high: np.ndarray, low: np.ndarray, close: np.ndarray, window: int = 30) -> np.ndarray:
    tp = (high + low + close) / 3
    w = _windows(tp, window)
    mean = np.nanmean(w, axis=-1)
    mad = np.nanmean(np.abs(w - mean[..., None]), axis=-1)
    ok = mad > 1e-12 * np.abs(mean)
    return np.where(ok, (tp - mean) / (0.015 * np.where(ok, mad, 1.0)), 0.0)


def dx(high: np.ndarray, low: np.ndarray, close: np.ndarray, window: int = 30) -> np.ndarray:
    up = np.diff(high, axis=0, prepend=high[:1])
    down = -np.diff(low, axis=0, prepend=low[:1])
    dm_p = np.where((up > down) & (up > 0), up, 0.0)
    dm_m = np.where((down > up) & (down > 0), down, 0.0)
    prev_close = np.concatenate([close[:1], close[:-1]])
    tr = np.maximum(high - low, np.maximum(np.abs(high - prev_close), np.abs(low - prev_close)))
    a = 1 / window
    s_tr = ema(tr, a)
    safe_tr = np.where(s_tr > 0, s_tr, 1.0)
    di_p = np.where(s_tr > 0, 100 * ema(dm_p, a) / safe_tr, 0.0)
    di_m = np.where(s_tr > 0, 100 * ema(dm_m, a) / safe_tr, 0.0)
    den = di_p + di_m
    return np.where(den > 0, 100 * np.abs(di_p - di_m) / np.where(den > 0, den, 1.0), 0.0)


def compute_indicators(data: MarketData) -> np.ndarray:
    """``f64[T, N, 8]`` raw indicators in :data:`INDICATORS` order."""
    h, lo, c = data.feature("high"), data.feature("low"), data.close
    ub, lb = bollinger(c)
    cols = [
        macd(c),
        ub,
        lb,
        rsi(c),
        cci(h, lo, c),
        dx(h, lo, c),
        rolling_mean(c, 30),
        rolling_mean(c, 60),
    ]
    return np.stack(cols, axis=-1)


def normalize_indicators(indicators: np.ndarray, close: np.ndarray) -> np.ndarray:
    """Scale-free ``f32[T, N, 8]`` for observations (each row still uses rows ``<= t``).

    Price-valued indicators become relative to the close (``macd / close``,
    ``boll_ub / close - 1``, ...), oscillators are divided by 100; clipped to ``[-10, 10]``.
    """
    c = close[..., None]
    rel = np.array([1, 1, 1, 0, 0, 0, 1, 1], bool)  # price-valued columns
    shift = np.array([0, 1, 1, 0, 0, 0, 1, 1], np.float64)
    out = np.where(rel, indicators / c - shift, indicators / 100.0)
    return np.clip(out, -10, 10).astype(np.float32)


def turbulence(close: np.ndarray, window: int = 252) -> np.ndarray:
    """``f64[T]`` Mahalanobis turbulence of each day's returns against the past ``window``.

    Window means and covariances come from cumulative sums (one batched ``pinv``), the same
    numbers as ``np.cov`` of each window up to rounding.
    """
    T = len(close)
    out = np.zeros(T)
    if window + 1 >= T:
        return out
    r = close[1:] / close[:-1] - 1.0  # r[t-1] = return at t
    s1 = np.concatenate([np.zeros((1, r.shape[1])), np.cumsum(r, axis=0)])
    s2 = np.concatenate(
        [np.zeros((1, r.shape[1], r.shape[1])), np.cumsum(r[:, :, None] * r[:, None, :], axis=0)]
    )
    t = np.arange(window + 1, T)
    a, b = t - 1 - window, t - 1  # history rows r[a:b]
    mean = (s1[b] - s1[a]) / window
    cov = (s2[b] - s2[a] - window * mean[:, :, None] * mean[:, None, :]) / (window - 1)
    diff = r[t - 1] - mean
    val = np.einsum("ti,tij,tj->t", diff, np.linalg.pinv(cov, hermitian=True), diff)
    out[window + 1 :] = np.maximum(val, 0.0)
    return out
