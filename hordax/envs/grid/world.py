"""Grid-world core: tiles, colours, the six actions and the egocentric view (pure JAX).

A grid is ``uint8[H, W, 2]``: channel 0 the tile id, channel 1 the colour id. Positions are
``int32[2] = (row, col)``, row 0 at the top. Directions follow MiniGrid:
``0 = east (col + 1), 1 = south (row + 1), 2 = west, 3 = north``. The carried object is
``uint8[2] = (tile, colour)``, ``(EMPTY, EMPTY)`` when the hands are free.

Semantics are MiniGrid's (``minigrid.minigrid_env.MiniGridEnv.step``), with MiniGrid's empty
cell (``None``) written as ``FLOOR``:

- forward: move onto the front cell if it is walkable (floor, goal, open door);
- turn left / right: ``dir - 1`` / ``dir + 1`` modulo 4;
- pick up: the front object (ball, square, pyramid, key, hex, star, box) goes to the free hands;
- put down: the carried object goes onto the front cell if it is plain floor;
- toggle: a locked door opens with a key of the same colour in hand, a closed door opens, an
  open door closes, a box opens and vanishes (MiniGrid's empty ``Box.toggle``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

# tiles -------------------------------------------------------------------------------------
EMPTY = 0  # nothing: unseen cells in the view, "no object" in the hands
FLOOR = 1
WALL = 2
BALL = 3
SQUARE = 4
PYRAMID = 5
GOAL = 6
KEY = 7
DOOR_LOCKED = 8
DOOR_CLOSED = 9
DOOR_OPEN = 10
HEX = 11
STAR = 12
BOX = 13  # MiniGrid's box: like SQUARE, but toggling it opens (removes) it
NUM_TILES = 14
TILE_NAMES = [
    "empty",
    "floor",
    "wall",
    "ball",
    "square",
    "pyramid",
    "goal",
    "key",
    "door_locked",
    "door_closed",
    "door_open",
    "hex",
    "star",
    "box",
]

# colours -----------------------------------------------------------------------------------
COLOR_NONE = 0
RED, GREEN, BLUE, PURPLE, YELLOW, GREY = 1, 2, 3, 4, 5, 6
BLACK, ORANGE, WHITE, BROWN, PINK = 7, 8, 9, 10, 11
NUM_COLORS = 12
COLOR_NAMES = [
    "none",
    "red",
    "green",
    "blue",
    "purple",
    "yellow",
    "grey",
    "black",
    "orange",
    "white",
    "brown",
    "pink",
]
#: MiniGrid's six colours (``minigrid.core.constants.COLOR_NAMES``) in its order.
MINIGRID_COLORS = (RED, GREEN, BLUE, PURPLE, YELLOW, GREY)

# actions -----------------------------------------------------------------------------------
FORWARD, TURN_LEFT, TURN_RIGHT, PICK_UP, PUT_DOWN, TOGGLE = range(6)
NUM_ACTIONS = 6
ACTION_NAMES = ("forward", "turn_left", "turn_right", "pick_up", "put_down", "toggle")

#: (d_row, d_col) of a step in each direction (east, south, west, north).
DIR_VEC = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]], np.int32)

_tile_set = lambda *ts: np.isin(np.arange(NUM_TILES), ts)  # noqa: E731
WALKABLE = _tile_set(FLOOR, GOAL, DOOR_OPEN)
PICKABLE = _tile_set(BALL, SQUARE, PYRAMID, KEY, HEX, STAR, BOX)
#: tiles that block the view (MiniGrid ``see_behind`` is False).
OPAQUE_TILES = (WALL, DOOR_LOCKED, DOOR_CLOSED)


def is_any(tile: jax.Array, tiles: tuple[int, ...]) -> jax.Array:
    """``bool``, shaped like ``tile``: the tile is one of ``tiles`` (compares, no gather)."""
    return functools.reduce(jnp.logical_or, [tile == t for t in tiles])


def cell(tile: int, color: int = COLOR_NONE) -> jax.Array:
    """A ``uint8[2]`` cell ``(tile, colour)``."""
    return jnp.array([tile, color], jnp.uint8)


def front_pos(pos: jax.Array, direction: jax.Array) -> jax.Array:
    """``int32[2]`` cell in front of an agent at ``pos`` facing ``direction``."""
    return pos + jnp.asarray(DIR_VEC)[direction]


def get_cell(grid: jax.Array, pos: jax.Array) -> jax.Array:
    """``grid[pos]`` with cells outside the grid read as ``(WALL, NONE)``."""
    h, w = grid.shape[:2]
    inside = (pos[0] >= 0) & (pos[0] < h) & (pos[1] >= 0) & (pos[1] < w)
    value = grid[jnp.clip(pos[0], 0, h - 1), jnp.clip(pos[1], 0, w - 1)]
    return jnp.where(inside, value, jnp.array([WALL, COLOR_NONE], grid.dtype))


def step_agent(
    grid: jax.Array, pos: jax.Array, direction: jax.Array, carry: jax.Array, action: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Apply one action (int, clipped to ``[0, 5]``) with MiniGrid semantics.

    Args:
        grid: ``uint8[H, W, 2]``; pos: ``int32[2]``; direction: ``int32[]``;
        carry: ``uint8[2]``; action: ``int32[]``.

    Returns:
        ``(grid, pos, direction, carry)`` after the action.
    """
    h, w = grid.shape[:2]
    action = jnp.clip(jnp.asarray(action, jnp.int32), 0, NUM_ACTIONS - 1)
    fwd = front_pos(pos, direction)
    inside = (fwd[0] >= 0) & (fwd[0] < h) & (fwd[1] >= 0) & (fwd[1] < w)
    front = get_cell(grid, fwd)
    tile, color = front[0], front[1]
    hands_free = carry[0] == EMPTY

    move = (action == FORWARD) & jnp.asarray(WALKABLE)[tile] & inside
    new_pos = jnp.where(move, fwd, pos)
    turn = jnp.where(action == TURN_LEFT, 3, jnp.where(action == TURN_RIGHT, 1, 0))
    new_dir = (direction + turn) % 4

    pick = (action == PICK_UP) & jnp.asarray(PICKABLE)[tile] & hands_free & inside
    drop = (action == PUT_DOWN) & (tile == FLOOR) & ~hands_free & inside
    toggle = (action == TOGGLE) & inside
    unlock = toggle & (tile == DOOR_LOCKED) & (carry[0] == KEY) & (carry[1] == color)
    open_door = toggle & (tile == DOOR_CLOSED)
    close_door = toggle & (tile == DOOR_OPEN)
    open_box = toggle & (tile == BOX)

    floor = jnp.array([FLOOR, COLOR_NONE], jnp.uint8)
    new_front = jnp.select(
        [pick | open_box, drop, unlock | open_door, close_door],
        [
            floor,
            carry,
            jnp.stack([jnp.uint8(DOOR_OPEN), color]),
            jnp.stack([jnp.uint8(DOOR_CLOSED), color]),
        ],
        front,
    )
    r, c = jnp.clip(fwd[0], 0, h - 1), jnp.clip(fwd[1], 0, w - 1)
    grid = grid.at[r, c].set(jnp.where(inside, new_front, grid[r, c]))
    empty = jnp.array([EMPTY, COLOR_NONE], jnp.uint8)
    new_carry = jnp.where(pick, front, jnp.where(drop, empty, carry))
    return grid, new_pos, new_dir.astype(jnp.int32), new_carry


