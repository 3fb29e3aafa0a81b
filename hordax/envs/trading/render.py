"""Small RGB charts of a trading state (host-side numpy)."""

from __future__ import annotations

import numpy as np

COLORS = np.array(
    [[230, 60, 60], [60, 120, 230], [60, 180, 90], [220, 170, 40], [160, 80, 200], [40, 190, 190]],
    np.uint8,
)


def chart(series: np.ndarray, bars: np.ndarray, height: int = 96, width: int = 160) -> np.ndarray:
    """``uint8[height, width, 3]``: lines of ``series f[W, M]`` (each scaled to its own range)
    in the left part and a bar per entry of ``bars f[B]`` (values in [0, 1]) on the right."""
    img = np.full((height, width, 3), 245, np.uint8)
    series = np.asarray(series, np.float64)
    if series.ndim == 1:
        series = series[:, None]
    plot_w = width - 8 * max(len(bars), 1) - 4
    w = series.shape[0]
    xs = np.linspace(0, plot_w - 1, w).astype(int)
    for m in range(series.shape[1]):
        s = series[:, m]
        s = np.where(np.isfinite(s), s, 0.0)
        lo, hi = s.min(), s.max()
        ys = ((s - lo) / (hi - lo) if hi > lo else np.full(w, 0.5)) * (height - 9) + 4
        img[height - 1 - ys.astype(int), xs] = COLORS[m % len(COLORS)]
    for b, v in enumerate(np.clip(np.nan_to_num(np.asarray(bars, np.float64)), 0.0, 1.0)):
        x0 = plot_w + 4 + 8 * b
        top = height - 1 - int(v * (height - 8))
        img[top:height, x0 : x0 + 6] = COLORS[b % len(COLORS)]
    return img
