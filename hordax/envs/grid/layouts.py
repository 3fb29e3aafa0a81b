"""Classic MiniGrid layouts generated inside jit from a key (pure JAX).

Each generator is ``gen(key, height, width) -> Layout`` for static sizes and draws the same
distribution of layouts as the MiniGrid env of the same name (``minigrid`` 3.2.0), written
anew in JAX: uniform choices over the same cells, colours and directions. ``MIN_SIZE``
gives the smallest ``(height, width)`` each layout accepts.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import struct

from hordax.envs.grid import rules, world


@struct.dataclass
class Layout:
    """A generated episode start: grid, agent and task."""

    grid: jax.Array  # uint8[H, W, 2]
    pos: jax.Array  # int32[2] (row, col)
    dir: jax.Array  # int32[]
    goal: jax.Array  # int32[5] success condition (rules.check_goal)
    fail: jax.Array  # int32[5] failure condition (terminates with reward 0); kind 0 = none


def no_goal() -> jax.Array:
    return jnp.zeros(rules.GOAL_SIZE, jnp.int32)


def _goal(*values) -> jax.Array:
    return jnp.stack([jnp.asarray(v, jnp.int32) for v in values])


def walled(h: int, w: int) -> jax.Array:
    """``uint8[h, w, 2]`` floor surrounded by walls."""
    grid = jnp.zeros((h, w, 2), jnp.uint8).at[..., 0].set(world.WALL)
    return grid.at[1:-1, 1:-1, 0].set(world.FLOOR)


def put(grid: jax.Array, pos, tile, color=world.COLOR_NONE) -> jax.Array:
    """``grid`` with ``(tile, color)`` at ``pos = (row, col)``."""
    value = jnp.stack([jnp.asarray(tile, jnp.uint8), jnp.asarray(color, jnp.uint8)])
    return grid.at[pos[0], pos[1]].set(value)


def box_mask(h: int, w: int, top: int, left: int, rows: int, cols: int) -> jax.Array:
    """``bool[h, w]``: True in the rectangle ``[top, top + rows) x [left, left + cols)``."""
    r = jnp.arange(h)[:, None]
    c = jnp.arange(w)[None, :]
    return (r >= top) & (r < top + rows) & (c >= left) & (c < left + cols)


def smallest(x: jax.Array, k: int) -> jax.Array:
    """``int32[k]``: the indices of the ``k`` smallest entries of ``float[n]`` ``x``, smallest
    first, ties by index: ``argsort(x)[:k]`` (a stable sort), by ``lax.top_k`` which costs
    a fraction of a sort on CPU."""
    if k == 0:
        return jnp.zeros((0,), jnp.int32)
    return jax.lax.top_k(-x, k)[1].astype(jnp.int32)


def kth_true(flat: jax.Array, u: jax.Array) -> jax.Array:
    """``int32[]``: the index of the ``floor(u * count)``-th True entry of ``bool[n]``
    ``flat`` (0 when none is True), i.e. ``argmax(cumsum(flat) > k)``.

    The prefix sum runs in two levels, over ``ceil(sqrt(n))`` blocks and then inside the
    chosen block: a cumulative sum over all ``n`` cells costs several times more on CPU.
    """
    n = flat.shape[0]
    b = math.isqrt(n - 1) + 1 if n > 1 else 1  # ceil(sqrt(n))
    blocks = jnp.pad(flat.astype(jnp.int32), (0, b * b - n)).reshape(b, b)
    block_count = jnp.sum(blocks, axis=1)
    block_cum = jnp.cumsum(block_count)
    k = jnp.floor(u * block_cum[-1]).astype(jnp.int32)
    blk = jnp.argmax(block_cum > k)
    inside = jnp.cumsum(blocks[blk]) + (block_cum[blk] - block_count[blk])
    return (blk * b + jnp.argmax(inside > k)).astype(jnp.int32)


class Draws:
    """Uniform numbers drawn once per reset and handed out in order (at trace time).

    One ``jax.random.uniform`` call for the whole layout keeps the compiled reset small
    (every separate ``jax.random`` call compiles its own hash).
    """

    def __init__(self, key: jax.Array, n: int):
        self.u = jax.random.uniform(key, (n,), jnp.float32)
        self.n, self.i = n, 0

    def uniform(self) -> jax.Array:
        if self.i >= self.n:
            raise RuntimeError(f"layout needs more than {self.n} random numbers")
        self.i += 1
        return self.u[self.i - 1]

    def randint(self, low, high) -> jax.Array:
        """Uniform int in ``[low, high)`` (``int32[]``)."""
        low, high = jnp.asarray(low, jnp.int32), jnp.asarray(high, jnp.int32)
        v = low + jnp.floor(self.uniform() * (high - low)).astype(jnp.int32)
        return jnp.minimum(v, high - 1)

    def index(self, mask: jax.Array) -> jax.Array:
        """Uniform flat index among the True entries of ``mask`` (any shape): the ``k``-th
        True entry for ``k = floor(u * count)`` (the first entry when none is True)."""
        return kth_true(mask.reshape(-1), self.uniform())

    def permutation(self, n: int) -> jax.Array:
        """A uniform random permutation of ``range(n)``."""
        return smallest(jnp.stack([self.uniform() for _ in range(n)]), n)


def sample_cell(rng: Draws, mask: jax.Array) -> jax.Array:
    """A uniformly drawn ``(row, col)`` with ``mask`` True (``int32[2]``)."""
    flat = rng.index(mask)
    return jnp.stack([flat // mask.shape[1], flat % mask.shape[1]])


def free(grid: jax.Array) -> jax.Array:
    """``bool[H, W]``: plain floor cells (MiniGrid's empty cells)."""
    return grid[..., 0] == world.FLOOR


def sample_agent(rng: Draws, grid, mask, facing_nothing: bool = False):
    """Uniform ``(pos, dir)`` on free cells of ``mask``; MiniGrid's ``place_agent``.

    With ``facing_nothing`` (MiniGrid's ``RoomGrid.place_agent``) only poses whose front
    cell is floor or wall are drawn.
    """
    h, w = mask.shape
    ok = jnp.repeat((mask & free(grid))[..., None], 4, axis=-1)  # [H, W, 4]
    if facing_nothing:
        r = jnp.arange(h)[:, None, None] + jnp.asarray(world.DIR_VEC)[None, None, :, 0]
        c = jnp.arange(w)[None, :, None] + jnp.asarray(world.DIR_VEC)[None, None, :, 1]
        front = grid[jnp.clip(r, 0, h - 1), jnp.clip(c, 0, w - 1), 0]
        ok = ok & ((front == world.FLOOR) | (front == world.WALL))
    flat = rng.index(ok)
    pos = jnp.stack([flat // (4 * w), (flat // 4) % w]).astype(jnp.int32)
    return pos, (flat % 4).astype(jnp.int32)


def _not_at(h, w, pos):
    return ~((jnp.arange(h)[:, None] == pos[0]) & (jnp.arange(w)[None, :] == pos[1]))


def random_color(rng: Draws) -> jax.Array:
    """One of MiniGrid's six colours."""
    return jnp.asarray(world.MINIGRID_COLORS, jnp.uint8)[rng.randint(0, 6)]


def reach_goal(grid) -> jax.Array:
    del grid
    return _goal(rules.G_AGENT_ON_TILE, world.GOAL, world.GREEN, 0, 0)


# --------------------------------------------------------------------------------------------


def empty(key, h, w, random_start: bool = False) -> Layout:
    """MiniGrid Empty: goal in the bottom-right corner; agent at (1, 1) facing east."""
    grid = put(walled(h, w), (h - 2, w - 2), world.GOAL, world.GREEN)
    if random_start:
        pos, d = sample_agent(Draws(key, 1), grid, jnp.ones((h, w), bool))
    else:
        pos, d = jnp.array([1, 1], jnp.int32), jnp.int32(0)
    return Layout(grid, pos, d, reach_goal(grid), no_goal())


def four_rooms(key, h, w) -> Layout:
    """MiniGrid FourRooms: four rooms joined by one gap per inner wall; random agent and goal."""
    rh, rw = h // 2, w // 2
    rng = Draws(key, 6)
    grid = walled(h, w).at[:, rw, 0].set(world.WALL).at[rh, :, 0].set(world.WALL)
    floor = world.FLOOR
    gaps = [
        (rng.randint(1, rh), rw),  # upper half of the vertical wall
        (rh, rng.randint(1, rw)),  # left half of the horizontal wall
        (rh, rng.randint(rw + 1, w - 1)),  # right half
        (rng.randint(rh + 1, h - 1), rw),  # lower half
    ]
    for r, c in gaps:
        grid = grid.at[r, c, 0].set(floor)
    pos, d = sample_agent(rng, grid, jnp.ones((h, w), bool))
    goal_pos = sample_cell(rng, free(grid) & _not_at(h, w, pos))
    grid = put(grid, goal_pos, world.GOAL, world.GREEN)
    return Layout(grid, pos, d, reach_goal(grid), no_goal())


def door_key(key, h, w) -> Layout:
    """MiniGrid DoorKey: a wall splits the room; a yellow key opens the locked door."""
    rng = Draws(key, 4)
    grid = put(walled(h, w), (h - 2, w - 2), world.GOAL, world.GREEN)
    split = rng.randint(2, w - 2)
    cols = jnp.arange(w)[None, :]
    grid = grid.at[..., 0].set(jnp.where(cols == split, world.WALL, grid[..., 0]).astype(jnp.uint8))
    left = jnp.broadcast_to(cols < split, (h, w))
    pos, d = sample_agent(rng, grid, left)
    door_row = rng.randint(1, h - 2)
    grid = put(grid, (door_row, split), world.DOOR_LOCKED, world.YELLOW)
    key_pos = sample_cell(rng, free(grid) & left & _not_at(h, w, pos))
    grid = put(grid, key_pos, world.KEY, world.YELLOW)
    return Layout(grid, pos, d, reach_goal(grid), no_goal())


def _two_rooms(rng, h, w):
    """MiniGrid RoomGrid with one row of two rooms: walls and the door cell (row, col)."""
    room = w // 2  # room_size - 1
    grid = walled(h, w).at[:, room, 0].set(world.WALL)
    door_row = rng.randint(1, h - 1)
    return grid, (door_row, room), room


def _unlock_common(key, h, w, box: bool, blocked: bool):
    rng = Draws(key, 7)
    grid, door, room = _two_rooms(rng, h, w)
    cols = jnp.arange(w)[None, :]
    left = jnp.broadcast_to(cols < room, (h, w))
    right = jnp.broadcast_to(cols > room, (h, w))
    box_color = random_color(rng)
    if box:
        grid = put(grid, sample_cell(rng, free(grid) & right), world.BOX, box_color)
    door_color = random_color(rng)
    grid = put(grid, door, world.DOOR_LOCKED, door_color)
    if blocked:
        ball_color = random_color(rng)
        grid = put(grid, (door[0], door[1] - 1), world.BALL, ball_color)
    grid = put(grid, sample_cell(rng, free(grid) & left), world.KEY, door_color)
    pos, d = sample_agent(rng, grid, left, facing_nothing=True)
    return grid, pos, d, door, door_color, box_color


def unlock(key, h, w) -> Layout:
    """MiniGrid Unlock: open the locked door between two rooms (its key lies beside you)."""
    grid, pos, d, door, color, _ = _unlock_common(key, h, w, box=False, blocked=False)
    goal = _goal(rules.G_TILE_ON_POSITION, world.DOOR_OPEN, color, door[0], door[1])
    return Layout(grid, pos, d, goal, no_goal())


def unlock_pick_up(key, h, w, blocked: bool = False) -> Layout:
    """MiniGrid (Blocked)UnlockPickup: pick up the box behind the locked door."""
    grid, pos, d, _, _, box_color = _unlock_common(key, h, w, box=True, blocked=blocked)
    return Layout(grid, pos, d, _goal(rules.G_AGENT_HOLD, world.BOX, box_color, 0, 0), no_goal())


def locked_room(key, h, w) -> Layout:
    """MiniGrid LockedRoom: six side rooms with doors; fetch the key to the locked one."""
    rng = Draws(key, 12)
    lw, rwall = w // 2 - 2, w // 2 + 2
    third = h // 3
    grid = walled(h, w).at[:, lw, 0].set(world.WALL).at[:, rwall, 0].set(world.WALL)
    cols = jnp.arange(w)
    side = (cols < lw) | (cols > rwall)
    for n in range(3):
        grid = grid.at[n * third, :, 0].set(
            jnp.where(side, world.WALL, grid[n * third, :, 0]).astype(jnp.uint8)
        )
    # rooms: (top row, left col of the room's interior, door cell), left rooms first per row
    tops = [n * third for n in range(3) for _ in range(2)]
    lefts = [1 if s == 0 else rwall + 1 for _ in range(3) for s in range(2)]
    doors = [(n * third + 3, lw if s == 0 else rwall) for n in range(3) for s in range(2)]
    colors = jnp.asarray(world.MINIGRID_COLORS, jnp.uint8)[rng.permutation(6)]
    locked = rng.randint(0, 6)
    key_room = (locked + rng.randint(1, 6)) % 6  # any other room
    interiors = jnp.stack(
        [box_mask(h, w, t + 1, lft, third - 1, lw - 1) for t, lft in zip(tops, lefts, strict=True)]
    )
    goal_pos = sample_cell(rng, interiors[locked])
    grid = put(grid, goal_pos, world.GOAL, world.GREEN)
    for i, door in enumerate(doors):
        tile = jnp.where(locked == i, world.DOOR_LOCKED, world.DOOR_CLOSED)
        grid = put(grid, door, tile, colors[i])
    key_pos = sample_cell(rng, interiors[key_room])
    grid = put(grid, key_pos, world.KEY, colors[locked])
    hall = box_mask(h, w, 0, lw, h, rwall - lw)
    pos, d = sample_agent(rng, grid, hall)
    return Layout(grid, pos, d, reach_goal(grid), no_goal())


def memory(key, h, w, random_length: bool = False) -> Layout:
    """MiniGrid Memory: see an object in the start room, walk the hallway, step next to its twin.

    The success (failure) cell is the cell next to the matching (other) object; reaching
    either ends the episode.
    """
    rng = Draws(key, 4)
    mid = h // 2
    up_wall, low_wall = mid - 2, mid + 2
    end = rng.randint(4, w - 2) if random_length else jnp.int32(w - 3)
    grid = walled(h, w)
    cols = jnp.arange(w)
    tiles = grid[..., 0]
    room = (cols >= 1) & (cols < 5)
    tiles = tiles.at[up_wall].set(jnp.where(room, world.WALL, tiles[up_wall]))
    tiles = tiles.at[low_wall].set(jnp.where(room, world.WALL, tiles[low_wall]))
    tiles = tiles.at[up_wall + 1, 4].set(world.WALL).at[low_wall - 1, 4].set(world.WALL)
    hall = (cols >= 5) & (cols < end)
    tiles = tiles.at[up_wall + 1].set(jnp.where(hall, world.WALL, tiles[up_wall + 1]))
    tiles = tiles.at[low_wall - 1].set(jnp.where(hall, world.WALL, tiles[low_wall - 1]))
    rows = jnp.arange(h)[:, None]
    tiles = jnp.where((cols[None] == end) & (rows != mid), world.WALL, tiles)
    tiles = jnp.where(cols[None] == end + 2, world.WALL, tiles)
    grid = grid.at[..., 0].set(tiles.astype(jnp.uint8))
    pos = jnp.stack([jnp.int32(mid), rng.randint(1, end + 1)])
    objs = jnp.array([world.KEY, world.BALL], jnp.uint8)
    start_obj = objs[rng.randint(0, 2)]
    first = objs[rng.randint(0, 2)]
    second = jnp.where(first == world.KEY, world.BALL, world.KEY)
    grid = put(grid, (mid - 1, 1), start_obj, world.GREEN)
    pos0, pos1 = (mid - 2, end + 1), (mid + 2, end + 1)
    grid = put(grid, pos0, first, world.GREEN)
    grid = put(grid, pos1, second, world.GREEN)
    match0 = start_obj == first
    above = jnp.stack([jnp.int32(mid - 1), end + 1])  # next to pos0
    below = jnp.stack([jnp.int32(mid + 1), end + 1])  # next to pos1
    win = jnp.where(match0, above, below)
    lose = jnp.where(match0, below, above)
    goal = _goal(rules.G_AGENT_ON_POSITION, win[0], win[1], 0, 0)
    fail = _goal(rules.G_AGENT_ON_POSITION, lose[0], lose[1], 0, 0)
    return Layout(grid, pos, jnp.int32(0), goal, fail)


def playground(key, h, w) -> Layout:
    """MiniGrid Playground: 3x3 rooms joined by closed doors, 12 random objects, no goal."""
    rng = Draws(key, 64)
    rh, rw = h // 3, w // 3
    grid = walled(h, w)
    for i in (1, 2):
        grid = grid.at[:, i * rw, 0].set(world.WALL).at[i * rh, :, 0].set(world.WALL)
    for j in range(3):
        for i in range(3):
            top, left = j * rh, i * rw
            if i + 1 < 3:
                r = rng.randint(top + 1, top + rh - 1)
                grid = put(grid, (r, left + rw), world.DOOR_CLOSED, random_color(rng))
            if j + 1 < 3:
                c = rng.randint(left + 1, left + rw - 1)
                grid = put(grid, (top + rh, c), world.DOOR_CLOSED, random_color(rng))
    pos, d = sample_agent(rng, grid, jnp.ones((h, w), bool))
    kinds = jnp.array([world.KEY, world.BALL, world.BOX], jnp.uint8)
    for _ in range(12):
        tile = kinds[rng.randint(0, 3)]
        cell = sample_cell(rng, free(grid) & _not_at(h, w, pos))
        grid = put(grid, cell, tile, random_color(rng))
    return Layout(grid, pos, d, no_goal(), no_goal())


#: smallest (height, width) each layout accepts.
MIN_SIZE = {
    "empty": (4, 4),
    "four_rooms": (5, 5),
    "door_key": (5, 5),
    "unlock": (4, 7),
    "locked_room": (13, 13),
    "memory": (7, 7),
    "playground": (10, 10),
}
