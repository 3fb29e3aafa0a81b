"""Drive Farama ``minigrid`` (the reference) and translate its state into hordax's grid state.

Convention maps (hordax <- minigrid): position ``(row, col) = (y, x)``; direction the same
(0 east, 1 south, 2 west, 3 north); actions hordax ``forward, left, right, pick up, put down,
toggle = 0..5`` are minigrid ``2, 0, 1, 3, 4, 5``; colours ``hordax = minigrid + 1``; minigrid's
empty cell is ``FLOOR``, its unseen cell ``EMPTY``.
"""

from __future__ import annotations

import numpy as np
from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX

from hordax.envs.grid import rules, world

#: hordax action -> minigrid action
TO_MINIGRID_ACTION = np.array([2, 0, 1, 3, 4, 5])

_OBJ = {
    "unseen": world.EMPTY,
    "empty": world.FLOOR,
    "wall": world.WALL,
    "floor": world.FLOOR,
    "key": world.KEY,
    "ball": world.BALL,
    "box": world.BOX,
    "goal": world.GOAL,
}
_DOOR_BY_STATE = {0: world.DOOR_OPEN, 1: world.DOOR_CLOSED, 2: world.DOOR_LOCKED}


def _tables():
    """Lookup ``[obj, colour, state] -> (tile, colour)`` as two int arrays."""
    tile = np.full((len(OBJECT_TO_IDX), len(COLOR_TO_IDX), 3), -1, np.int64)
    color = np.zeros_like(tile)
    for name, oi in OBJECT_TO_IDX.items():
        for ci in range(len(COLOR_TO_IDX)):
            for st in range(3):
                if name == "door":
                    tile[oi, ci, st] = _DOOR_BY_STATE[st]
                elif name in _OBJ:
                    tile[oi, ci, st] = _OBJ[name]
                keep = name in ("door", "key", "ball", "box", "goal")
                color[oi, ci, st] = ci + 1 if keep else world.COLOR_NONE
    return tile, color


_TILE, _COLOR = _tables()


def translate_encoding(enc: np.ndarray) -> np.ndarray:
    """minigrid ``encode()`` ``[X, Y, 3]`` (x, y) -> hordax ``uint8[Y, X, 2]`` (row, col)."""
    enc = np.asarray(enc).astype(np.int64)
    tile = _TILE[enc[..., 0], enc[..., 1], enc[..., 2]]
    if np.any(tile < 0):
        raise ValueError("minigrid object without a hordax tile (lava, agent?)")
    color = _COLOR[enc[..., 0], enc[..., 1], enc[..., 2]]
    return np.stack([tile, color], -1).transpose(1, 0, 2).astype(np.uint8)


def carry_of(env) -> np.ndarray:
    """The carried object as hordax ``uint8[2]``."""
    if env.carrying is None:
        return np.zeros(2, np.uint8)
    return translate_encoding(np.array(env.carrying.encode())[None, None])[0, 0]


def goal_of(env) -> np.ndarray:
    """hordax goal encoding equivalent to the minigrid env's success test."""
    name = type(env).__name__
    if name in ("EmptyEnv", "FourRoomsEnv", "DoorKeyEnv", "LockedRoomEnv"):
        return rules.goal(rules.G_AGENT_ON_TILE, world.GOAL, world.GREEN)
    if name == "UnlockEnv":
        x, y = env.door.cur_pos
        return rules.goal(
            rules.G_TILE_ON_POSITION, world.DOOR_OPEN, COLOR_TO_IDX[env.door.color] + 1, y, x
        )
    if name in ("UnlockPickupEnv", "BlockedUnlockPickupEnv"):
        return rules.goal(rules.G_AGENT_HOLD, world.BOX, COLOR_TO_IDX[env.obj.color] + 1)
    raise ValueError(f"no goal translation for {name}")


def snapshot(env) -> dict[str, np.ndarray]:
    """hordax-convention state of a minigrid env: grid, pos, dir, carry."""
    x, y = env.agent_pos
    return {
        "grid": translate_encoding(env.grid.encode()),
        "pos": np.array([y, x], np.int32),
        "dir": np.int32(env.agent_dir),
        "carry": carry_of(env),
    }
