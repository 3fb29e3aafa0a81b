"""Strict JSON for every line and file hordax writes (summary line, summary.json,
metrics.jsonl, bench and backtest outputs).

Python's ``json`` writes non-finite floats as the bare tokens ``NaN``/``Infinity``, which
are not JSON: strict parsers (``jq``, JavaScript's ``JSON.parse``, Go, pandas with
``json.loads(..., parse_constant=...)``) reject the whole line. Here they become ``null``,
and ``allow_nan=False`` makes any that slipped through an error instead of bad output.
"""

from __future__ import annotations

import json
import math
from typing import IO, Any


def finite_or_none(obj: Any) -> Any:
    """``obj`` with every non-finite float (Python, numpy or jax, at any depth of dicts,
    lists and arrays) replaced by ``None``; arrays and numpy scalars become Python values."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite_or_none(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, str | bytes):  # numpy/jax arrays, scalars
        return finite_or_none(obj.tolist())
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` with non-finite floats written as ``null`` (always valid JSON)."""
    return json.dumps(finite_or_none(obj), allow_nan=False, **kwargs)


def dump(obj: Any, fp: IO[str], **kwargs: Any) -> None:
    """``json.dump`` with non-finite floats written as ``null`` (always valid JSON)."""
    fp.write(dumps(obj, **kwargs))
