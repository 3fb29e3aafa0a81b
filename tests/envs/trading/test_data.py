"""Market data layer: CSV loading, validation errors and repairs, splits, synthetic data,
indicators against per-element reference loops, and no look-ahead."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from hordax.envs.trading import data as md
from hordax.envs.trading import indicators as ind

HEADER = "date,ticker,open,high,low,close,volume\n"


def _write(tmp_path, text, name="x.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _rows(ticker, dates, base=10.0):
    return "".join(
        f"{d},{ticker},{base + i},{base + i + 1},{base + i - 1},{base + i + 0.5},{100 + i}\n"
        for i, d in enumerate(dates)
    )


DATES = ["2020-01-02", "2020-01-03", "2020-01-06", "2020-01-07"]


def test_load_ohlcv_csv__roundtrip_of_synthetic_panel(tmp_path):
    """A synthetic panel written as gzip CSV loads back to the same dates/tickers/values."""
    data = md.synthetic_market(3, num_steps=40, num_assets=3)
    path = tmp_path / "syn.csv.gz"
    md.to_long_csv(data, path)
    back = md.load_ohlcv_csv(path)
    assert back.tickers == data.tickers
    np.testing.assert_array_equal(back.dates, data.dates)
    np.testing.assert_allclose(back.values, data.values, rtol=1e-9)


def test_load_ohlcv_csv__aligns_calendars_to_common_range(tmp_path):
    """Tickers starting/ending on different dates are cut to the common range, in order."""
    text = HEADER + _rows("B", DATES) + _rows("A", DATES[1:], base=50)
    data = md.load_ohlcv_csv(_write(tmp_path, text))
    assert data.tickers == ("A", "B")
    assert [str(d)[:10] for d in data.dates] == DATES[1:]
    np.testing.assert_allclose(data.close[:, 0], [50.5, 51.5, 52.5])
    np.testing.assert_allclose(data.close[:, 1], [11.5, 12.5, 13.5])
    assert data.values.shape == (3, 2, 5)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda t: t.replace("volume", "vol"), r"missing column\(s\) \['volume'\]"),
        (lambda t: t.replace("2020-01-03,A,11.0", "2020-01-03,A,nan"), r"column 'open', line 3"),
        (lambda t: t.replace("2020-01-06,A,12.0", "2020-01-06,A,-1"), r"column 'open', line 4"),
        (lambda t: t.replace(",12.5,102", ",0,102"), r"column 'close', line 4"),
        (lambda t: t.replace("2020-01-06,A", "2020-01-02,A"), r"line 4: date .*unsorted"),
        (lambda t: t.replace("2020-01-06,A", "2020-01-03,A"), r"line 4: duplicated date"),
        (lambda t: t.replace("2020-01-03,A", "2020/01/03,A"), r"column 'date', line 3"),
        (lambda t: t.replace(",11.5,101", ",11.5,-5"), r"column 'volume', line 3"),
    ],
)
def test_load_ohlcv_csv__bad_data_names_file_column_line(tmp_path, mutate, match):
    """Each kind of bad data raises ValueError naming the file, column and line."""
    path = _write(tmp_path, mutate(HEADER + _rows("A", DATES)))
    with pytest.raises(ValueError, match=match) as err:
        md.load_ohlcv_csv(path)
    assert str(path) in str(err.value)


def test_load_ohlcv_csv__gap_raises_or_fills(tmp_path):
    """A ticker missing a date others have raises; fill_gaps carries the close forward."""
    text = HEADER + _rows("A", DATES) + _rows("B", [DATES[0], DATES[1], DATES[3]], base=20)
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=r"ticker 'B' has a gap: no row for 2020-01-06"):
        md.load_ohlcv_csv(path)
    data = md.load_ohlcv_csv(path, fill_gaps=True)
    np.testing.assert_allclose(data.values[2, 1], [21.5, 21.5, 21.5, 21.5, 0.0])
    np.testing.assert_allclose(data.close[3, 1], 22.5)


@pytest.mark.timeout(60)
def test_load_ohlcv_csv__fill_gaps_on_the_calendars_first_date(tmp_path):
    """A gap on the common calendar's first date (A: 01-02, 01-06, 01-07; B starts on
    01-03) is filled from the ticker's row before the calendar. It raised ``TypeError:
    'NoneType' object is not subscriptable`` (the previous close was taken from calendar
    rows only), after the gap error had told the user to pass ``fill_gaps=True``."""
    text = HEADER + _rows("A", [DATES[0], DATES[2], DATES[3]]) + _rows("B", DATES[1:], base=20)
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=r"ticker 'A' has a gap: no row for 2020-01-03"):
        md.load_ohlcv_csv(path)
    data = md.load_ohlcv_csv(path, fill_gaps=True)
    assert [str(d)[:10] for d in data.dates] == DATES[1:]
    np.testing.assert_allclose(data.values[0, 0], [10.5, 10.5, 10.5, 10.5, 0.0])  # A's 01-02
    np.testing.assert_allclose(data.close[:, 0], [10.5, 11.5, 12.5])
    np.testing.assert_allclose(data.close[:, 1], [20.5, 21.5, 22.5])


def test_load_ohlcv_csv__sort_repair(tmp_path):
    """Unsorted rows raise by default; sort=True orders them by date."""
    rows = _rows("A", DATES).splitlines(keepends=True)
    path = _write(tmp_path, HEADER + "".join(rows[::-1]))
    with pytest.raises(ValueError, match="unsorted"):
        md.load_ohlcv_csv(path)
    data = md.load_ohlcv_csv(path, sort=True)
    np.testing.assert_allclose(data.close[:, 0], [10.5, 11.5, 12.5, 13.5])


def test_load_close_csv__wide_close_only(tmp_path):
    """A wide close table becomes a close-only panel (OHLC = close, volume 0)."""
    p = tmp_path / "w.csv.gz"
    with gzip.open(p, "wt") as f:
        f.write("Date,AAA,BBB\n2020-01-02,1.5,2\n2020-01-03,1.6,2.5\n")
    data = md.load_close_csv(p)
    assert data.close_only and data.tickers == ("AAA", "BBB")
    np.testing.assert_allclose(data.values[1, 1], [2.5, 2.5, 2.5, 2.5, 0.0])
    with gzip.open(p, "wt") as f:
        f.write("Date,AAA,BBB\n2020-01-02,1.5,2\n2020-01-03,,2.5\n")
    with pytest.raises(ValueError, match=r"column 'AAA', line 3"):
        md.load_close_csv(p)


def _csv_to_parquet(csv_path, parquet_path, mutate=None):
    """The CSV's table as Parquet (dates as timestamps, numbers as float64)."""
    pd = pytest.importorskip("pandas")  # pandas + pyarrow: the dev / parquet extras
    pytest.importorskip("pyarrow")
    frame = pd.read_csv(csv_path)
    frame["date"] = pd.to_datetime(frame["date"], format="ISO8601")
    if mutate is not None:
        frame = mutate(frame)
    frame.to_parquet(parquet_path, index=False)
    return parquet_path