def view_coords(pos: jax.Array, direction: jax.Array, view_size: int) -> jax.Array:
    """World ``(row, col)`` of each view cell, ``int32[V, V, 2]``.

    View cell ``(i, j)``: the agent sits at ``(V - 1, V // 2)`` looking towards row 0, so
    row ``i`` is ``V - 1 - i`` cells ahead and column ``j`` is ``j - V // 2`` cells to the
    right (MiniGrid's ``gen_obs`` image transposed to ``(row, col)``).
    """
    ahead = view_size - 1 - jnp.arange(view_size)  # [V] by view row
    right = jnp.arange(view_size) - view_size // 2  # [V] by view col
    fwd = jnp.asarray(DIR_VEC)[direction]
    rgt = jnp.asarray(DIR_VEC)[(direction + 1) % 4]
    return pos + ahead[:, None, None] * fwd + right[None, :, None] * rgt


def _sweep(lit: jax.Array, reach: jax.Array) -> jax.Array:
    """One sideways sweep: cell ``j`` is lit if some lit ``k`` with ``reach[..., k, j]`` is
    see-through all the way from ``k`` to ``j - 1`` (exclusive of ``j``)."""
    return lit | jnp.any(lit[..., :, None] & reach, axis=-2)


def light_row(lit: jax.Array, see: jax.Array) -> tuple[jax.Array, jax.Array]:
    """MiniGrid's ``process_vis`` on one view row: ``(visible, lit_ahead)``, both ``bool[..., V]``.

    ``lit`` (``bool[..., V]``) marks the cells lit from the row behind, ``see`` the row's
    see-through cells. Light spreads sideways through see-through cells (left-to-right,
    then right-to-left), each sweep one vectorized step: ``k`` lights ``j > k`` when no
    opaque cell lies in ``[k, j)``. Every lit, see-through cell lights the row ahead: the
    same column and the neighbour in the sweep's direction.
    """
    v = see.shape[-1]
    idx = jnp.arange(v)
    blocked = (~see).astype(jnp.int32)
    # opaque cells strictly before / after each cell: k reaches j (k < j) through
    # see-through cells [k, j) iff before[k] == before[j]; leftwards iff after[k] == after[j]
    before = jnp.cumsum(blocked, axis=-1) - blocked
    after = jnp.flip(jnp.cumsum(jnp.flip(blocked, -1), axis=-1), -1) - blocked
    right_of = (idx[:, None] < idx[None, :]) & (before[..., :, None] == before[..., None, :])
    left_of = (idx[:, None] > idx[None, :]) & (after[..., :, None] == after[..., None, :])
    m_ltr = _sweep(lit, right_of)
    m = _sweep(m_ltr, left_of)
    a = m_ltr & see & (idx < v - 1)  # the left-to-right sweep stops at V - 2
    b = m & see & (idx > 0)  # the right-to-left sweep stops at 1
    # shifts without wrap-around: a[V - 1] and b[0] are False
    ahead = a | b | jnp.roll(a, 1, axis=-1) | jnp.roll(b, -1, axis=-1)
    return m, ahead


