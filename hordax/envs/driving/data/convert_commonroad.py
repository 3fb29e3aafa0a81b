"""Convert a few CommonRoad lanelet maps of real recording sites into small ``.npz`` arrays.

Run once (the outputs ship in this folder)::

    python3 -m venv /work/venvs/driving-convert
    /work/venvs/driving-convert/bin/pip install --no-deps commonroad-dataset-converter==2025.1.0
    python hordax/envs/driving/data/convert_commonroad.py \
        --crdata /work/venvs/driving-convert/lib/python3.11/site-packages/crdata

The maps come from the ``commonroad-dataset-converter`` package (BSD-3-Clause, Technical
University of Munich; ``LICENSE-commonroad-dataset-converter.txt`` beside this file): the
lanelet maps under the INTERACTION, inD, rounD and exiD recordings (maps only; no recorded
trajectories ship in the package). The package itself is installed ``--no-deps`` (its
dependencies pin numpy < 2 and commonroad-io < 2025, whose reader needs protobuf 3.20); the
XML is plain, so this script reads it with ElementTree.

For each map it writes ``commonroad/<benchmark id>.npz`` (every lanelet exactly as in the
XML: ids, left/right bound points, successors, predecessors, left/right neighbours with
their driving direction, lanelet types and road users) and copies the source XML gzipped
to ``commonroad/<benchmark id>.xml.gz`` so that ``tests/envs/driving/test_commonroad_maps.py``
can parse it independently and compare. ``hordax.envs.driving.maps`` builds the env's road
graph from the ``.npz``.
"""

from __future__ import annotations

import argparse
import gzip
import os
import xml.etree.ElementTree as ET

import numpy as np

from hordax.envs.driving.maps import MAPS  # the shipped maps: benchmark id -> (dataset, ...)


def _source(name: str, dataset: str) -> str:
    """The map's XML under ``crdata/datasets`` (every dataset keeps them in ``maps/``)."""
    return f"{dataset}/maps/{name}.xml"


def _points(bound: ET.Element) -> np.ndarray:
    return np.array(
        [[float(p.findtext("x")), float(p.findtext("y"))] for p in bound.findall("point")],
        np.float64,
    ).reshape(-1, 2)


def _ragged(lists: list[list]) -> tuple[np.ndarray, np.ndarray]:
    """(flat values, offsets [N + 1])."""
    offsets = np.cumsum([0] + [len(x) for x in lists]).astype(np.int32)
    flat = [v for x in lists for v in x]
    return np.asarray(flat, np.int64).reshape(-1), offsets


def convert(xml_bytes: bytes, dataset: str) -> dict[str, np.ndarray]:
    root = ET.fromstring(xml_bytes)
    lanelets = root.findall("lanelet")
    ids, lefts, rights, succ, pred, kinds, users = [], [], [], [], [], [], []
    adj = {"left": ([], []), "right": ([], [])}
    for ll in lanelets:
        left, right = _points(ll.find("leftBound")), _points(ll.find("rightBound"))
        if len(left) != len(right) or len(left) < 2:
            raise ValueError(
                f"lanelet {ll.get('id')}: left/right bounds have {len(left)}/{len(right)} "
                "points (CommonRoad requires equal counts >= 2)"
            )
        ids.append(int(ll.get("id")))
        lefts.append(left)
        rights.append(right)
        succ.append([int(e.get("ref")) for e in ll.findall("successor")])
        pred.append([int(e.get("ref")) for e in ll.findall("predecessor")])
        for side in ("left", "right"):
            e = ll.find(f"adjacent{side.capitalize()}")
            adj[side][0].append(-1 if e is None else int(e.get("ref")))
            adj[side][1].append(e is not None and e.get("drivingDir") == "same")
        kinds.append(",".join(sorted(e.text.strip() for e in ll.findall("laneletType"))))
        tags = ll.findall("userOneWay") + ll.findall("userBidirectional")
        users.append(",".join(sorted(e.text.strip() for e in tags)))
    succ_ids, succ_off = _ragged(succ)
    pred_ids, pred_off = _ragged(pred)
    return {
        "benchmark_id": np.array(root.get("benchmarkID")),
        "dataset": np.array(dataset),
        "lanelet_id": np.asarray(ids, np.int64),
        "point_offset": np.cumsum([0] + [len(x) for x in lefts]).astype(np.int32),
        "left": np.concatenate(lefts),
        "right": np.concatenate(rights),
        "successor": succ_ids,
        "successor_offset": succ_off,
        "predecessor": pred_ids,
        "predecessor_offset": pred_off,
        "adjacent_left": np.asarray(adj["left"][0], np.int64),
        "adjacent_left_same": np.asarray(adj["left"][1], bool),
        "adjacent_right": np.asarray(adj["right"][0], np.int64),
        "adjacent_right_same": np.asarray(adj["right"][1], bool),
        "lanelet_type": np.asarray(kinds),
        "users": np.asarray(users),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crdata", required=True, help="the installed crdata package directory")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "commonroad"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, (dataset, *_) in MAPS.items():
        with open(os.path.join(args.crdata, "datasets", _source(name, dataset)), "rb") as f:
            xml = f.read()
        # the map's name is its file name (rounD's Kackertstrasse file says ZAM_MUC-1 inside)
        arrays = {"name": np.array(name), **convert(xml, dataset)}
        np.savez_compressed(os.path.join(args.out, f"{name}.npz"), **arrays)
        # mtime=0: the same bytes on every run
        path = os.path.join(args.out, f"{name}.xml.gz")
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(xml)
        print(f"{name}: {len(arrays['lanelet_id'])} lanelets, {len(arrays['left'])} points")


if __name__ == "__main__":
    main()
