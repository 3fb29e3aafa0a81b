"""Result files of the benchmarks: the conditions of a run and its rows, as JSON and CSV.

Every throughput or comparison figure that a document states comes from one of these
files (``benchmarks/results/<name>.json``, a CSV beside it), written by the command that
measured it; ``benchmarks/claims.yaml`` ties each stated figure to its file and field.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import jax

from hordax import strict_json

#: Versions recorded in every result file (more are added by a comparison's peers).
BASE_PACKAGES = ("hordax", "jax", "jaxlib", "flax", "gymnax", "numpy")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions(packages: tuple[str, ...] | list[str]) -> dict[str, str | None]:
    """Installed version of each distribution (``None`` where it is not installed)."""
    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit() -> str | None:
    """The checkout's commit (with ``+dirty`` for uncommitted changes), if in one."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}+dirty" if dirty else sha


def conditions(packages: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    """What a figure depends on: date, command, machine, device, versions, load."""
    dev = jax.devices()[0]
    return {
        "date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": f"{platform.system()} {platform.machine()}",
        "device": f"{dev.platform}: {dev.device_kind}",
        "devices": jax.device_count(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "versions": versions(tuple(dict.fromkeys([*BASE_PACKAGES, *packages]))),
        "commit": git_commit(),
    }


def write(path: str | os.PathLike, rows: list[dict], conds: dict[str, Any]) -> Path:
    """Write ``{"conditions": conds, "rows": rows}`` to ``path`` (``.json``) and the rows
    to the ``.csv`` beside it; returns the JSON path. Both are replaced whole."""
    path = Path(path).with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(strict_json.dumps({"conditions": conds, "rows": rows}, indent=1) + "\n")
    os.replace(tmp, path)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path.with_suffix(".csv"))
    return path


def read(path: str | os.PathLike) -> dict[str, Any]:
    """The ``{"conditions", "rows"}`` of a result file."""
    return json.loads(Path(path).with_suffix(".json").read_text())
