"""Market data on the host (numpy): OHLCV tables -> dense ``[time, asset, feature]`` panels.

- :func:`load_ohlcv_csv` reads a long table (one row per date and ticker, columns ``date,
  ticker, open, high, low, close, volume``; ``.csv``, ``.csv.gz`` or ``.parquet``) and
  :func:`load_close_csv` a wide close-only table (``date`` then one column per ticker).
  Both validate every row and raise ``ValueError`` naming the file, the column and the
  1-based line number (CSV; the header is line 1) or data row number (Parquet; the first
  data row is row 1); two documented repairs exist (``sort=True``, ``fill_gaps=True``).
- :class:`MarketData` is the dense panel: ``values f64[T, N, 5]`` (open, high, low, close,
  volume) on one calendar shared by all tickers.
- :func:`chronological_split` / :func:`split_by_dates` / :func:`walk_forward` give index
  ranges ``(start, stop)`` in time order (no shuffling).
- :func:`synthetic_market` generates correlated GBM prices with Markov regime switches.

Parquet is read with pandas + pyarrow, an optional extra (``pip install hordax[parquet]``);
without them a ``.parquet`` path raises an ``ImportError`` naming the extra.
Technical indicators live in :mod:`hordax.envs.trading.indicators`.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as _dt
import gzip
import io
import os
from collections.abc import Sequence

import numpy as np

FEATURES = ("open", "high", "low", "close", "volume")
PRICE_COLUMNS = ("open", "high", "low", "close")
REQUIRED_COLUMNS = ("date", "ticker", *FEATURES)


@dataclasses.dataclass(frozen=True)
class MarketData:
    """A dense OHLCV panel on one calendar.

    Attributes:
        dates: ``datetime64[s][T]``, strictly increasing.
        tickers: ``N`` names.
        values: ``f64[T, N, 5]``, features in :data:`FEATURES` order; prices > 0, volume >= 0.
        close_only: True when the source had only a close (open = high = low = close and
            volume = 0 by convention).
        source: file name or generator description (for messages).
    """

    dates: np.ndarray
    tickers: tuple[str, ...]
    values: np.ndarray
    close_only: bool = False
    source: str = "<memory>"

    @property
    def num_steps(self) -> int:
        return int(self.values.shape[0])

    @property
    def num_assets(self) -> int:
        return int(self.values.shape[1])

    def feature(self, name: str) -> np.ndarray:
        """``f64[T, N]`` of one of :data:`FEATURES`."""
        if name not in FEATURES:
            raise ValueError(f"feature={name!r}: must be one of {FEATURES}")
        return self.values[:, :, FEATURES.index(name)]

    @property
    def close(self) -> np.ndarray:
        return self.feature("close")

    def slice(self, start: int, stop: int) -> MarketData:
        """Rows ``[start, stop)`` (time order kept)."""
        return dataclasses.replace(
            self, dates=self.dates[start:stop], values=self.values[start:stop]
        )

    def select(self, tickers: Sequence[str]) -> MarketData:
        """A panel of a subset of tickers, in the given order."""
        missing = [t for t in tickers if t not in self.tickers]
        if missing:
            raise ValueError(f"{self.source}: tickers {missing} not in {list(self.tickers)}")
        idx = [self.tickers.index(t) for t in tickers]
        return dataclasses.replace(self, tickers=tuple(tickers), values=self.values[:, idx])


# --------------------------------------------------------------------------------------------
# reading


def _open_text(path: str | os.PathLike) -> io.TextIOBase:
    path = os.fspath(path)
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def is_parquet(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a Parquet file (by its ``.parquet`` / ``.pq`` suffix)."""
    return os.fspath(path).lower().endswith((".parquet", ".pq"))


