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


# --------------------------------------------------------------------------------------------
# a scripted solver on the minigrid side, so that replays also reach success


def _passable(cell) -> bool:
    return cell is None or cell.type == "goal" or (cell.type == "door" and not cell.is_locked)


def _plan_first_action(env, done) -> int | None:
    """BFS over (x, y, dir) with minigrid moves; the first hordax action towards ``done``.

    Closed (unlocked) doors count as passable; the executor toggles them open first.
    ``done(x, y, d)`` tests a pose. Returns None when no pose satisfies it.
    """
    from collections import deque

    start = (int(env.agent_pos[0]), int(env.agent_pos[1]), int(env.agent_dir))
    if done(*start):
        return None
    seen = {start: None}
    queue = deque([start])
    vec = ((1, 0), (0, 1), (-1, 0), (0, -1))  # minigrid dir -> (dx, dy)
    while queue:
        x, y, d = queue.popleft()
        moves = [(world.TURN_LEFT, (x, y, (d - 1) % 4)), (world.TURN_RIGHT, (x, y, (d + 1) % 4))]
        fx, fy = x + vec[d][0], y + vec[d][1]
        if 0 <= fx < env.width and 0 <= fy < env.height and _passable(env.grid.get(fx, fy)):
            moves.append((world.FORWARD, (fx, fy, d)))
        for action, nxt in moves:
            if nxt in seen:
                continue
            seen[nxt] = (x, y, d, action)
            if done(*nxt):
                node, first = nxt, action
                while seen[node] is not None:
                    px, py, pd, a = seen[node]
                    first, node = a, (px, py, pd)
                return first
            queue.append(nxt)
    return None


def _front(x, y, d):
    vec = ((1, 0), (0, 1), (-1, 0), (0, -1))
    return x + vec[d][0], y + vec[d][1]


def _find(env, kind, locked=None):
    for x in range(env.width):
        for y in range(env.height):
            c = env.grid.get(x, y)
            if c is not None and c.type == kind and (locked is None or c.is_locked == locked):
                return (x, y)
    return None


def solver_action(env, rng, eps: float = 0.15) -> int:
    """One hordax action of a noisy scripted solver for minigrid's classic layouts."""
    if rng.random() < eps:
        return int(rng.integers(0, 6))
    name = type(env).__name__
    carrying = env.carrying.type if env.carrying is not None else None
    fx, fy = _front(int(env.agent_pos[0]), int(env.agent_pos[1]), int(env.agent_dir))
    front = env.grid.get(fx, fy)
    if front is not None and front.type == "door" and not front.is_open and not front.is_locked:
        return world.TOGGLE  # walk through closed doors
    goal_face = None
    if name in ("DoorKeyEnv", "UnlockEnv", "UnlockPickupEnv", "LockedRoomEnv"):
        door = _find(env, "door", locked=True)
        if door is not None and carrying != "key":
            goal_face = _find(env, "key")
            if goal_face is not None and (fx, fy) == goal_face:
                return world.PICK_UP
        elif door is not None:
            if (fx, fy) == door:
                return world.TOGGLE
            goal_face = door
    if goal_face is None and name == "UnlockPickupEnv":
        if carrying == "key":
            if front is None:
                return world.PUT_DOWN
            action = _plan_first_action(env, lambda x, y, d: env.grid.get(*_front(x, y, d)) is None)
            return world.TURN_LEFT if action is None else action
        box = _find(env, "box")
        if box is not None and (fx, fy) == box:
            return world.PICK_UP
        goal_face = box
    if goal_face is not None:
        action = _plan_first_action(env, lambda x, y, d: _front(x, y, d) == goal_face)
        return world.TURN_LEFT if action is None else action
    target = _find(env, "goal")
    if target is None:
        return int(rng.integers(0, 6))
    action = _plan_first_action(env, lambda x, y, d: (x, y) == target)
    return world.TURN_LEFT if action is None else action
