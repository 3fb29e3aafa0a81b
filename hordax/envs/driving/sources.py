"""Scene batches for :class:`~hordax.envs.driving.env.Drive`: shipped maps and procedural
layouts, built on the host once and stacked (padded) into a :class:`MapScene` batch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hordax.envs.driving.maps import MAPS, load_map
from hordax.envs.driving.procedural import GENERATORS
from hordax.envs.driving.roadgraph import MapArrays, build_map
from hordax.envs.driving.scene import MapScene, stack_maps


def scene_names() -> list[str]:
    """Every name ``Drive(scenes=...)`` accepts."""
    return sorted(MAPS) + sorted(GENERATORS)


def map_arrays(names: Sequence[str], num_variants: int = 8, seed: int = 0) -> list[MapArrays]:
    """The host arrays of each named scene (a procedural name gives ``num_variants``)."""
    if not names:
        raise ValueError("scenes=(): give at least one map or procedural kind")
    out = []
    for name in names:
        if name in MAPS:
            out.append(load_map(name))
        elif name in GENERATORS:
            rng = np.random.default_rng([seed, sorted(GENERATORS).index(name)])
            for v in range(num_variants):
                lanelets, areas = GENERATORS[name](rng)
                out.append(build_map(f"{name}-{v}", lanelets, areas=areas, speed_limit=10.0))
        else:
            raise ValueError(
                f"scenes: {name!r} is not a shipped map or procedural kind; "
                f"allowed: {scene_names()}"
            )
    return out


def map_scenes(
    names: Sequence[str],
    num_variants: int = 8,
    seed: int = 0,
    min_roads: int = 1,
    min_slots: int = 1,
) -> MapScene:
    """The stacked batch (at least ``min_roads`` road rows and ``min_slots`` slot rows)."""
    return stack_maps(map_arrays(names, num_variants, seed), min_roads, min_slots)
