"""User maps as ASCII art: ``Grid-Ascii-v0`` and :func:`parse_ascii`.

One character per cell::

    #  wall          .  floor (a space too)   G  goal (green)
    K  key           D  locked door           C  closed door     O  open door
    B  ball          S  square                P  pyramid         H  hex
    *  star          X  box (opens and vanishes when toggled)
    > v < ^          the agent's start, facing east / south / west / north
                     (no agent character: a random free cell and direction every reset)

Objects and doors take a default colour (key and doors yellow, ball red, square blue,
pyramid purple, hex green, star orange, box grey) unless ``colors`` gives a map of the same
shape with one letter per cell: ``r g b p y e(grey) k(black) o(orange) w(white) n(brown)
i(pink)``; any other character keeps the default.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hordax.envs.grid import layouts, rules, world
from hordax.envs.grid.env import GridEnv

TILE_OF_CHAR = {
    "#": world.WALL,
    ".": world.FLOOR,
    " ": world.FLOOR,
    "G": world.GOAL,
    "K": world.KEY,
    "D": world.DOOR_LOCKED,
    "C": world.DOOR_CLOSED,
    "O": world.DOOR_OPEN,
    "B": world.BALL,
    "S": world.SQUARE,
    "P": world.PYRAMID,
    "H": world.HEX,
    "*": world.STAR,
    "X": world.BOX,
}
AGENT_DIR_OF_CHAR = {">": 0, "v": 1, "<": 2, "^": 3}
DEFAULT_COLOR = {
    world.GOAL: world.GREEN,
    world.KEY: world.YELLOW,
    world.DOOR_LOCKED: world.YELLOW,
    world.DOOR_CLOSED: world.YELLOW,
    world.DOOR_OPEN: world.YELLOW,
    world.BALL: world.RED,
    world.SQUARE: world.BLUE,
    world.PYRAMID: world.PURPLE,
    world.HEX: world.GREEN,
    world.STAR: world.ORANGE,
    world.BOX: world.GREY,
}
COLOR_OF_CHAR = dict(zip("rgbpyekowni", range(1, 12), strict=True))

DEFAULT_MAP = """
#########
#>..#...#
#.K.D...#
#...#..G#
#########
"""


def _rows(text: str, field: str) -> list[str]:
    if not isinstance(text, str):
        raise ValueError(f"{field} must be a string, got {type(text).__name__}")
    lines = [line for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise ValueError(f"{field} is empty")
    width = len(lines[0])
    for r, line in enumerate(lines):
        if len(line) != width:
            raise ValueError(
                f"{field}: row {r} has {len(line)} characters, row 0 has {width} "
                "(all rows must have the same width)"
            )
    return lines


def parse_ascii(ascii_map: str, colors: str | None = None):
    """Parse a map into ``(grid uint8[H, W, 2], agent_pos int32[2], agent_dir int32)``.

    ``agent_pos`` is ``(-1, -1)`` and ``agent_dir`` ``-1`` when the map has no agent.
    Raises ``ValueError`` naming the character and its position for unknown tiles.
    """
    lines = _rows(ascii_map, "ascii_map")
    h, w = len(lines), len(lines[0])
    grid = np.zeros((h, w, 2), np.uint8)
    pos, d = np.array([-1, -1], np.int32), np.int32(-1)
    for r, line in enumerate(lines):
        for c, ch in enumerate(line):
            if ch in AGENT_DIR_OF_CHAR:
                if pos[0] >= 0:
                    raise ValueError(
                        f"ascii_map: a second agent {ch!r} at row {r}, col {c} "
                        f"(the first is at row {pos[0]}, col {pos[1]})"
                    )
                pos, d = np.array([r, c], np.int32), np.int32(AGENT_DIR_OF_CHAR[ch])
                grid[r, c] = (world.FLOOR, world.COLOR_NONE)
                continue
            if ch not in TILE_OF_CHAR:
                allowed = "".join(TILE_OF_CHAR) + "".join(AGENT_DIR_OF_CHAR)
                raise ValueError(
                    f"ascii_map: unknown tile {ch!r} at row {r}, col {c}; allowed: {allowed!r}"
                )
            tile = TILE_OF_CHAR[ch]
            grid[r, c] = (tile, DEFAULT_COLOR.get(tile, world.COLOR_NONE))
    if colors is not None:
        color_lines = _rows(colors, "colors")
        if (len(color_lines), len(color_lines[0])) != (h, w):
            raise ValueError(
                f"colors: shape {len(color_lines)}x{len(color_lines[0])} differs from "
                f"ascii_map {h}x{w}"
            )
        for r, line in enumerate(color_lines):
            for c, ch in enumerate(line):
                if ch in COLOR_OF_CHAR and grid[r, c, 0] in DEFAULT_COLOR:
                    grid[r, c, 1] = COLOR_OF_CHAR[ch]
    return grid, pos, d


@struct.dataclass
class AsciiParams:
    """Everything of a map lives in params: ``vmap`` over maps of one size is multi-task."""

    max_steps_in_episode: int
    grid: jax.Array  # uint8[H, W, 2]
    agent_pos: jax.Array  # int32[2]; (-1, -1) = random free cell every reset
    agent_dir: jax.Array  # int32[]; -1 = random
    goal: jax.Array  # int32[5] (rules.check_goal); default: stand on a green goal tile


class AsciiGrid(GridEnv):
    """A grid world from an ASCII map (see the module docstring for the characters).

    The map fixes the static size; ``params.grid`` may be replaced by any grid of that size
    (``vmap`` over params = one env instance per map). Success: ``goal`` (default: reach
    the green goal tile ``G``); ``max_steps`` defaults to ``4 * H * W``.
    """

    layout_name = "ascii"

    def __init__(
        self,
        ascii_map: str = DEFAULT_MAP,
        colors: str | None = None,
        goal: Any = None,
        max_steps: int | None = None,
        view_size: int = 7,
        see_through_walls: bool = False,
    ):
        grid, pos, d = parse_ascii(ascii_map, colors)
        h, w = grid.shape[:2]
        if pos[0] < 0 and not np.any(grid[..., 0] == world.FLOOR):
            raise ValueError(
                "ascii_map: no agent character (> v < ^) and no free floor cell ('.' or ' ') "
                "to draw a random start on"
            )
        if goal is None:
            goal = rules.goal(rules.G_AGENT_ON_TILE, world.GOAL, world.GREEN)
        goal = np.asarray(goal, np.int32)
        if goal.shape != (rules.GOAL_SIZE,):
            raise ValueError(f"goal: shape {goal.shape}, want ({rules.GOAL_SIZE},)")
        if max_steps is None:
            max_steps = 4 * h * w
        self._params = AsciiParams(
            int(max_steps), jnp.asarray(grid), jnp.asarray(pos), jnp.asarray(d), jnp.asarray(goal)
        )
        self.random_reset = bool(pos[0] < 0)
        super().__init__(h, w, view_size, see_through_walls)

    @property
    def default_params(self) -> AsciiParams:
        return self._params

    def generate(self, key, params: AsciiParams) -> layouts.Layout:
        grid = params.grid.astype(jnp.uint8)
        rpos, rdir = layouts.sample_agent(
            layouts.Draws(key, 1), grid, jnp.ones(grid.shape[:2], bool)
        )
        fixed = params.agent_pos[0] >= 0
        pos = jnp.where(fixed, params.agent_pos, rpos).astype(jnp.int32)
        d = jnp.where(params.agent_dir >= 0, params.agent_dir, rdir).astype(jnp.int32)
        return layouts.Layout(grid, pos, d, params.goal.astype(jnp.int32), layouts.no_goal())

    def validate_params(self, params: AsciiParams) -> None:
        super().validate_params(params)
        shape = tuple(np.shape(params.grid))[-3:]
        if shape != (self.height, self.width, 2):
            raise ValueError(
                f"params.grid has shape {shape}, this env was built for "
                f"({self.height}, {self.width}, 2)"
            )
        tiles = np.asarray(params.grid)[..., 0]
        if tiles.max() >= world.NUM_TILES:
            raise ValueError(f"params.grid: tile ids must be < {world.NUM_TILES}")
        if np.asarray(params.grid)[..., 1].max() >= world.NUM_COLORS:
            raise ValueError(f"params.grid: colour ids must be < {world.NUM_COLORS}")
        self._validate_start(params, tiles)
        goal = np.asarray(params.goal)
        if np.shape(goal)[-1:] != (rules.GOAL_SIZE,):
            raise ValueError(
                f"params.goal={goal.tolist()}: want int[{rules.GOAL_SIZE}] (rules.py; kind 0: "
                "no goal)"
            )
        hw = (self.height, self.width)
        rules.check_in_range("params.", rules.goal_range_tests(goal, grid_hw=hw))

    def _validate_start(self, params: AsciiParams, tiles: np.ndarray) -> None:
        """The start (every map's, if batched): ``agent_pos`` ``(-1, -1)`` (random, on a free
        cell the map must have) or a walkable cell inside the map; ``agent_dir`` -1 or
        0..3."""
        h, w = self.height, self.width
        pos = np.asarray(params.agent_pos).reshape(-1, 2)
        tiles = tiles.reshape(-1, h, w)
        tiles = np.broadcast_to(tiles, (max(len(tiles), len(pos)), h, w))
        pos = np.broadcast_to(pos, (len(tiles), 2))
        shown = np.asarray(params.agent_pos).tolist()
        for i, (r, c) in enumerate(pos):
            if r < 0 and c < 0:  # random start: sample_agent draws a free cell
                if not np.any(tiles[i] == world.FLOOR):
                    raise ValueError(
                        f"params.agent_pos={shown}: a random start (-1, -1) needs a free floor "
                        "cell in params.grid, which has none"
                    )
                continue
            if not (0 <= r < h and 0 <= c < w):
                raise ValueError(
                    f"params.agent_pos={shown}: must be (-1, -1) (random start) or a cell "
                    f"inside the {h}x{w} map"
                )
            if not world.WALKABLE[tiles[i, r, c]]:
                name = world.TILE_NAMES[tiles[i, r, c]]
                raise ValueError(
                    f"params.agent_pos={shown}: params.grid holds {name!r} at the start cell "
                    f"({r}, {c}), want a walkable cell (floor, goal or open door)"
                )
        d = np.asarray(params.agent_dir)
        if np.any((d < -1) | (d > 3)):
            raise ValueError(
                f"params.agent_dir={d.tolist()}: must be -1 (random) or 0..3 (east, south, "
                "west, north)"
            )