def test_parquet__roundtrip_equals_csv(tmp_path):
    """The same table as CSV and as Parquet loads to the same MarketData (hourly bars,
    shuffled tickers, an extra column); a wide close table too."""
    data = md.synthetic_market(5, num_steps=30, num_assets=2, freq="h")
    csv_path = tmp_path / "syn.csv"
    md.to_long_csv(data, csv_path)
    pq_path = _csv_to_parquet(csv_path, tmp_path / "syn.parquet", lambda f: f.assign(extra=1.0))
    a, b = md.load_ohlcv_csv(csv_path), md.load_ohlcv(pq_path)
    assert a.tickers == b.tickers == data.tickers
    np.testing.assert_array_equal(a.dates, b.dates)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_allclose(b.values, data.values, rtol=1e-9)
    import pandas as pd

    wide = pd.DataFrame({"Date": ["2020-01-02", "2020-01-03"], "AAA": [1.5, 1.6], "BBB": [2, 3]})
    wide.to_csv(tmp_path / "w.csv", index=False)
    wide.to_parquet(tmp_path / "w.parquet", index=False)
    ca, cb = md.load_close_csv(tmp_path / "w.csv"), md.load_close_csv(tmp_path / "w.parquet")
    assert ca.tickers == cb.tickers == ("AAA", "BBB")
    np.testing.assert_array_equal(ca.values, cb.values)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda f: f.drop(columns=["volume"]), r"missing column\(s\) \['volume'\]"),
        (lambda f: f.assign(close=f["close"].where(f.index != 2)), r"column 'close', row 3:"),
        (lambda f: f.assign(open=f["open"].where(f.index != 0, -1.0)), r"column 'open', row 1:"),
        (lambda f: f.assign(volume=f["volume"].where(f.index != 4, -5)), r"'volume', row 5:"),
        (lambda f: f.iloc[[0, 2, 1, 3, 4, 5, 6, 7]], r"column 'date', row 3: date .*unsorted"),
        (lambda f: f.assign(date=f["date"].where(f.index != 1, f["date"][0])), r"row 2: dupl"),
    ],
)
def test_parquet__bad_data_names_file_column_row(tmp_path, mutate, match):
    text = HEADER + _rows("A", DATES) + _rows("B", DATES)
    pq_path = _csv_to_parquet(_write(tmp_path, text), tmp_path / "bad.parquet", mutate)
    with pytest.raises(ValueError, match=match) as e:
        md.load_ohlcv_csv(pq_path)
    assert str(e.value).startswith(str(pq_path))