#: the largest view whose rows go through a lookup table (``4**V`` entries of int32)
LUT_MAX_VIEW = 9


@functools.cache
def _row_table(v: int) -> np.ndarray:
    """``int32[2**V * 2**V]``: at ``see_bits * 2**V + lit_bits``, ``light_row``'s result
    packed as ``visible_bits | lit_ahead_bits << V`` (bit ``j`` = view column ``j``)."""
    n = 1 << v
    bits = (np.arange(n)[:, None] >> np.arange(v)) & 1  # [2**V, V]
    see = np.repeat(bits, n, axis=0).astype(bool)  # major: see_bits
    lit = np.tile(bits, (n, 1)).astype(bool)  # minor: lit_bits
    with jax.ensure_compile_time_eval():
        m, ahead = (np.asarray(x) for x in light_row(jnp.asarray(lit), jnp.asarray(see)))
    weights = 1 << np.arange(v)
    return ((m @ weights) | ((ahead @ weights) << v)).astype(np.int32)


def visibility(opaque: jax.Array) -> jax.Array:
    """MiniGrid's ``process_vis`` shadow casting on an egocentric ``bool[V, V]`` opacity map.

    Starting from the agent's cell (bottom row, centre), rows are lit one after another
    towards row 0 by :func:`light_row`. Views up to :data:`LUT_MAX_VIEW` wide read each row
    from a table of every (opacity, light) pair, one gather per row (:func:`visibility_table`);
    wider views compute each row (:func:`visibility_scan`). Returns ``bool[V, V]``.
    """
    if opaque.shape[0] <= LUT_MAX_VIEW:
        return visibility_table(opaque)
    return visibility_scan(opaque)


def visibility_scan(opaque: jax.Array) -> jax.Array:
    """:func:`visibility` with :func:`light_row` computed row by row in a scan."""
    v = opaque.shape[0]

    def row(lit, see):
        m, ahead = light_row(lit, see)
        return ahead, m

    start = jnp.arange(v) == v // 2  # the agent's cell lights its own row (the last one)
    return jax.lax.scan(row, start, ~opaque, reverse=True)[1]


def visibility_table(opaque: jax.Array) -> jax.Array:
    """:func:`visibility` with each row read from :func:`_row_table` (``V <= LUT_MAX_VIEW``)."""
    v = opaque.shape[0]
    table = jnp.asarray(_row_table(v))
    weights = jnp.asarray(1 << np.arange(v), jnp.int32)
    see_bits = jnp.sum(jnp.where(opaque, 0, weights), axis=-1)  # int32[V]: bit j = column j
    lit = jnp.int32(1 << (v // 2))  # the agent's cell lights its own row (the last one)
    rows = []
    for i in reversed(range(v)):
        packed = table[see_bits[i] * (1 << v) + lit]
        rows.append(packed & ((1 << v) - 1))
        lit = packed >> v
    row_bits = jnp.stack(rows[::-1])  # int32[V]
    return ((row_bits[:, None] >> jnp.arange(v)) & 1).astype(bool)


def egocentric_view(
    grid: jax.Array,
    pos: jax.Array,
    direction: jax.Array,
    carry: jax.Array,
    view_size: int,
    see_through_walls: bool = False,
) -> jax.Array:
    """The agent's partial view ``uint8[V, V, 2]`` (MiniGrid ``gen_obs`` conventions).

    Cells outside the grid read as walls; cells hidden behind walls and closed doors read
    ``(EMPTY, NONE)``; the agent's own cell ``(V - 1, V // 2)`` shows the carried object, or
    ``(FLOOR, NONE)`` with free hands.
    """
    coords = view_coords(pos, direction, view_size)
    h, w = grid.shape[:2]
    inside = (
        (coords[..., 0] >= 0) & (coords[..., 0] < h) & (coords[..., 1] >= 0) & (coords[..., 1] < w)
    )
    cells = grid[jnp.clip(coords[..., 0], 0, h - 1), jnp.clip(coords[..., 1], 0, w - 1)]
    wall = jnp.array([WALL, COLOR_NONE], jnp.uint8)
    cells = jnp.where(inside[..., None], cells, wall)
    me = jnp.where(carry[0] == EMPTY, jnp.array([FLOOR, COLOR_NONE], jnp.uint8), carry)
    cells = cells.at[view_size - 1, view_size // 2].set(me)
    if see_through_walls:
        return cells
    # MiniGrid computes visibility before it puts the carried object in the agent's cell;
    # the cell under the agent is always see-through, so this order gives the same mask.
    vis = visibility(is_any(cells[..., 0], OPAQUE_TILES))
    return jnp.where(vis[..., None], cells, jnp.zeros_like(cells))
