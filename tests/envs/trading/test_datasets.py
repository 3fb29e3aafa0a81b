"""The vendored datasets load offline, pass the loader's validation and have the documented
shape, calendar and tickers."""

import numpy as np

from hordax.envs.trading import datasets


def test_load_sp500__20_stocks_1990_2022():
    d = datasets.load_sp500()
    assert d.values.shape == (8313, 20, 5) and d.close_only
    assert str(d.dates[0])[:10] == "1990-01-02" and str(d.dates[-1])[:10] == "2022-12-28"
    assert d.tickers[:3] == ("AAPL", "AMD", "BAC")
    assert np.all(d.close > 0) and np.all(np.diff(d.dates) > np.timedelta64(0))


def test_load_stocks__adjusted_ohlcv_common_calendar():
    """Four tickers on GOOG's calendar; adjustment removes AAPL's 2005 2:1 split jump."""
    raw = datasets.load_stocks(adjusted=False)
    adj = datasets.load_stocks()
    assert adj.tickers == ("AAPL", "IBM", "MSFT", "GOOG") and adj.values.shape == (2148, 4, 5)
    assert str(adj.dates[0])[:10] == "2004-08-19"
    jump = lambda d: np.abs(np.diff(np.log(d.close[:, 0]))).max()  # noqa: E731
    assert jump(raw) > np.log(1.9) > 0.3 > jump(adj)
    v = adj.values
    assert np.all(v[..., 1] >= v[..., 2]) and np.all(v[..., :4] > 0)


def test_load_btc_usd__hourly_without_missing_hours():
    d = datasets.load_btc_usd("1h")
    assert d.values.shape == (20111, 1, 5) and d.tickers == ("BTC-USD",)
    assert np.all(np.diff(d.dates) == np.timedelta64(3600, "s"))
    assert datasets.load_btc_usd("1d").values.shape == (1770, 1, 5)