def _read_parquet(path) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Columns (original spelling) and ``("row N", fields as text)`` of a Parquet file.

    Cells become the text the CSV reader would see (so one validation path serves both):
    numbers via ``repr`` (exact for float64), missing values as ``""`` (read as NaN, hence
    rejected like an empty CSV cell), timestamps and dates in ISO 8601."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            f"{path}: reading Parquet needs pandas and pyarrow: pip install 'hordax[parquet]'"
        ) from None
    try:
        frame = pd.read_parquet(path)
    except ImportError as e:  # pandas without a Parquet engine
        raise ImportError(
            f"{path}: reading Parquet needs pyarrow ({e}): pip install 'hordax[parquet]'"
        ) from None
    except FileNotFoundError:
        raise
    except Exception as e:  # pyarrow's errors for a corrupt or non-Parquet file
        raise ValueError(f"{path}: not a readable Parquet file ({type(e).__name__}: {e})") from None

    def text(v) -> str:
        if v is None or (isinstance(v, float) and v != v) or v is pd.NaT:
            return ""
        if isinstance(v, pd.Timestamp | _dt.datetime | _dt.date):
            if isinstance(v, pd.Timestamp | _dt.datetime) and v.tzinfo is not None:
                v = v.astimezone(_dt.UTC).replace(tzinfo=None)  # UTC, like the CSVs
            return v.isoformat()
        if isinstance(v, float | np.floating):
            return repr(float(v))
        return str(v)

    columns = [str(c) for c in frame.columns]
    cells = frame.astype(object).to_numpy()
    rows = [(f"row {i + 1}", [text(v) for v in r]) for i, r in enumerate(cells)]
    return columns, rows


def _parse_date(text: str, fmt: str | None) -> np.datetime64:
    if fmt is None:
        return np.datetime64(text.strip(), "s")
    return np.datetime64(_dt.datetime.strptime(text.strip(), fmt), "s")


