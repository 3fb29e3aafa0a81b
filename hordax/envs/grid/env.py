"""Grid-world environments on hordax's protocol: the shared base and the classic layouts.

Observation: the egocentric view ``uint8[V, V, 2]`` (tile, colour) of ``world.egocentric_view``
(MiniGrid's ``gen_obs`` image, transposed to ``(row, col)``, with occlusion). Actions:
``Discrete(6)`` = forward, turn left, turn right, pick up, put down, toggle (out-of-range
values are clipped). Reward ``1 - 0.9 * t / T`` on the success step (``t`` the step count
after the action, ``T = params.max_steps_in_episode``), else 0. Success (or a layout's
failure condition) terminates; the time limit truncates (gymnax base).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.core import Environment
from hordax.envs.grid import layouts, rules, world


@struct.dataclass
class GridState:
    grid: jax.Array  # uint8[H, W, 2]
    agent_pos: jax.Array  # int32[2] (row, col)
    agent_dir: jax.Array  # int32[] 0 east, 1 south, 2 west, 3 north
    carry: jax.Array  # uint8[2] carried (tile, colour); (0, 0) = nothing
    goal: jax.Array  # int32[5] success condition (rules.check_goal)
    fail: jax.Array  # int32[5] failure condition; kind 0 = none
    rules: jax.Array  # int32[num_rules, 7]
    time: jax.Array  # int32[]


@struct.dataclass
class GridParams:
    max_steps_in_episode: int = 100


def check_view_size(view_size: Any, height: int, width: int) -> int:
    """Host-side: ``view_size`` odd, >= 3 and <= ``2 * max(height, width) - 1``."""
    limit = 2 * max(height, width) - 1
    if not isinstance(view_size, int | np.integer) or view_size < 3 or view_size % 2 == 0:
        raise ValueError(f"view_size={view_size!r}: must be an odd integer >= 3")
    if view_size > limit:
        raise ValueError(
            f"view_size={view_size}: must be <= 2 * max(height, width) - 1 = {limit} "
            f"for a {height}x{width} grid"
        )
    return int(view_size)


def check_grid_size(name: str, height: Any, width: Any, min_hw: tuple[int, int]) -> None:
    """Host-side: ``height``/``width`` integers of at least ``min_hw``."""
    for field, value, low in (("height", height, min_hw[0]), ("width", width, min_hw[1])):
        if not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{field}={value!r}: {name} needs an integer >= {low}")


class GridEnv(Environment[GridState, GridParams]):
    """Base of every grid env: a static ``height x width`` grid, a ``view_size`` view.

    Subclasses implement ``generate(key, params) -> layouts.Layout`` (called inside jit at
    every reset) and may set ``action_map`` (an ``int[6]`` remapping of actions, e.g.
    MiniGrid Memory treats pick up as toggle) and ``default_max_steps``.
    """

    reads_time = True  # the success reward decays with state.time

    layout_name = "grid"
    default_max_steps = 100
    action_map: tuple[int, ...] | None = None
    #: goal kinds ``state.goal`` / ``state.fail`` can hold (static; see rules.check_goal)
    goal_kinds: tuple[int, ...] = rules.ALL_GOALS
    fail_kinds: tuple[int, ...] = ()
    obs_channels: int = 2  # the view's channels: (tile, colour); a subclass may add some

    def __init__(
        self,
        height: int,
        width: int,
        view_size: int = 7,
        see_through_walls: bool = False,
        num_rules: int = 0,
    ):
        super().__init__()
        check_grid_size(
            self.layout_name, height, width, layouts.MIN_SIZE.get(self.layout_name, (3, 3))
        )
        self.height, self.width = int(height), int(width)
        self.view_size = check_view_size(view_size, self.height, self.width)
        self.see_through_walls = bool(see_through_walls)
        self.num_rules = int(num_rules)

    @property
    def name(self) -> str:
        return f"Grid-{type(self).__name__}-{self.height}x{self.width}"

    @property
    def default_params(self) -> GridParams:
        return GridParams(max_steps_in_episode=self.default_max_steps)

    def generate(self, key: jax.Array, params: Any) -> layouts.Layout:
        raise NotImplementedError

    def initial_rules(self, key: jax.Array, params: Any) -> jax.Array:
        return jnp.zeros((self.num_rules, rules.RULE_SIZE), jnp.int32)

    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, GridState]:
        k_layout, k_rules = jax.random.split(key)
        lay = self.generate(k_layout, params)
        state = GridState(
            grid=lay.grid.astype(jnp.uint8),
            agent_pos=lay.pos.astype(jnp.int32),
            agent_dir=jnp.asarray(lay.dir, jnp.int32),
            carry=jnp.zeros(2, jnp.uint8),
            goal=lay.goal.astype(jnp.int32),
            fail=lay.fail.astype(jnp.int32),
            rules=self.initial_rules(k_rules, params).astype(jnp.int32),
            time=jnp.int32(0),
        )
        return self.observe(key, state, None, params), state

    def transition(self, state: GridState, action: jax.Array) -> GridState:
        """The world update for one action: agent, then rules (no reward, no time)."""
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, world.NUM_ACTIONS - 1)
        if self.action_map is not None:
            action = jnp.asarray(self.action_map, jnp.int32)[action]
        grid, pos, d, carry = world.step_agent(
            state.grid, state.agent_pos, state.agent_dir, state.carry, action
        )
        if self.num_rules:
            grid, carry = rules.apply_rules(state.rules, grid, pos, carry)
        return state.replace(grid=grid, agent_pos=pos, agent_dir=d, carry=carry)

    def step_env(self, key: jax.Array, state: GridState, action: jax.Array, params: Any):
        state = self.transition(state, action)
        state = state.replace(time=state.time + 1)
        success = rules.check_goal(
            state.goal, state.grid, state.agent_pos, state.carry, self.goal_kinds
        )
        failure = ~success & rules.check_goal(
            state.fail, state.grid, state.agent_pos, state.carry, self.fail_kinds
        )
        t = state.time.astype(jnp.float32)
        horizon = jnp.asarray(params.max_steps_in_episode, jnp.float32)
        reward = jnp.where(success, 1.0 - 0.9 * t / horizon, 0.0).astype(jnp.float32)
        success_f = success.astype(jnp.float32)
        info = {
            "metrics": {"success": success_f},
            "reward_terms": {"success": success_f},
        }
        obs = self.observe(key, state, action, params)
        return obs, state, reward, success | failure, info

    def observe(self, key: jax.Array, state: GridState, action: Any, params: Any) -> jax.Array:
        return world.egocentric_view(
            state.grid,
            state.agent_pos,
            state.agent_dir,
            state.carry,
            self.view_size,
            self.see_through_walls,
        )

    def observation_space(self, params: Any) -> spaces.Box:
        high = max(world.NUM_TILES, world.NUM_COLORS) - 1
        shape = (self.view_size, self.view_size, self.obs_channels)
        return spaces.Box(0, high, shape, jnp.uint8)

    def action_space(self, params: Any) -> spaces.Discrete:
        return spaces.Discrete(world.NUM_ACTIONS)

    def render(self, state: GridState, params: Any) -> np.ndarray:
        from hordax.envs.grid.render import render_rgb

        return render_rgb(state, self.view_size)


# --------------------------------------------------------------------------------------------
# classic layouts

#: the goal kinds MiniGrid's layouts use
MINIGRID_GOALS = (
    rules.G_AGENT_HOLD,
    rules.G_AGENT_ON_TILE,
    rules.G_TILE_ON_POSITION,
    rules.G_AGENT_ON_POSITION,
)


class Empty(GridEnv):
    """MiniGrid Empty: reach the goal in the corner (``T = 4 * size^2``).

    As in MiniGrid, the view is not occluded here (``see_through_walls=True``).
    """

    goal_kinds = MINIGRID_GOALS
    layout_name = "empty"

    def __init__(
        self,
        size: int = 8,
        random_start: bool = False,
        view_size: int = 7,
        see_through_walls: bool = True,
    ):
        check_grid_size(self.layout_name, size, size, layouts.MIN_SIZE["empty"])
        self.random_start = bool(random_start)
        self.random_reset = self.random_start
        self.default_max_steps = 4 * size**2
        super().__init__(size, size, view_size, see_through_walls)

    def generate(self, key, params):
        return layouts.empty(key, self.height, self.width, self.random_start)


class FourRooms(GridEnv):
    """MiniGrid FourRooms (19x19, ``T = 100``)."""

    goal_kinds = MINIGRID_GOALS
    layout_name = "four_rooms"

    def __init__(self, size: int = 19, view_size: int = 7):
        super().__init__(size, size, view_size)

    def generate(self, key, params):
        return layouts.four_rooms(key, self.height, self.width)


class DoorKey(GridEnv):
    """MiniGrid DoorKey: key, locked door, goal (``T = 10 * size^2``)."""

    goal_kinds = MINIGRID_GOALS
    layout_name = "door_key"

    def __init__(self, size: int = 8, view_size: int = 7):
        check_grid_size(self.layout_name, size, size, layouts.MIN_SIZE["door_key"])
        self.default_max_steps = 10 * size**2
        super().__init__(size, size, view_size)

    def generate(self, key, params):
        return layouts.door_key(key, self.height, self.width)


class Unlock(GridEnv):
    """MiniGrid Unlock: two 6x6 rooms, open the locked door (``T = 8 * 6^2``)."""

    goal_kinds = MINIGRID_GOALS
    layout_name = "unlock"
    default_max_steps = 8 * 36

    def __init__(self, room_size: int = 6, view_size: int = 7):
        if not isinstance(room_size, int) or room_size < 4:
            raise ValueError(f"room_size={room_size!r}: must be an integer >= 4")
        self.default_max_steps = 8 * room_size**2
        super().__init__(room_size, 2 * room_size - 1, view_size)

    def generate(self, key, params):
        return layouts.unlock(key, self.height, self.width)


class UnlockPickUp(Unlock):
    """MiniGrid UnlockPickup: unlock the door, pick up the box behind it (``T = 8 * 6^2``)."""

    def generate(self, key, params):
        return layouts.unlock_pick_up(key, self.height, self.width)


class BlockedUnlockPickUp(Unlock):
    """MiniGrid BlockedUnlockPickup: a ball blocks the door (``T = 16 * 6^2``)."""

    def __init__(self, room_size: int = 6, view_size: int = 7):
        super().__init__(room_size, view_size)
        self.default_max_steps = 16 * room_size**2

    def generate(self, key, params):
        return layouts.unlock_pick_up(key, self.height, self.width, blocked=True)


class LockedRoom(GridEnv):
    """MiniGrid LockedRoom (19x19, ``T = 10 * size``)."""

    goal_kinds = MINIGRID_GOALS
    layout_name = "locked_room"

    def __init__(self, size: int = 19, view_size: int = 7):
        check_grid_size(self.layout_name, size, size, layouts.MIN_SIZE["locked_room"])
        self.default_max_steps = 10 * size
        super().__init__(size, size, view_size)

    def generate(self, key, params):
        return layouts.locked_room(key, self.height, self.width)


class Memory(GridEnv):
    """MiniGrid Memory on a ``7 x size`` grid: match the start-room object (``T = 5 size^2``).

    As in MiniGrid, pick up acts as toggle; stepping next to the other object fails.
    """

    goal_kinds = MINIGRID_GOALS
    layout_name = "memory"
    action_map = (0, 1, 2, 5, 4, 5)
    fail_kinds = (rules.G_AGENT_ON_POSITION,)

    def __init__(
        self, size: int = 8, height: int = 7, random_length: bool = False, view_size: int = 7
    ):
        check_grid_size(self.layout_name, height, size, layouts.MIN_SIZE["memory"])
        if height % 2 == 0:
            raise ValueError(f"height={height}: Memory needs an odd height")
        self.random_length = bool(random_length)
        self.default_max_steps = 5 * size**2
        super().__init__(height, size, view_size)

    def generate(self, key, params):
        return layouts.memory(key, self.height, self.width, self.random_length)


class Playground(GridEnv):
    """MiniGrid Playground: 3x3 rooms, 12 objects, no goal (``T = 100``)."""

    goal_kinds = MINIGRID_GOALS
    layout_name = "playground"

    def __init__(self, size: int = 19, view_size: int = 7):
        super().__init__(size, size, view_size)

    def generate(self, key, params):
        return layouts.playground(key, self.height, self.width)
