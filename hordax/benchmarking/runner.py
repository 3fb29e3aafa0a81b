"""The command-line scaffolding every comparison script in benchmarks/ shares: a table of
cases x batch sizes timed through :func:`~hordax.benchmarking.harness.compare`, printed as
Markdown while it runs and written as one result file (:mod:`~hordax.benchmarking.results`).

A script defines its :class:`Case` list (labels such as the env and a ``build(num_envs)``
that returns the subjects and their shared action sampler) and calls :func:`main`.
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax

from hordax.benchmarking import harness, results
from hordax.benchmarking.harness import Subject


@dataclass(frozen=True)
class Case:
    """One row group of a comparison.

    Attributes:
        labels: what the rows of this case share, e.g. ``{"layout": "DoorKey-8x8"}``.
        build: ``num_envs -> (subjects, sample)``: the sides and their shared sampler.
        note: what differs between the sides beyond their code (e.g. "hordax draws a task
            per reset; xminigrid steps one fixed ruleset"), copied into each row.
    """

    labels: dict[str, Any]
    build: Callable[[int], tuple[list[Subject], Callable[[jax.Array], Any]]]
    note: str = ""
    sizes: Sequence[int] | None = field(default=None)
    """Batch sizes for this case only (``None``: the command's ``--num-envs``)."""


def parser(description: str, sizes: Sequence[int], steps: int, out: str) -> argparse.ArgumentParser:
    """``--num-envs``, ``--steps``, ``--repeats``, ``--out`` (the result file), ``--only``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument(
        "--num-envs",
        nargs="+",
        type=int,
        default=None,
        help=f"batch sizes for every case (default: {list(sizes)}, or a case's own sizes)",
    )
    ap.add_argument("--steps", type=int, default=steps, help="batch steps per timed run")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved timed runs per side")
    ap.add_argument("--out", default=out, help="result file (.json, and a .csv beside it)")
    ap.add_argument("--only", nargs="*", default=None, help="run the cases whose labels match")
    return ap


def run(
    cases: Sequence[Case],
    sizes: Sequence[int],
    steps: int,
    repeats: int,
    place: Callable[[Any], Any] | None = None,
    echo: Callable[[str], None] = print,
    save: Callable[[list[dict[str, Any]]], Any] | None = None,
) -> list[dict[str, Any]]:
    """Every case at every size (or its own ``sizes``); rows carry the case's labels and
    note. A size that fails (e.g. out of memory) gives one row with ``error``. ``save(rows)``
    runs after every size, so a run cut short keeps the rows it measured."""
    rows: list[dict[str, Any]] = []
    for case in cases:
        for n in case.sizes or sizes:
            try:
                subjects, sample = case.build(int(n))
                got = harness.compare(subjects, sample, steps, repeats, place=place)
            except Exception as err:  # noqa: BLE001 - recorded in the result file
                got = [{"num_envs": int(n), "error": f"{type(err).__name__}: {err}"[:300]}]
            for r in got:
                row = {**case.labels, **r, "note": case.note}
                rows.append(row)
                echo(_line(row))
            if save is not None:
                save(rows)
            jax.clear_caches()
            gc.collect()
    return rows


def _line(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"  {row.get('num_envs')}: {row['error']}"
    return (
        f"  {row['subject']:<38} n={row['num_envs']:<6} {row['sps']:>14,.0f} steps/s "
        f"[{row['sps_min']:,.0f}, {row['sps_max']:,.0f}]  compile {row['compile_s']:.1f} s  "
        f"load {row['load_before']:.2f}"
    )


def markdown(rows: list[dict[str, Any]], keys: Sequence[str]) -> str:
    """A Markdown table: one line per ``(*keys, num_envs)``, one steps/s column per subject
    (in first-seen order), then for each hordax subject its ratio to the fastest peer (a
    subject of another library) on that line."""
    subjects = list(dict.fromkeys(r["subject"] for r in rows if "subject" in r))
    library = {r["subject"]: r["library"] for r in rows if "subject" in r}
    ours = [s for s in subjects if library[s] == "hordax"]
    peers = [s for s in subjects if library[s] != "hordax"]
    table: dict[tuple, dict[str, float]] = {}
    for r in rows:
        if "subject" in r:
            line = table.setdefault((*(r.get(k) for k in keys), r["num_envs"]), {})
            line[r["subject"]] = r["sps"]
    ratios = [f"{s} / fastest peer" for s in ours] if peers else []
    head = [*keys, "num_envs", *subjects, *ratios]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(keys) + "---:|" * (len(head) - len(keys)),
    ]
    for key, sps in table.items():
        cells = [str(k) for k in key] + [f"{sps[s]:,.0f}" if s in sps else "-" for s in subjects]
        best = max((sps[s] for s in peers if s in sps), default=None)
        if peers:
            cells += [f"{sps[s] / best:.2f}x" if best and s in sps else "-" for s in ours]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(
    cases: Sequence[Case],
    description: str,
    sizes: Sequence[int],
    steps: int,
    out: str,
    packages: Sequence[str] = (),
    keys: Sequence[str] = (),
    argv: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Parse the command line, run the cases, write the result file, print the table."""
    args = parser(description, sizes, steps, out).parse_args(argv)
    if args.only:
        cases = [c for c in cases if any(o in str(v) for o in args.only for v in c.labels.values())]
    conds = results.conditions(packages)
    print(f"{description}\n{conds['device']}, {conds['cpu']}, load {conds['load_average']}")
    if args.num_envs is not None:  # the command's sizes for every case
        cases = [Case(c.labels, c.build, c.note) for c in cases]

    def save(rows: list[dict[str, Any]]) -> Any:
        return results.write(args.out, rows, conds)

    rows = run(cases, args.num_envs or sizes, args.steps, args.repeats, save=save)
    conds["load_average_after"] = results.conditions(packages)["load_average"]
    path = save(rows)
    print(markdown(rows, keys or list(cases[0].labels) if cases else []))
    print(f"wrote {path}")
    return rows
