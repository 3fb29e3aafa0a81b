"""Host-side rendering of grid states: RGB frames for videos and text for debugging."""

from __future__ import annotations

from typing import Any

import numpy as np

from hordax.envs.grid import world

#: RGB of each colour id (index 0 = no colour).
PALETTE = np.array(
    [
        [0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255], [112, 39, 195], [255, 255, 0],
        [100, 100, 100], [30, 30, 30], [255, 140, 0], [255, 255, 255], [139, 69, 19],
        [255, 105, 180],
    ],
    np.uint8,
)  # fmt: skip

#: one character per tile for ``render_text`` (upper case = object, see TEXT_LEGEND).
TILE_CHARS = " .#BSPGKDCOH*X"  # the characters of ascii.parse_ascii
TEXT_LEGEND = dict(zip(TILE_CHARS, world.TILE_NAMES, strict=True))
AGENT_CHARS = ">v<^"  # by direction: east, south, west, north


def _shape_mask(tile: int, n: int) -> np.ndarray:
    """``bool[n, n]``: the pixels an object of kind ``tile`` covers in its cell."""
    y, x = (np.mgrid[0:n, 0:n] + 0.5) / n
    cx, cy = x - 0.5, y - 0.5
    if tile == world.BALL:
        return cx**2 + cy**2 < 0.3**2
    if tile in (world.SQUARE, world.BOX):
        inner = (np.abs(cx) < 0.22) & (np.abs(cy) < 0.22)
        outer = (np.abs(cx) < 0.32) & (np.abs(cy) < 0.32)
        return outer & ~inner if tile == world.BOX else outer
    if tile == world.PYRAMID:
        return (cy < 0.3) & (np.abs(cx) < (cy + 0.3) * 0.6)
    if tile == world.KEY:
        return ((cx + 0.1) ** 2 + (cy + 0.15) ** 2 < 0.16**2) | (
            (np.abs(cx + 0.1) < 0.05) & (cy > -0.05) & (cy < 0.35)
        )
    if tile == world.HEX:
        return (np.abs(cx) < 0.3) & (np.abs(cy) + 0.5 * np.abs(cx) < 0.3)
    if tile == world.STAR:
        ang = np.arctan2(cy, cx)
        return np.hypot(cx, cy) < 0.18 + 0.14 * np.cos(5 * ang)
    return np.ones((n, n), bool)


def _draw_cell(tile: int, color: int, n: int) -> np.ndarray:
    img = np.zeros((n, n, 3), np.uint8)
    rgb = PALETTE[color]
    if tile in (world.FLOOR, world.EMPTY):
        img[:] = 0
    elif tile == world.WALL:
        img[:] = 100
    elif tile == world.GOAL:
        img[:] = rgb if color else PALETTE[world.GREEN]
    elif tile in (world.DOOR_LOCKED, world.DOOR_CLOSED):
        img[:] = rgb
        img[1:-1, 1:-1] = (rgb * (0.45 if tile == world.DOOR_LOCKED else 0.0)).astype(np.uint8)
        img[n // 2 - 1 : n // 2 + 1, 3 * n // 4 - 1 : 3 * n // 4 + 1] = rgb
    elif tile == world.DOOR_OPEN:
        img[:, -max(1, n // 8) :] = rgb
    else:
        img[_shape_mask(tile, n)] = rgb
    img[0, :] = img[:, 0] = 50  # grid lines
    return img


def render_rgb(state: Any, view_size: int = 7, tile: int = 16) -> np.ndarray:
    """Top-down frame ``uint8[H * tile, W * tile, 3]`` with the agent and its view shaded.

    The agent is a red triangle pointing its way; cells it sees (its ``view_size`` square,
    before occlusion) are lightened.
    """
    grid = np.asarray(state.grid)
    pos, d = np.asarray(state.agent_pos), int(state.agent_dir)
    h, w = grid.shape[:2]
    img = np.zeros((h * tile, w * tile, 3), np.uint8)
    for r in range(h):
        for c in range(w):
            img[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile] = _draw_cell(
                int(grid[r, c, 0]), int(grid[r, c, 1]), tile
            )
    coords = np.asarray(world.view_coords(pos, d, view_size)).reshape(-1, 2)
    for r, c in coords:
        if 0 <= r < h and 0 <= c < w:
            block = img[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile].astype(np.int32)
            img[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile] = np.minimum(
                block + 40, 255
            ).astype(np.uint8)
    y, x = (np.mgrid[0:tile, 0:tile] + 0.5) / tile - 0.5
    fx, fy = world.DIR_VEC[d][1], world.DIR_VEC[d][0]  # forward in (x, y)
    along, across = x * fx + y * fy, -x * fy + y * fx
    tri = (along > -0.3) & (along < 0.35) & (np.abs(across) < (0.35 - along) * 0.6)
    r0, c0 = int(pos[0]) * tile, int(pos[1]) * tile
    img[r0 : r0 + tile, c0 : c0 + tile][tri] = PALETTE[world.RED]
    return img


def render_text(state: Any) -> str:
    """One line per grid row: ``TILE_CHARS`` per cell, the agent as ``>v<^``."""
    grid = np.asarray(state.grid)
    pos, d = np.asarray(state.agent_pos), int(state.agent_dir)
    lines = []
    for r in range(grid.shape[0]):
        row = [TILE_CHARS[int(t)] for t in grid[r, :, 0]]
        if r == pos[0]:
            row[int(pos[1])] = AGENT_CHARS[d]
        lines.append("".join(row))
    carry = np.asarray(state.carry)
    held = (
        "nothing"
        if carry[0] == world.EMPTY
        else (f"{world.COLOR_NAMES[carry[1]]} {world.TILE_NAMES[carry[0]]}")
    )
    return "\n".join(lines) + f"\ncarrying: {held}"