def test_parquet__not_parquet_and_missing_extra(tmp_path, monkeypatch):
    """A corrupt file is a ValueError naming it; without pandas the error names the extra."""
    bad = _write(tmp_path, "not parquet", "x.parquet")
    with pytest.raises(ValueError, match=r"x\.parquet: not a readable Parquet file"):
        md.load_ohlcv_csv(bad)
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'hordax\[parquet\]'"):
        md.load_ohlcv_csv(bad)


def test_splits__chronological_and_walk_forward():
    """Splits are consecutive and ordered; walk-forward windows roll by the test length."""
    s = md.chronological_split(100, (0.6, 0.2, 0.2))
    assert s == {"train": (0, 60), "validation": (60, 80), "test": (80, 100)}
    w = md.walk_forward(300, train=100, validation=63, test=63)
    assert len(w) == 2
    assert w[1] == {"train": (63, 163), "validation": (163, 226), "test": (226, 289)}
    dates = md.synthetic_market(0, 30, 1).dates
    s = md.split_by_dates(dates, "2000-01-17", "2000-01-31")
    assert dates[s["validation"][0]] >= np.datetime64("2000-01-17")
    assert dates[s["train"][1] - 1] < np.datetime64("2000-01-17")
    with pytest.raises(ValueError, match="non-empty"):
        md.split_by_dates(dates, "1999-01-01", "2000-01-31")


def test_synthetic_market__seeded_correlated_valid_ohlcv():
    """Same seed same data; prices positive; high >= max(open, close); shocks correlated."""
    a = md.synthetic_market(7, 2000, 3, correlation=0.6)
    b = md.synthetic_market(7, 2000, 3, correlation=0.6)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.array_equal(a.values, md.synthetic_market(8, 2000, 3).values)
    v = a.values
    assert np.all(v[..., :4] > 0)
    assert np.all(v[..., 1] >= np.maximum(v[..., 0], v[..., 3]))
    assert np.all(v[..., 2] <= np.minimum(v[..., 0], v[..., 3]))
    r = np.diff(np.log(a.close), axis=0)
    corr = np.corrcoef(r, rowvar=False)[0, 1]
    assert 0.45 < corr < 0.75


# --------------------------------------------------------------------------------------------
# indicators


@pytest.fixture(scope="module")
def panel():
    return md.synthetic_market(11, num_steps=320, num_assets=3)


def _wilder_loop(x, n):
    out, e = [], x[0]
    for i, v in enumerate(x):
        e = v if i == 0 else e + (v - e) / n
        out.append(e)
    return np.array(out)


