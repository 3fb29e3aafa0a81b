"""Scene arrays for :class:`~hordax.envs.driving.env.Drive`: shipped maps and procedural
layouts, built on the host once (the env stacks them, padded, into a ``MapScene`` batch)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hordax.envs.driving.maps import MAPS, load_map
from hordax.envs.driving.procedural import GENERATORS
from hordax.envs.driving.roadgraph import MapArrays, build_map


def scene_names() -> list[str]:
    """Every name ``Drive(scenes=...)`` accepts."""
    return sorted(MAPS) + sorted(GENERATORS)


def map_arrays(
    names: Sequence[str],
    num_variants: int = 8,
    seed: int = 0,
    held_out: bool = False,
    field: str = "scenes",
) -> list[MapArrays]:
    """The host arrays of each named scene (a procedural name gives ``num_variants``).

    ``held_out`` draws the procedural layouts from a second seed stream, so a kind named in
    both a training and a held-out list gives different layouts (``Drive(test_scenes=...)``).
    """
    if not names:
        raise ValueError(f"{field}=(): give at least one map or procedural kind")
    out = []
    for name in names:
        if name in MAPS:
            out.append(load_map(name))
        elif name in GENERATORS:
            stream = [seed, sorted(GENERATORS).index(name)] + ([1] if held_out else [])
            rng = np.random.default_rng(stream)
            for v in range(num_variants):
                lanelets, areas = GENERATORS[name](rng)
                out.append(build_map(f"{name}-{v}", lanelets, areas=areas, speed_limit=10.0))
        else:
            raise ValueError(
                f"{field}: {name!r} is not a shipped map or procedural kind; "
                f"allowed: {scene_names()}"
            )
    return out
