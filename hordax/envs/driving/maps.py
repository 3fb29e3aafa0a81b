"""The shipped real road maps: CommonRoad lanelet maps of real recording sites.

Nine maps converted once from ``commonroad-dataset-converter`` 2025.1.0 (BSD-3-Clause,
Technical University of Munich) by ``data/convert_commonroad.py``; the ``.npz`` files hold
every lanelet as in the XML (also shipped, gzipped, for the geometry test). The maps are
those of the INTERACTION, rounD, inD and exiD recordings; **no recorded trajectories ship**
(none are in any package reachable offline), so agents and traffic on them are generated.

A lanelet is drivable by cars unless its type is one of :data:`NOT_DRIVABLE` or its road
users are listed and include neither ``car`` nor ``vehicle``.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from hordax.envs.driving.roadgraph import Lanelet, MapArrays, build_map

DATA_DIR = os.path.join(os.path.dirname(__file__), "data", "commonroad")

#: map name -> (dataset, what it is, speed limit in m/s: background traffic's desired speed)
MAPS = {
    "USA_Intersection-1": ("INTERACTION", "signalized 4-way intersection, USA", 11.0),
    "USA_Roundabout-1": ("INTERACTION", "roundabout, USA", 9.0),
    "DEU_Merging-1": ("INTERACTION", "two-lane merge, Germany", 11.0),
    "DEU_Kackertstrasse-1": ("rounD", "roundabout, Aachen (Kackertstrasse)", 9.0),
    "DEU_AachenBendplatz-1": ("inD", "urban intersection, Aachen (Bendplatz)", 11.0),
    "DEU_AachenBrand-1": ("exiD", "motorway exit and entry, Aachen-Brand", 25.0),
    "DEU_Thiergarten-1": ("rounD", "roundabout, Aachen (Thiergarten)", 9.0),
    "DEU_Neuweiler-1": ("rounD", "two-lane roundabout, Aachen (Neuweiler)", 9.0),
    "DEU_Roundabout-1": ("INTERACTION", "roundabout, Germany", 9.0),
}

NOT_DRIVABLE = {"sidewalk", "crosswalk", "bicycleLane", "border", "shoulder", "restricted"}


def map_path(name: str, ext: str = "npz") -> str:
    if name not in MAPS:
        raise ValueError(f"map={name!r}: unknown; shipped maps are {sorted(MAPS)}")
    return os.path.join(DATA_DIR, f"{name}.{ext}")


def load_lanelets(name: str) -> list[Lanelet]:
    """The map's lanelets from its ``.npz`` (coordinates as in the XML)."""
    z = np.load(map_path(name))
    ids = [int(i) for i in z["lanelet_id"]]
    index = {lid: k for k, lid in enumerate(ids)}
    off, soff, poff = z["point_offset"], z["successor_offset"], z["predecessor_offset"]
    out = []
    for k in range(len(ids)):
        kinds = set(filter(None, str(z["lanelet_type"][k]).split(",")))
        users = set(filter(None, str(z["users"][k]).split(",")))
        cars = not users or bool(users & {"car", "vehicle"})
        out.append(
            Lanelet(
                left=z["left"][off[k] : off[k + 1]],
                right=z["right"][off[k] : off[k + 1]],
                successors=[index[s] for s in z["successor"][soff[k] : soff[k + 1]] if s in index],
                predecessors=[
                    index[s] for s in z["predecessor"][poff[k] : poff[k + 1]] if s in index
                ],
                drivable=cars and not (kinds & NOT_DRIVABLE),
                crosswalk="crosswalk" in kinds,
            )
        )
    return out


@functools.cache
def load_map(name: str) -> MapArrays:
    """The env's arrays of a shipped map (built once per process)."""
    return build_map(name, load_lanelets(name), speed_limit=MAPS[name][2])