def test_indicators__match_per_element_reference_loops(panel):
    """SMA, Bollinger, RSI, CCI, DX and MACD equal straightforward loops over one asset."""
    h, lo, c = (panel.feature(k)[:, 1] for k in ("high", "low", "close"))
    got = ind.compute_indicators(panel)[:, 1]
    T = len(c)
    sma = lambda x, n, t: np.mean(x[max(0, t - n + 1) : t + 1])  # noqa: E731
    for t in (0, 1, 5, 29, 30, 100, T - 1):
        win = c[max(0, t - 19) : t + 1]
        sd = np.std(win, ddof=1) if len(win) > 1 else 0.0
        np.testing.assert_allclose(got[t, 1], np.mean(win) + 2 * sd, rtol=1e-10)
        np.testing.assert_allclose(got[t, 2], np.mean(win) - 2 * sd, rtol=1e-10)
        np.testing.assert_allclose(got[t, 6], sma(c, 30, t), rtol=1e-10)
        np.testing.assert_allclose(got[t, 7], sma(c, 60, t), rtol=1e-10)
        tp = (h + lo + c) / 3
        w = tp[max(0, t - 29) : t + 1]
        mad = np.mean(np.abs(w - w.mean()))
        want_cci = (tp[t] - w.mean()) / (0.015 * mad) if mad > 0 else 0.0
        np.testing.assert_allclose(got[t, 4], want_cci, rtol=1e-8, atol=1e-8)
    d = np.diff(c, prepend=c[0])
    g, l_ = _wilder_loop(np.maximum(d, 0), 30), _wilder_loop(np.maximum(-d, 0), 30)
    want_rsi = np.where(g + l_ > 0, 100 * g / np.maximum(g + l_, 1e-300), 50.0)
    np.testing.assert_allclose(got[:, 3], want_rsi, rtol=1e-9)
    ema = lambda x, s: _wilder_loop(x, (s + 1) / 2)  # noqa: E731  (a = 2 / (s + 1))
    np.testing.assert_allclose(got[:, 0], ema(c, 12) - ema(c, 26), rtol=1e-8, atol=1e-9)
    # DX with explicit per-step directional movement
    pdm, mdm, tr = [0.0], [0.0], [h[0] - lo[0]]
    for t in range(1, T):
        up, dn = h[t] - h[t - 1], lo[t - 1] - lo[t]
        pdm.append(up if up > dn and up > 0 else 0.0)
        mdm.append(dn if dn > up and dn > 0 else 0.0)
        tr.append(max(h[t] - lo[t], abs(h[t] - c[t - 1]), abs(lo[t] - c[t - 1])))
    sp, sm, st = (_wilder_loop(np.array(x), 30) for x in (pdm, mdm, tr))
    dip, dim = 100 * sp / st, 100 * sm / st
    assert got[0, 5] == 0.0  # no movement on the first row: DX defined as 0
    want_dx = 100 * np.abs(dip - dim)[1:] / (dip + dim)[1:]
    np.testing.assert_allclose(got[1:, 5], want_dx, rtol=1e-8)


def test_turbulence__matches_mahalanobis_formula(panel):
    """Turbulence at t = Mahalanobis^2 of r_t against the previous `window` returns."""
    c = panel.close
    turb = ind.turbulence(c, window=60)
    assert np.all(turb[:61] == 0) and np.all(turb[61:] > 0)
    r = c[1:] / c[:-1] - 1
    for t in (61, 150, len(c) - 1):
        hist = r[t - 61 : t - 1]
        d = r[t - 1] - hist.mean(0)
        cov = np.cov(hist.T)
        np.testing.assert_allclose(turb[t], d @ np.linalg.solve(cov, d), rtol=1e-8)


def test_indicators__no_look_ahead(panel):
    """Perturbing rows after k never changes indicators, normalized features or turbulence
    at rows <= k."""
    rng = np.random.default_rng(0)
    base_ind = ind.compute_indicators(panel)
    base_norm = ind.normalize_indicators(base_ind, panel.close)
    base_turb = ind.turbulence(panel.close, window=60)
    for k in (0, 40, 150, 318):
        v = panel.values.copy()
        v[k + 1 :, :, :4] *= np.exp(rng.normal(0, 0.2, v[k + 1 :, :, :4].shape))
        v[k + 1 :, :, 1] = v[k + 1 :, :, :4].max(-1)
        v[k + 1 :, :, 2] = v[k + 1 :, :, :4].min(-1)
        v[k + 1 :, :, 4] *= 3.0
        other = md.MarketData(panel.dates, panel.tickers, v)
        new_ind = ind.compute_indicators(other)
        assert not np.allclose(new_ind[k + 1 :], base_ind[k + 1 :])
        np.testing.assert_array_equal(new_ind[: k + 1], base_ind[: k + 1])
        np.testing.assert_array_equal(
            ind.normalize_indicators(new_ind, other.close)[: k + 1], base_norm[: k + 1]
        )
        np.testing.assert_array_equal(
            ind.turbulence(other.close, window=60)[: k + 1], base_turb[: k + 1]
        )
