"""XLand-style goals and production rules as fixed-size int arrays (pure JAX).

A **goal** is ``int32[5] = (kind, a, b, c, d)``; a **rule** is ``int32[7] =
(kind, a, b, c, d, prod_tile, prod_colour)``. ``(a, b)`` and ``(c, d)`` are ``(tile, colour)``
pairs (or a ``(row, col)`` position where noted). Kind 0 is the empty goal (never met) and the
empty rule (does nothing), so rulesets pad to a fixed size.

Directions in the names are *world* directions: ``Up`` = row - 1, ``Right`` = col + 1,
``Down`` = row + 1, ``Left`` = col - 1. "Near" without a direction means any of the four.

Goals (met when, after the agent's action and the rules):

==  ========================  ==========================================================
1   AgentHold(a, b)           the agent carries ``(a, b)``
2   AgentOnTile(a, b)         the agent stands on ``(a, b)`` (e.g. the goal tile)
3   AgentNear(a, b)           ``(a, b)`` is next to the agent
4   TileNear(a, b, c, d)      some ``(a, b)`` has ``(c, d)`` next to it
5   TileOnPosition(a, b, c, d)  cell ``(row c, col d)`` holds ``(a, b)``
6   AgentOnPosition(a, b)     the agent stands on ``(row a, col b)``
7-10  AgentNear{Up,Right,Down,Left}(a, b)   ``(a, b)`` is in that cell next to the agent
11-14 TileNear{Up,Right,Down,Left}(a, b, c, d)  ``(c, d)`` is in that cell next to ``(a, b)``
==  ========================  ==========================================================

Rules (applied in order after every action; each fires wherever its condition holds):

==  ========================  ==========================================================
1   AgentHold(a, b) -> p      the carried ``(a, b)`` becomes ``p``
2   AgentNear(a, b) -> p      every ``(a, b)`` next to the agent becomes ``p``
3   TileNear(a, b, c, d) -> p the first ``(a, b)`` (row-major) with a ``(c, d)`` next to it
                              becomes ``p`` and that ``(c, d)`` (first of up, right, down,
                              left) becomes floor
4-7   TileNear{Up,Right,Down,Left}(a, b, c, d) -> p   as 3, ``(c, d)`` in that direction
8-11  AgentNear{Up,Right,Down,Left}(a, b) -> p        as 2, only the cell in that direction
==  ========================  ==========================================================
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.grid import world

GOAL_SIZE = 5
RULE_SIZE = 7

# goal kinds
G_EMPTY, G_AGENT_HOLD, G_AGENT_ON_TILE, G_AGENT_NEAR, G_TILE_NEAR = 0, 1, 2, 3, 4
G_TILE_ON_POSITION, G_AGENT_ON_POSITION = 5, 6
G_AGENT_NEAR_UP, G_AGENT_NEAR_RIGHT, G_AGENT_NEAR_DOWN, G_AGENT_NEAR_LEFT = 7, 8, 9, 10
G_TILE_NEAR_UP, G_TILE_NEAR_RIGHT, G_TILE_NEAR_DOWN, G_TILE_NEAR_LEFT = 11, 12, 13, 14
NUM_GOALS = 15

# rule kinds
R_EMPTY, R_AGENT_HOLD, R_AGENT_NEAR, R_TILE_NEAR = 0, 1, 2, 3
R_TILE_NEAR_UP, R_TILE_NEAR_RIGHT, R_TILE_NEAR_DOWN, R_TILE_NEAR_LEFT = 4, 5, 6, 7
R_AGENT_NEAR_UP, R_AGENT_NEAR_RIGHT, R_AGENT_NEAR_DOWN, R_AGENT_NEAR_LEFT = 8, 9, 10, 11
NUM_RULES = 12

#: (d_row, d_col) for Up, Right, Down, Left.
NEAR_VEC = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], np.int32)


def goal(kind: int, a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> np.ndarray:
    """A goal encoding ``int32[5]`` (host-side helper)."""
    return np.array([kind, a, b, c, d], np.int32)


def rule(kind: int, a=0, b=0, c=0, d=0, prod=(0, 0)) -> np.ndarray:
    """A rule encoding ``int32[7]``; ``prod`` is the produced ``(tile, colour)``."""
    return np.array([kind, a, b, c, d, prod[0], prod[1]], np.int32)


def empty_rules(n: int) -> np.ndarray:
    """``int32[n, 7]`` of empty rules."""
    return np.zeros((n, RULE_SIZE), np.int32)


def goal_range_tests(goal, name: str = "goal", grid_hw: tuple[int, int] | None = None) -> list:
    """Host-side range tests of goal encodings ``goal int[..., 5]`` for
    :func:`check_in_range`: a known kind, the objects' tile and colour ids, and (given
    ``grid_hw``) positions inside the grid (``check_goal`` clamps an outside position to the
    border, where the goal would then hold at a cell the task never named)."""
    g = np.asarray(goal)
    kind = g[..., 0]
    # entries (1, 2) are an object (tile, colour) for every kind but AgentOnPosition,
    # (3, 4) a second object for the TileNear kinds and a position for TileOnPosition
    obj_ab = (kind > G_EMPTY) & (kind != G_AGENT_ON_POSITION)
    obj_cd = (kind == G_TILE_NEAR) | (kind >= G_TILE_NEAR_UP)
    entries = [
        (obj_ab, 1, world.NUM_TILES, "goal object tile id (entry 1)"),
        (obj_ab, 2, world.NUM_COLORS, "goal object colour id (entry 2)"),
        (obj_cd, 3, world.NUM_TILES, "goal second tile id (entry 3)"),
        (obj_cd, 4, world.NUM_COLORS, "goal second colour id (entry 4)"),
    ]
    if grid_hw is not None:
        h, w = grid_hw
        on_tile, on_agent = kind == G_TILE_ON_POSITION, kind == G_AGENT_ON_POSITION
        entries += [
            (on_tile, 3, h, f"goal position row (entry 3) in the {h} x {w} grid"),
            (on_tile, 4, w, f"goal position column (entry 4) in the {h} x {w} grid"),
            (on_agent, 1, h, f"goal position row (entry 1) in the {h} x {w} grid"),
            (on_agent, 2, w, f"goal position column (entry 2) in the {h} x {w} grid"),
        ]
    return [
        (name, g, kind, NUM_GOALS, "goal kind (entry 0)"),
        *((name, g, np.where(m, g[..., i], 0), n, what) for m, i, n, what in entries),
    ]


def check_in_range(prefix: str, tests: list) -> None:
    """``ValueError`` naming ``{prefix}{name}``, the first offending row (and its index in a
    stack) and the rule, for the first of ``tests`` ``(name, array, values, n, what)`` with
    a value outside ``[0, n)``."""
    for name, arr, values, n, what in tests:
        bad = (values < 0) | (values >= n)
        if np.any(bad):
            at = np.argwhere(bad)[0]
            where = f" (at {at.tolist()})" if at.size else ""
            row = arr[tuple(at)].tolist()
            raise ValueError(f"{prefix}{name}={row}{where}: {what} must be in [0, {n})")


def _is(grid: jax.Array, t: jax.Array, c: jax.Array) -> jax.Array:
    """``bool[H, W]``: cells equal to ``(t, c)``."""
    return (grid[..., 0] == t) & (grid[..., 1] == c)


def _shift(mask: jax.Array, dr: int, dc: int) -> jax.Array:
    """``out[r, c] = mask[r + dr, c + dc]`` (False outside)."""
    h, w = mask.shape
    padded = jnp.pad(mask, 1)
    return padded[1 + dr : 1 + dr + h, 1 + dc : 1 + dc + w]


def _neighbour_cells(pos: jax.Array) -> jax.Array:
    """``int32[4, 2]`` the cells up, right, down and left of ``pos``."""
    return pos[None, :] + jnp.asarray(NEAR_VEC)


#: every goal kind (the default of ``check_goal``'s ``kinds``).
ALL_GOALS = tuple(range(1, NUM_GOALS))


def check_goal(
    goal: jax.Array,
    grid: jax.Array,
    pos: jax.Array,
    carry: jax.Array,
    kinds: tuple[int, ...] = ALL_GOALS,
) -> jax.Array:
    """``bool[]``: whether ``goal`` (``int32[5]``) holds in this world state.

    ``kinds`` (static) lists the goal kinds an env can produce; other kinds read False.
    Leaving out the whole-grid TileNear tests makes the compiled step smaller.
    """
    kind, a, b, c, d = goal[0], goal[1], goal[2], goal[3], goal[4]
    h, w = grid.shape[:2]
    kinds = tuple(k for k in kinds if 0 < k < NUM_GOALS)
    if not kinds:
        return jnp.bool_(False)
    value = {}
    if G_AGENT_HOLD in kinds:
        value[G_AGENT_HOLD] = (carry[0] == a) & (carry[1] == b)
    if G_AGENT_ON_TILE in kinds:
        here = grid[pos[0], pos[1]]
        value[G_AGENT_ON_TILE] = (here[0] == a) & (here[1] == b)
    if G_TILE_ON_POSITION in kinds:
        at_cd = grid[jnp.clip(c, 0, h - 1), jnp.clip(d, 0, w - 1)]
        value[G_TILE_ON_POSITION] = (at_cd[0] == a) & (at_cd[1] == b)
    if G_AGENT_ON_POSITION in kinds:
        value[G_AGENT_ON_POSITION] = (pos[0] == a) & (pos[1] == b)
    agent_near = (G_AGENT_NEAR,) + tuple(range(G_AGENT_NEAR_UP, G_AGENT_NEAR_LEFT + 1))
    if any(k in kinds for k in agent_near):
        nb = jax.vmap(lambda p: world.get_cell(grid, p))(_neighbour_cells(pos))  # [4, 2]
        nb_ab = (nb[:, 0] == a) & (nb[:, 1] == b)
        value[G_AGENT_NEAR] = jnp.any(nb_ab)
        for i in range(4):
            value[G_AGENT_NEAR_UP + i] = nb_ab[i]
    tile_near = (G_TILE_NEAR,) + tuple(range(G_TILE_NEAR_UP, G_TILE_NEAR_LEFT + 1))
    if any(k in kinds for k in tile_near):
        mask_a, mask_c = _is(grid, a, b), _is(grid, c, d)
        near_dir = jnp.stack([jnp.any(mask_a & _shift(mask_c, dr, dc)) for dr, dc in NEAR_VEC])
        value[G_TILE_NEAR] = jnp.any(near_dir)
        for i in range(4):
            value[G_TILE_NEAR_UP + i] = near_dir[i]
    met = jnp.bool_(False)
    for k in kinds:
        met = met | ((kind == k) & value[k])
    return met


#: a cell ``(tile, colour)`` as one int, ``tile * CODE + colour`` (both ids are below 16)
CODE = 16
assert world.NUM_TILES <= CODE and world.NUM_COLORS <= CODE


def apply_rule(
    rule: jax.Array, code: jax.Array, pos: jax.Array, carry: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Apply one rule (``int32[7]``) to a coded grid ``int32[H, W]`` (see :data:`CODE`);
    returns ``(code, carry)``.

    Written with whole-grid masks (no scattered writes) so that it compiles small and
    vectorizes under ``vmap``.
    """
    kind = rule[0]
    ab, cd = rule[1] * CODE + rule[2], rule[3] * CODE + rule[4]
    prod = rule[5] * CODE + rule[6]
    h, w = code.shape
    rows, cols = jnp.arange(h)[:, None], jnp.arange(w)[None, :]
    # AgentHold
    hold = (kind == R_AGENT_HOLD) & (carry[0] == rule[1]) & (carry[1] == rule[2])
    carry = jnp.where(hold, jnp.stack([rule[5], rule[6]]).astype(carry.dtype), carry)
    # AgentNear (any direction, or one): the allowed neighbour cells of the agent
    dr, dc = rows - pos[0], cols - pos[1]
    side = [(dr == int(r)) & (dc == int(c)) for r, c in NEAR_VEC]  # up, right, down, left
    around = functools.reduce(
        jnp.logical_or,
        [m & ((kind == R_AGENT_NEAR) | (kind == R_AGENT_NEAR_UP + i)) for i, m in enumerate(side)],
    )
    code = jnp.where(around & (code == ab), prod, code)
    # TileNear (any direction, or one): the first (a, b) in row-major order with a (c, d)
    # next to it in an allowed direction; the first such direction is consumed
    mask_a, mask_c = code == ab, code == cd
    tile_rule = (kind >= R_TILE_NEAR) & (kind <= R_TILE_NEAR_LEFT)
    first_dir = jnp.full((h, w), 4, jnp.int32)  # per cell: the first direction that hits
    for i in reversed(range(4)):
        r, c = NEAR_VEC[i]
        allowed = (kind == R_TILE_NEAR) | (kind == R_TILE_NEAR_UP + i)
        first_dir = jnp.where(allowed & _shift(mask_c, int(r), int(c)), i, first_dir)
    hit = mask_a & (first_dir < 4) & tile_rule
    first = jnp.argmax(hit.reshape(-1))
    fire = hit.reshape(-1)[first]
    fr, fc = first // w, first % w
    k = jnp.minimum(first_dir.reshape(-1)[first], 3)
    near = jnp.asarray(NEAR_VEC)[k]
    sel_a = fire & (rows == fr) & (cols == fc)
    sel_b = fire & (rows == fr + near[0]) & (cols == fc + near[1])
    code = jnp.where(sel_b, world.FLOOR * CODE + world.COLOR_NONE, code)
    return jnp.where(sel_a, prod, code), carry


def apply_rules(
    rules: jax.Array, grid: jax.Array, pos: jax.Array, carry: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Apply ``rules`` (``int32[R, 7]``) in order to ``grid`` (``uint8[H, W, 2]``); returns
    ``(grid, carry)``.

    A ``lax.scan`` over the rules (one compiled rule body whatever ``R`` is) on the grid
    coded one int per cell.
    """
    if rules.shape[0] == 0:
        return grid, carry
    code = grid[..., 0].astype(jnp.int32) * CODE + grid[..., 1].astype(jnp.int32)

    def body(cc, rule):
        return apply_rule(rule, cc[0], pos, cc[1]), None

    (code, carry), _ = jax.lax.scan(body, (code, carry), rules)
    grid = jnp.stack([code // CODE, code % CODE], axis=-1).astype(grid.dtype)
    return grid, carry
