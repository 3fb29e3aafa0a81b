"""Every JSON line and file hordax writes is strict JSON: non-finite floats become null
(issue #18 item 5: the ensemble summary line printed a bare NaN)."""

import json
import re
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from hordax import strict_json

ROOT = Path(__file__).resolve().parents[1]


def _strict_loads(text: str):
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.timeout(60)
def test_strict_json__non_finite_floats_become_null_at_any_depth():
    row = {
        "sharpe": float("nan"),
        "calmar": float("inf"),
        "np": np.float32("nan"),
        "curve": jnp.array([1.0, jnp.nan, -jnp.inf]),
        "nested": {"list": [1.5, float("-inf"), (np.int64(3), np.bool_(True))]},
        "ok": 2.5,
    }
    with pytest.raises(ValueError, match="non-standard JSON token NaN"):
        _strict_loads(json.dumps(row, default=lambda x: np.asarray(x).tolist()))
    for text in (strict_json.dumps(row), strict_json.dumps(row, indent=1)):
        back = _strict_loads(text)
        assert back == {
            "sharpe": None,
            "calmar": None,
            "np": None,
            "curve": [1.0, None, None],
            "nested": {"list": [1.5, None, [3, True]]},
            "ok": 2.5,
        }


@pytest.mark.timeout(60)
def test_strict_json__is_the_only_json_writer_in_hordax_and_benchmarks():
    """One helper everywhere: no module writes with ``json.dump``/``json.dumps`` directly."""
    offenders = []
    for path in [
        *ROOT.joinpath("hordax").rglob("*.py"),
        *ROOT.joinpath("benchmarks").rglob("*.py"),
    ]:
        if path.name == "strict_json.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bjson\.dumps?\(", line):
                offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