def _read_table(path, skip_lines: int) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Header (original spelling, stripped) and ``(location, fields)`` rows of a CSV or
    Parquet file; the location is ``"line N"`` (CSV) or ``"row N"`` (Parquet)."""
    if is_parquet(path):
        if skip_lines:
            raise ValueError(f"{path}: skip_lines={skip_lines} applies to CSV files only")
        columns, rows = _read_parquet(path)
        return [c.strip() for c in columns], rows
    with _open_text(path) as f:
        for _ in range(skip_lines):
            f.readline()
        reader = csv.reader(f)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"{path}: empty file (no header line)") from None
        rows = [(f"line {skip_lines + i + 2}", r) for i, r in enumerate(reader) if r]
    return header, rows


def _read_rows(path, skip_lines: int) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """:func:`_read_table` with the header lower-cased."""
    header, rows = _read_table(path, skip_lines)
    return [h.lower() for h in header], rows


def _number(path, column: str, line: str, text: str) -> float:
    try:
        return float(text) if text.strip() != "" else float("nan")
    except ValueError:
        msg = f"{path}: column {column!r}, {line}: {text!r} is not a number"
        raise ValueError(msg) from None


def load_ohlcv_csv(
    path: str | os.PathLike,
    *,
    date_format: str | None = None,
    skip_lines: int = 0,
    rename: dict[str, str] | None = None,
    sort: bool = False,
    fill_gaps: bool = False,
    tickers: Sequence[str] | None = None,
) -> MarketData:
    """Read a long OHLCV table into a :class:`MarketData` panel.

    Args:
        path: ``.csv``, ``.csv.gz`` or ``.parquet`` (needs ``hordax[parquet]``); a header
            line (Parquet: columns) with (case-insensitive) names ``date, ticker, open, high,
            low, close, volume`` (extra columns are ignored).
        date_format: ``strptime`` format of the date column; ``None`` = ISO 8601.
        skip_lines: lines before the header (e.g. a banner line).
        rename: ``{column in file: standard name}``, e.g. ``{"symbol": "ticker"}``.
        sort: repair option: sort each ticker's rows by date instead of raising on
            unsorted rows (duplicated dates still raise).
        fill_gaps: repair option: a date that some tickers have and another ticker lacks
            (inside the common range) carries that ticker's previous close forward as
            open = high = low = close with volume 0, instead of raising.
        tickers: keep only these tickers (in this order); default all, sorted by name.

    Returns:
        The panel on the common calendar: dates from the latest first date to the earliest
        last date over the tickers (dates outside it are dropped).

    Raises:
        ValueError: naming the file, column and line (Parquet: data row) for a missing
        column, a bad number or date, a NaN/non-positive price, a negative/NaN volume,
        high < low, unsorted or duplicated dates of a ticker, or a ticker with a gap in the
        common calendar.
    """
    header, rows = _read_rows(path, skip_lines)
    rename = {k.lower(): v.lower() for k, v in (rename or {}).items()}
    header = [rename.get(h, h) for h in header]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; header has {header}")
    col = {c: header.index(c) for c in REQUIRED_COLUMNS}
    per_ticker: dict[str, list[tuple[np.datetime64, int, list[float]]]] = {}
    for line, r in rows:
        if len(r) < len(header):
            raise ValueError(f"{path}: {line}: {len(r)} fields, header has {len(header)}")
        try:
            date = _parse_date(r[col["date"]], date_format)
        except ValueError:
            raise ValueError(
                f"{path}: column 'date', {line}: {r[col['date']]!r} is not a date"
                + (f" in format {date_format!r}" if date_format else " (ISO 8601 expected)")
            ) from None
        vals = [_number(path, c, line, r[col[c]]) for c in FEATURES]
        for c, v in zip(FEATURES, vals, strict=True):
            if c in PRICE_COLUMNS and not (np.isfinite(v) and v > 0):
                raise ValueError(f"{path}: column {c!r}, {line}: price {v} must be > 0")
            if c == "volume" and not (np.isfinite(v) and v >= 0):
                raise ValueError(f"{path}: column 'volume', {line}: {v} must be >= 0")
        if vals[1] < vals[2]:
            raise ValueError(f"{path}: column 'high', {line}: high {vals[1]} < low {vals[2]}")
        per_ticker.setdefault(r[col["ticker"]].strip(), []).append((date, line, vals))
    if not per_ticker:
        raise ValueError(f"{path}: no data rows")
    return _assemble(path, per_ticker, sort=sort, fill_gaps=fill_gaps, tickers=tickers)


def load_close_csv(
    path: str | os.PathLike,
    *,
    date_column: str = "date",
    date_format: str | None = None,
    tickers: Sequence[str] | None = None,
) -> MarketData:
    """Read a wide close-price table (``date`` + one column per ticker) as a close-only panel.

    open = high = low = close and volume = 0 (``MarketData.close_only`` is True), so
    indicators that use high/low see the close path only. Validation as in
    :func:`load_ohlcv_csv` (rows must be sorted; no repair options); ``.parquet`` works
    as in :func:`load_ohlcv_csv`.
    """
    names, rows = _read_table(path, 0)  # the original ticker spelling (upper case)
    header = [h.lower() for h in names]
    if date_column.lower() not in header:
        raise ValueError(f"{path}: missing column {date_column!r}; header has {header}")
    di = header.index(date_column.lower())
    cols = [i for i in range(len(header)) if i != di]
    per_ticker: dict[str, list] = {names[i]: [] for i in cols}
    for line, r in rows:
        try:
            date = _parse_date(r[di], date_format)
        except ValueError:
            raise ValueError(f"{path}: column {date_column!r}, {line}: bad date") from None
        for i in cols:
            v = _number(path, names[i], line, r[i])
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{path}: column {names[i]!r}, {line}: price {v} must be > 0")
            per_ticker[names[i]].append((date, line, [v, v, v, v, 0.0]))
    data = _assemble(path, per_ticker, sort=False, fill_gaps=False, tickers=tickers, keep=True)
    return dataclasses.replace(data, close_only=True)


#: The same reader under a format-neutral name (it reads ``.csv``, ``.csv.gz`` and ``.parquet``).
load_ohlcv = load_ohlcv_csv


def _assemble(path, per_ticker, *, sort, fill_gaps, tickers, keep=False) -> MarketData:
    names = (
        list(tickers) if tickers is not None else (list(per_ticker) if keep else sorted(per_ticker))
    )
    unknown = [t for t in names if t not in per_ticker]
    if unknown:
        raise ValueError(f"{path}: tickers {unknown} not in the file ({sorted(per_ticker)})")
    series = {}
    for t in names:
        rows = per_ticker[t]
        if sort:
            rows = sorted(rows, key=lambda x: x[0])
        dates = np.array([d for d, _, _ in rows], "datetime64[s]")
        lines = [ln for _, ln, _ in rows]
        step = np.diff(dates)
        if np.any(step == np.timedelta64(0, "s")):
            i = int(np.argmax(step == np.timedelta64(0, "s"))) + 1
            raise ValueError(
                f"{path}: column 'date', {lines[i]}: duplicated date {dates[i]} "
                f"for ticker {t!r} (first at {lines[i - 1]})"
            )
        if np.any(step < np.timedelta64(0, "s")):
            i = int(np.argmax(step < np.timedelta64(0, "s"))) + 1
            raise ValueError(
                f"{path}: column 'date', {lines[i]}: date {dates[i]} of ticker {t!r} is "
                f"before the previous row's {dates[i - 1]} (unsorted; pass sort=True to repair)"
            )
        series[t] = (dates, lines, np.array([v for _, _, v in rows], np.float64))
    lo = max(s[0][0] for s in series.values())
    hi = min(s[0][-1] for s in series.values())
    if lo > hi:
        raise ValueError(f"{path}: the tickers' date ranges do not overlap")
    calendar = np.unique(np.concatenate([s[0] for s in series.values()]))
    calendar = calendar[(calendar >= lo) & (calendar <= hi)]
    values = np.empty((len(calendar), len(names), len(FEATURES)), np.float64)
    for j, t in enumerate(names):
        dates, lines, vals = series[t]
        pos = np.searchsorted(dates, calendar)
        found = (pos < len(dates)) & (dates[np.minimum(pos, len(dates) - 1)] == calendar)
        if not found.all():
            k = int(np.argmin(found))
            if not fill_gaps:
                raise ValueError(
                    f"{path}: column 'date': ticker {t!r} has a gap: no row for {calendar[k]} "
                    f"(other tickers have one; near {lines[min(pos[k], len(lines) - 1)]}); "
                    "pass fill_gaps=True to carry the previous close forward"
                )
        for k in range(len(calendar)):
            if found[k]:
                values[k, j] = vals[pos[k]]
            else:  # inside [lo, hi], so the ticker has a row before it (maybe before lo)
                c = vals[pos[k] - 1][3]
                values[k, j] = (c, c, c, c, 0.0)
    return MarketData(calendar, tuple(names), values, source=os.fspath(path))


# --------------------------------------------------------------------------------------------
# splits


def chronological_split(
    num_steps: int, fractions: Sequence[float] = (0.6, 0.2, 0.2)
) -> dict[str, tuple[int, int]]:
    """``{"train", "validation", "test"}`` -> ``(start, stop)`` consecutive index ranges."""
    f = np.asarray(fractions, np.float64)
    if f.shape != (3,) or np.any(f <= 0) or not np.isclose(f.sum(), 1.0):
        raise ValueError(f"fractions={list(fractions)}: want 3 positive numbers summing to 1")
    cut = np.round(np.cumsum(f) * num_steps).astype(int)
    a, b = int(cut[0]), int(cut[1])
    if not 0 < a < b < num_steps:
        raise ValueError(f"num_steps={num_steps} is too short for fractions {list(fractions)}")
    return {"train": (0, a), "validation": (a, b), "test": (b, num_steps)}


def split_by_dates(dates: np.ndarray, train_end: str, validation_end: str) -> dict:
    """Split at dates: train ``< train_end <=`` validation ``< validation_end <=`` test."""
    dates = np.asarray(dates, "datetime64[s]")
    a = int(np.searchsorted(dates, np.datetime64(train_end, "s")))
    b = int(np.searchsorted(dates, np.datetime64(validation_end, "s")))
    if not 0 < a < b < len(dates):
        raise ValueError(
            f"train_end={train_end!r}, validation_end={validation_end!r}: each split must be "
            f"non-empty within {dates[0]} .. {dates[-1]}"
        )
    return {"train": (0, a), "validation": (a, b), "test": (b, len(dates))}


def walk_forward(
    num_steps: int, train: int, validation: int, test: int, step: int | None = None
) -> list[dict[str, tuple[int, int]]]:
    """Rolling windows: each has train, validation and test ranges in time order.

    Window ``i`` starts at ``i * step`` (default ``step = test``, FinRL's 63-day rebalance):
    train ``[s, s+train)``, validation next ``validation`` rows, test next ``test`` rows.
    Only complete windows are returned.
    """
    step = test if step is None else step
    if min(train, validation, test, step) < 1:
        raise ValueError("walk_forward: train, validation, test and step must be >= 1")
    out, s = [], 0
    while s + train + validation + test <= num_steps:
        a, b = s + train, s + train + validation
        out.append({"train": (s, a), "validation": (a, b), "test": (b, b + test)})
        s += step
    return out


# --------------------------------------------------------------------------------------------
# synthetic data


def synthetic_market(
    seed: int,
    num_steps: int = 500,
    num_assets: int = 4,
    *,
    regimes: Sequence[tuple[float, float]] = ((0.0004, 0.01), (-0.001, 0.03)),
    switch_prob: float = 0.02,
    correlation: float = 0.3,
    start_price: float = 100.0,
    freq: str = "D",
) -> MarketData:
    """Correlated geometric Brownian motion with Markov regime switches, as OHLCV.

    Args:
        seed: numpy seed (same seed, same data).
        num_steps, num_assets: panel size ``T, N``.
        regimes: per-regime ``(drift, volatility)`` of the daily log return.
        switch_prob: probability per step of jumping to another (uniform) regime.
        correlation: pairwise correlation of the assets' shocks (equicorrelation).
        start_price: first open of every asset.
        freq: ``"D"`` business days from 2000-01-03, or ``"h"`` hours.

    Close follows ``log c_t = log c_{t-1} + mu_r - sigma_r^2 / 2 + sigma_r z_t`` with
    ``z ~ N(0, C)``; open is the previous close; high/low widen ``max/min(open, close)`` by
    a half-normal fraction of sigma; volume is log-normal.
    """
    rng = np.random.default_rng(seed)
    if not -1.0 / max(num_assets - 1, 1) < correlation < 1.0:
        raise ValueError(f"correlation={correlation}: must make a valid equicorrelation matrix")
    cov = np.full((num_assets, num_assets), correlation) + (1 - correlation) * np.eye(num_assets)
    chol = np.linalg.cholesky(cov)
    mu, sigma = (np.array(x, np.float64) for x in zip(*regimes, strict=True))
    regime = np.zeros(num_steps, int)
    for t in range(1, num_steps):
        switch = rng.random() < switch_prob and len(regimes) > 1
        regime[t] = (
            (regime[t - 1] + rng.integers(1, len(regimes))) % len(regimes)
            if switch
            else regime[t - 1]
        )
    z = rng.standard_normal((num_steps, num_assets)) @ chol.T
    m, s = mu[regime][:, None], sigma[regime][:, None]
    log_close = np.log(start_price) + np.cumsum(m - 0.5 * s**2 + s * z, axis=0)
    close = np.exp(log_close)
    open_ = np.concatenate([np.full((1, num_assets), start_price), close[:-1]])
    wick = np.abs(rng.standard_normal((2, num_steps, num_assets))) * 0.5 * s
    high = np.maximum(open_, close) * (1 + wick[0])
    low = np.minimum(open_, close) * (1 - wick[1])
    volume = np.round(np.exp(rng.normal(13.0, 0.5, (num_steps, num_assets))))
    if freq == "D":
        dates = np.busday_offset("2000-01-03", np.arange(num_steps), roll="forward")
    elif freq == "h":
        dates = np.datetime64("2020-01-01T00", "h") + np.arange(num_steps)
    else:
        raise ValueError(f"freq={freq!r}: must be 'D' or 'h'")
    values = np.stack([open_, high, low, close, volume], axis=-1)
    tickers = tuple(f"SYN{i}" for i in range(num_assets))
    return MarketData(
        dates.astype("datetime64[s]"), tickers, values, source=f"synthetic(seed={seed})"
    )


def to_long_csv(data: MarketData, path: str | os.PathLike) -> None:
    """Write ``data`` as a long OHLCV CSV (gzip if ``path`` ends in ``.gz``)."""
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(REQUIRED_COLUMNS)
        for j, t in enumerate(data.tickers):
            for k, d in enumerate(data.dates):
                day = str(d)[:10] if str(d).endswith("T00:00:00") else str(d)
                w.writerow([day, t, *(f"{x:.10g}" for x in data.values[k, j])])
