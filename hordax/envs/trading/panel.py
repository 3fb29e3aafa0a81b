"""Host-side preparation of the arrays an env keeps in its params (all causal per row).

:func:`stock_panel` turns a :class:`MarketData` into float32 arrays ``close [T, N]``,
``features [T, N, 8]`` (normalized FinRL indicators), ``turbulence [T]``, ``sigma [T, N]``
(20-row std of log returns) and ``adv [T, N]`` (20-row mean volume); :func:`resolve_split`
maps a split name to row ranges; :data:`DEFAULT_SPLITS` holds the date splits of the
shipped datasets.
"""

from __future__ import annotations

import functools

import numpy as np

from hordax.envs.trading import datasets
from hordax.envs.trading.data import MarketData, chronological_split, split_by_dates
from hordax.envs.trading.indicators import (
    compute_indicators,
    normalize_indicators,
    rolling_mean,
    rolling_std,
    turbulence,
)

#: (train_end, validation_end) per shipped dataset; synthetic/custom data: 60/20/20 %.
DEFAULT_SPLITS = {
    "sp500": ("2016-01-01", "2019-01-01"),
    "stocks": ("2010-07-01", "2011-10-01"),
    "btc_usd_1h": ("2018-10-01", "2019-03-01"),
}
WARMUP = 60  # rows before a split's first episode start (the 60-row SMA fills)
SPLIT_NAMES = ("train", "validation", "test", "all")


def load_named(name: str) -> MarketData:
    """A shipped dataset by name: ``"sp500"``, ``"stocks"``, ``"btc_usd_1h"``, ``"btc_usd_1d"``."""
    loaders = {
        "sp500": datasets.load_sp500,
        "stocks": datasets.load_stocks,
        "btc_usd_1h": lambda: datasets.load_btc_usd("1h"),
        "btc_usd_1d": lambda: datasets.load_btc_usd("1d"),
    }
    if name not in loaders:
        raise ValueError(f"data={name!r}: must be one of {sorted(loaders)} or a MarketData")
    return loaders[name]()


def resolve_split(data: MarketData, name: str | None, split: str) -> tuple[int, int]:
    """``(start, stop)`` rows of ``split`` (``"all"``: the whole panel)."""
    if split not in SPLIT_NAMES:
        raise ValueError(f"split={split!r}: must be one of {SPLIT_NAMES}")
    if split == "all":
        return 0, data.num_steps
    if name in DEFAULT_SPLITS:
        ranges = split_by_dates(data.dates, *DEFAULT_SPLITS[name])
    else:
        ranges = chronological_split(data.num_steps)
    return ranges[split]


def stock_panel(data: MarketData, turbulence_window: int = 252) -> dict[str, np.ndarray]:
    """The per-row arrays of the stock envs (float32, each row uses rows ``<= t`` only)."""
    close = data.close
    log_ret = np.diff(np.log(close), axis=0, prepend=np.log(close[:1]))
    turb = turbulence(close, turbulence_window) if data.num_assets > 1 else np.zeros(data.num_steps)
    return {
        "close": close.astype(np.float32),
        "features": normalize_indicators(compute_indicators(data), close),
        "turbulence": turb.astype(np.float32),
        "sigma": rolling_std(log_ret, 20).astype(np.float32),
        "adv": rolling_mean(data.feature("volume"), 20).astype(np.float32),
    }


@functools.cache
def named_stock_panel(name: str) -> dict[str, np.ndarray]:
    """:func:`stock_panel` of a shipped dataset, computed once per process."""
    return stock_panel(load_named(name))
