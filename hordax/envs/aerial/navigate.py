"""``Aerial-Navigate-v0``: cross a room full of obstacles to a goal, seeing a depth camera."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.aerial import camera as cam
from hordax.envs.aerial import common
from hordax.envs.aerial import controllers as ctl
from hordax.envs.aerial import dynamics as dyn
from hordax.envs.core import Environment

#: goal - pos (3, vehicle frame), quat (4), body vel (3), body rates (3), previous action (4)
STATE_DIM = 17
#: m, the least distance from a start (x = 1 m, >= 1 m from the walls) to an obstacle
#: surface (centres at x >= 2 m, sizes <= 0.6 m): ``collision_radius`` must stay below it
START_CLEARANCE = 0.4


@struct.dataclass
class NavigateState:
    quad: dyn.QuadState
    scene: cam.Scene
    goal: jax.Array  # f32[3]
    prev_action: jax.Array  # f32[4] (sanitized)
    prev_distance: jax.Array  # f32[] distance to the goal before this step
    time: jax.Array  # i32[]


@struct.dataclass
class NavigateParams:
    """Airframe, gains, room, obstacle density (the curriculum level), camera, reward."""

    quad: dyn.QuadParams = struct.field(default_factory=dyn.aerial_gym_quad)
    ctrl: ctl.ControllerParams = struct.field(default_factory=ctl.default_gains)
    max_steps_in_episode: int = 1000  # 10 s
    num_obstacles: int = 4  # active obstacle slots: the curriculum level (<= max_obstacles)
    room_size: jax.Array = struct.field(
        default_factory=lambda: jnp.array([10.0, 6.0, 4.0], jnp.float32)
    )  # f32[3] length (x), width (y), height (z); room spans [0, L] x [-W/2, W/2] x [0, H]
    goal_x_range: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.90, 0.94], jnp.float32)
    )  # goal x as fractions of the room length (Aerial Gym: 90-94 %)
    goal_radius: jax.Array = 0.5  # m, success
    collision_radius: jax.Array = 0.2  # m, crash when closer to any surface
    min_range: jax.Array = 0.2  # m, camera
    max_range: jax.Array = 10.0  # m
    depth_noise: jax.Array = 0.0  # std of multiplicative Gaussian depth noise
    depth_dropout: jax.Array = 0.0  # probability a pixel reads 0
    progress_scale: jax.Array = 10.0  # reward per m of approach ("getting closer" x 10)
    success_reward: jax.Array = 10.0
    crash_reward: jax.Array = -100.0  # Aerial Gym's collision penalty
    action_penalty: jax.Array = 0.01  # x |a|^2
    # x |a - a_prev|^2. Small enough that a fresh Gaussian policy (N(0, 1) actions: E|a -
    # a_prev|^2 ~ 4.1 after clipping) loses ~20 over a 1000-step episode, well above a crash
    # (-100); at the former 0.05 surviving cost ~ -226 and PPO learned to crash.
    action_change_penalty: jax.Array = 0.005


#: m, the farthest an obstacle reaches from its centre (a sphere of radius 0.6)
_MAX_EXTENT = 0.6


def vehicle_frame(quat: jax.Array, v: jax.Array) -> jax.Array:
    """World vector ``v f32[3]`` in the yaw-aligned vehicle frame of ``quat`` (``Rz(-yaw) v``).

    The frame of the velocity controller's command (``controllers.motor_command``), so the
    goal direction observed is the direction to command (Aerial Gym's navigation task also
    observes the goal vector in the vehicle frame).
    """
    return common.yaw_frame(dyn.quat_to_euler(quat)[2], v)


def min_pool(depth: jax.Array, cells: tuple[int, int]) -> jax.Array:
    """Nearest reading per cell: ``depth f32[H, W]`` -> ``f32[ph, pw]`` in ``[0, 1]``.

    Each cell is the minimum over its ``H/ph x W/pw`` block of pixels (the closest surface
    it sees). A dropped pixel (0, see :func:`camera.corrupt`) carries no reading, so it
    counts as max range (1): a cell reads 0 only if nothing is ever seen; a cell whose
    pixels are all dropped reads 1.
    """
    ph, pw = cells
    h, w = depth.shape
    seen = jnp.where(depth > 0.0, depth, 1.0)
    return jnp.min(seen.reshape(ph, h // ph, pw, w // pw), axis=(1, 3))


def curriculum_level(
    level: int, success_rate: float, min_level: int = 0, max_level: int = 16
) -> int:
    """Aerial Gym's obstacle-density curriculum rule (applied by the host between chunks).

    ``+2`` when ``success_rate > 0.7``, ``-1`` when ``< 0.6``, clipped to
    ``[min_level, max_level]``; set the result as ``params.num_obstacles``.
    """
    if success_rate > 0.7:
        level += 2
    elif success_rate < 0.6:
        level -= 1
    return int(min(max(level, min_level), max_level))


class Navigate(Environment[NavigateState, NavigateParams]):
    """Fly from one end of a room to a goal at the other, around random obstacles.

    - constructor (static): ``controller`` (default ``"velocity"``, as Aerial Gym's
      navigation task), ``airframe``, ``max_obstacles`` (slots, default 12), camera
      ``height, width`` (default 32 x 48; allowed 16 x 24 .. 135 x 240), ``hfov_deg`` (87),
      ``camera_noise`` (default False; True applies ``params.depth_noise``/``depth_dropout``),
      ``depth_obs`` (default True; False leaves the depth image out of the observation: a
      state-only policy for the empty room, the curriculum's first level), ``depth_pool``
      (default None; ``(ph, pw)`` observes the depth image min-pooled into ``ph x pw`` cells
      instead of its pixels: :func:`min_pool`, an obstacle input small enough for an MLP;
      ``ph`` must divide ``height`` and ``pw`` divide ``width``; needs ``depth_obs=True``).
    - scene per episode: room ``[0, L] x [-W/2, W/2] x [0, H]``; each of the first
      ``params.num_obstacles`` slots is a sphere (r 0.3-0.6 m), a floor-to-ceiling cylinder
      (r 0.15-0.35 m) or a box (half extents 0.2-0.5 m), centred in ``x in [2, L - 2]``
      and short of the goal range (``x <= 0.90 L - 0.6``, which binds only beyond 14 m), so
      the goal is never inside an obstacle.
      Start at ``x = 1`` facing +x; goal at ``x in [0.90, 0.94] L``.
    - observation: ``f32[17 + H W]`` = goal - position (3, in the yaw-aligned vehicle frame
      of the velocity command: :func:`vehicle_frame`), quaternion (4), body velocity (3),
      body rates (3), previous action (4), then the depth image row-major (``depth[i, j]``
      at ``17 + i W + j``), range / max_range in ``[0, 1]`` (0 = dropped);
      :meth:`split_observation` undoes the flattening. ``f32[17]`` with ``depth_obs=False``;
      ``f32[17 + ph pw]`` with ``depth_pool=(ph, pw)`` (the pooled cells row-major, the
      nearest reading per cell in ``[0, 1]``).
    - action: ``f32[4]`` in ``[-1, 1]``, controller-dependent; NaN -> 0, clipped.
    - reward: ``progress_scale (d_prev - d) - action_penalty |a|^2
      - action_change_penalty |a - a_prev|^2``, plus ``success_reward`` on reaching the goal
      (``d < goal_radius``); a crash step gives ``crash_reward`` (-100) instead.
    - termination: success, or crash (within ``collision_radius`` of an obstacle, wall,
      floor or ceiling; non-finite state).
    - truncation: ``time >= max_steps_in_episode`` (1000).
    - metrics: ``success``, ``crashed``, ``distance``, ``num_obstacles``.
    """

    def __init__(
        self,
        controller: str = "velocity",
        airframe: str = "aerial_gym",
        max_obstacles: int = 12,
        height: int = 32,
        width: int = 48,
        hfov_deg: float = 87.0,
        camera_noise: bool = False,
        depth_obs: bool = True,
        depth_pool: Sequence[int] | None = None,
    ):
        super().__init__()
        self.controller = common.check_controller(controller)
        self.airframe = airframe
        self._quad, self._ctrl = common.airframe_presets(airframe)
        if int(max_obstacles) < 1:
            raise ValueError(f"max_obstacles={max_obstacles}: must be an integer >= 1")
        self.max_obstacles = int(max_obstacles)
        self.height, self.width = cam.check_resolution(height, width)
        if not 10.0 <= float(hfov_deg) <= 170.0:
            raise ValueError(f"hfov_deg={hfov_deg}: must be in [10, 170]")
        self.hfov = math.radians(float(hfov_deg))
        self._dirs = np.asarray(cam.ray_directions(self.height, self.width, self.hfov))
        # Static so that a noise-free camera compiles no per-pixel random numbers (threefry
        # over H x W pixels dominates the compile time of a small env step on CPU).
        self.camera_noise = bool(camera_noise)
        self.depth_obs = bool(depth_obs)
        self.depth_pool = self._check_pool(depth_pool)
        # the observed depth grid: the camera's pixels, or the pooled cells
        self._obs_hw = self.depth_pool or (self.height, self.width)
        self._depth_dim = self._obs_hw[0] * self._obs_hw[1] if self.depth_obs else 0

    def _check_pool(self, depth_pool: Sequence[int] | None) -> tuple[int, int] | None:
        if depth_pool is None:
            return None
        pool = tuple(depth_pool)  # a list or tuple (an OmegaConf ListConfig from a config)
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in pool)
        ok = len(pool) == 2 and ints and min(pool) >= 1
        if not ok or self.height % int(pool[0]) or self.width % int(pool[1]):
            raise ValueError(
                f"depth_pool={list(pool)}: must be two integers (ph, pw) >= 1 with ph dividing "
                f"height={self.height} and pw dividing width={self.width}"
            )
        if not self.depth_obs:
            raise ValueError(f"depth_pool={list(pool)}: needs depth_obs=True")
        return int(pool[0]), int(pool[1])

    @property
    def name(self) -> str:
        return "Aerial-Navigate-v0"

    @property
    def default_params(self) -> NavigateParams:
        return NavigateParams(quad=self._quad, ctrl=self._ctrl)

    # ---------------------------------------------------------------------------------------

    def _scene(self, key: jax.Array, params: NavigateParams) -> cam.Scene:
        k = self.max_obstacles
        length, width, height = params.room_size[0], params.room_size[1], params.room_size[2]
        # one draw for the whole layout (each random call compiles its own threefry graph)
        u_all = jax.random.uniform(key, (k, 7), jnp.float32)
        kind = jnp.minimum(jnp.floor(3.0 * u_all[:, 0]), 2.0).astype(jnp.int32)
        u, s = u_all[:, 1:4], u_all[:, 4:7]
        # Centres in x in [2, x_hi]: no obstacle (at most 0.6 m from its centre) reaches past
        # the nearest goal x, so the goal is never inside one. For rooms up to 14 m (the
        # default 10 m) x_hi is L - 2 exactly and the layouts are those of x in [2, L - 2].
        x_hi = jnp.minimum(length - 2.0, params.goal_x_range[0] * length - _MAX_EXTENT)
        x_hi = jnp.maximum(x_hi, 2.0)
        center = jnp.stack(
            [2.0 + u[:, 0] * (x_hi - 2.0), (u[:, 1] - 0.5) * width, u[:, 2] * height], axis=-1
        )
        radius = jnp.where(kind == cam.SPHERE, 0.3 + 0.3 * s[:, 0], 0.15 + 0.2 * s[:, 0])
        size = jnp.where((kind == cam.BOX)[:, None], 0.2 + 0.3 * s, radius[:, None])
        active = jnp.arange(k) < params.num_obstacles
        lo = jnp.stack([0.0, -width / 2, 0.0]).astype(jnp.float32)
        hi = jnp.stack([length, width / 2, height]).astype(jnp.float32)
        return cam.Scene(lo, hi, kind, center, size.astype(jnp.float32), active)

    def reset_env(self, key: jax.Array, params: NavigateParams):
        k_scene, k_rest = jax.random.split(key)
        scene = self._scene(k_scene, params)
        length, width, height = params.room_size[0], params.room_size[1], params.room_size[2]
        u = jax.random.uniform(k_rest, (6,), jnp.float32)
        start = jnp.stack(
            [jnp.float32(1.0), (u[0] - 0.5) * (width - 2.0), 1.0 + u[1] * (height - 2.0)]
        )
        gx = params.goal_x_range[0] + u[2] * (params.goal_x_range[1] - params.goal_x_range[0])
        goal = jnp.stack(
            [gx * length, (u[3] - 0.5) * (width - 2.0), 1.0 + u[4] * (height - 2.0)]
        ).astype(jnp.float32)
        yaw = (u[5] - 0.5) * 0.6  # U(-0.3, 0.3) rad
        quad = dyn.hover_state(params.quad, start.astype(jnp.float32))
        quad = quad.replace(quat=dyn.quat_from_euler(0.0, 0.0, yaw).astype(jnp.float32))
        state = NavigateState(
            quad=quad,
            scene=scene,
            goal=goal,
            prev_action=jnp.zeros(4, jnp.float32),
            prev_distance=jnp.linalg.norm(goal - quad.pos).astype(jnp.float32),
            time=jnp.int32(0),
        )
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: NavigateState, action: jax.Array, params):
        k_fly, k_obs = jax.random.split(key)
        action = common.sanitize_action(action)
        quad, finite = common.fly(
            k_fly, state.quad, action, self.controller, params.quad, params.ctrl
        )
        distance = jnp.linalg.norm(state.goal - quad.pos)
        success = distance < params.goal_radius
        crashed = (cam.clearance(quad.pos, state.scene) < params.collision_radius) | ~finite
        progress = state.prev_distance - distance
        effort = jnp.sum(action**2)
        change = jnp.sum((action - state.prev_action) ** 2)
        reward = (
            params.progress_scale * progress
            - params.action_penalty * effort
            - params.action_change_penalty * change
            + params.success_reward * success
        )
        reward = jnp.where(crashed, params.crash_reward, reward).astype(jnp.float32)
        new_state = state.replace(
            quad=quad,
            prev_action=action,
            prev_distance=distance.astype(jnp.float32),
            time=state.time + 1,
        )
        info = {
            "metrics": {
                "success": (success & ~crashed).astype(jnp.float32),
                "crashed": crashed.astype(jnp.float32),
                "distance": distance,
                "num_obstacles": jnp.sum(state.scene.active).astype(jnp.float32),
            },
            "reward_terms": {
                "progress": progress,
                "action": effort,
                "action_change": change,
                "success": success.astype(jnp.float32),
                "crash": crashed.astype(jnp.float32),
            },
        }
        obs = self.observe(k_obs, new_state, action, params)
        return obs, new_state, reward, success | crashed, info

    def depth(self, key: jax.Array, state: NavigateState, params: NavigateParams) -> jax.Array:
        """The camera frame ``f32[H, W]`` in ``[0, 1]`` (noise and dropout applied)."""
        rot = dyn.quat_to_rotmat(state.quad.quat)
        clean = cam.depth_image(
            state.quad.pos,
            rot,
            jnp.asarray(self._dirs),
            state.scene,
            params.min_range,
            params.max_range,
            num_slots=params.num_obstacles,  # active slots come first (see _scene)
        )
        if not self.camera_noise:
            return clean
        return cam.corrupt(key, clean, params.depth_noise, params.depth_dropout)

    def observe(self, key: jax.Array, state: NavigateState, action: Any, params):
        base = common.state_observation(
            state.quad, vehicle_frame(state.quad.quat, state.goal - state.quad.pos)
        )
        if not self.depth_obs:
            return jnp.concatenate([base, state.prev_action]).astype(jnp.float32)
        depth = self.depth(key, state, params)
        if self.depth_pool is not None:
            depth = min_pool(depth, self.depth_pool)
        depth = depth.reshape(-1)
        return jnp.concatenate([base, state.prev_action, depth]).astype(jnp.float32)

    def split_observation(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``obs [..., 17 + H W]`` -> ``(state [..., 17], depth [..., H, W])``.

        With ``depth_pool=(ph, pw)``: ``obs [..., 17 + ph pw]`` -> ``depth [..., ph, pw]``."""
        if not self.depth_obs:
            raise ValueError("split_observation: this env was built with depth_obs=False")
        lead = obs.shape[:-1]
        return obs[..., :STATE_DIM], obs[..., STATE_DIM:].reshape(lead + self._obs_hw)

    def observation_space(self, params: NavigateParams) -> spaces.Box:
        n = STATE_DIM + self._depth_dim
        high = np.full(n, np.inf, np.float32)
        low = -high
        high[3:7], high[13:17] = 1.0, 1.0
        low[3:7], low[13:17] = -1.0, -1.0
        low[STATE_DIM:], high[STATE_DIM:] = 0.0, 1.0
        return spaces.Box(jnp.asarray(low), jnp.asarray(high), (n,), jnp.float32)

    def action_space(self, params: NavigateParams) -> spaces.Box:
        return common.action_space()

    def validate_params(self, params: NavigateParams) -> None:
        super().validate_params(params)
        dyn.validate_quad_params(params.quad, "params.quad")
        ctl.validate_gains(params.ctrl, "params.ctrl")
        n = np.asarray(params.num_obstacles)
        if np.any(n < 0) or np.any(n > self.max_obstacles):
            raise ValueError(
                f"params.num_obstacles={n.tolist()}: must be in [0, max_obstacles="
                f"{self.max_obstacles}] (max_obstacles is a constructor argument)"
            )
        room = np.asarray(params.room_size, np.float64)
        if np.any(room[..., 0] <= 5.0) or np.any(room[..., 1:] <= 2.5):
            raise ValueError(
                f"params.room_size={room.tolist()}: length must be > 5 m, width and height > 2.5 m"
            )
        lo, hi = np.asarray(params.min_range), np.asarray(params.max_range)
        if np.any(lo <= 0) or np.any(hi <= lo):
            raise ValueError(
                f"params.min_range={lo.tolist()}, params.max_range={hi.tolist()}: need "
                "0 < min_range < max_range"
            )
        self._validate_task(params, room)
        for name in ("depth_noise", "depth_dropout"):
            v = np.asarray(getattr(params, name), np.float64)
            if np.any(v < 0) or (name == "depth_dropout" and np.any(v > 1)):
                raise ValueError(f"params.{name}={v.tolist()}: must be >= 0 (dropout <= 1)")
            if np.any(v > 0) and not self.camera_noise:
                raise ValueError(
                    f"params.{name}={v.tolist()}: needs an env built with camera_noise=True "
                    "(a static switch: without it the camera is noise-free)"
                )

    @staticmethod
    def _validate_task(params: NavigateParams, room: np.ndarray) -> None:
        """Goal, crash and reward params (every entry, if batched): a goal inside the room
        and off the start, a reachable goal radius, a collision radius no start violates,
        penalties that penalize."""
        goal_radius = np.asarray(params.goal_radius, np.float64)
        if np.any(goal_radius <= 0):
            raise ValueError(f"params.goal_radius={goal_radius.tolist()}: must be finite and > 0")
        radius = np.asarray(params.collision_radius, np.float64)
        # starts are at x = 1 m, >= 1 m from every wall, and obstacles lie at x >= 2 m
        # with sizes <= 0.6 m: every start is >= 0.4 m from the nearest surface
        if np.any(radius < 0) or np.any(radius >= START_CLEARANCE):
            raise ValueError(
                f"params.collision_radius={radius.tolist()}: must be >= 0 and < "
                f"{START_CLEARANCE} m (a start's least clearance: a larger radius crashes "
                "episodes at their start)"
            )
        gx = np.asarray(params.goal_x_range, np.float64)
        lo, hi, length = gx[..., 0], gx[..., 1], room[..., 0]
        rule = None
        if np.any(lo > hi):
            rule = "want lo <= hi"
        elif np.any(hi * length + radius >= length):
            rule = (
                f"the goal x (fraction x room length {room[..., 0].tolist()}) must lie inside "
                f"the room, more than collision_radius={radius.tolist()} from its far wall"
            )
        elif np.any(lo * length - 1.0 <= goal_radius):
            rule = (
                f"the goal x (fraction x room length {room[..., 0].tolist()}) must lie beyond "
                f"the start at x = 1 m by more than goal_radius={goal_radius.tolist()}"
            )
        if rule is not None:
            shown = np.round(gx, 6).tolist()  # float32 fractions, not their float64 digits
            raise ValueError(f"params.goal_x_range={shown}: {rule}")
        for name in ("progress_scale", "action_penalty", "action_change_penalty"):
            v = np.asarray(getattr(params, name), np.float64)
            if np.any(v < 0):
                raise ValueError(f"params.{name}={v.tolist()}: must be finite and >= 0")

    def render(self, state: NavigateState, params: NavigateParams) -> np.ndarray:
        from hordax.envs.aerial.render import render_scene

        sc = jax.device_get(state.scene)
        act = np.asarray(sc.active)
        kind, center, size = np.asarray(sc.kind), np.asarray(sc.center), np.asarray(sc.size)
        round_ = act & (kind != cam.CYLINDER)
        spheres = np.concatenate([center[round_], size[round_].max(-1, keepdims=True)], -1)
        cyl = act & (kind == cam.CYLINDER)
        cylinders = np.concatenate([center[cyl][:, :2], size[cyl][:, :1]], -1)
        lo, hi = np.asarray(sc.room_lo), np.asarray(sc.room_hi)
        span = float(np.max(hi - lo)) / 2
        mid = (lo + hi) / 2
        return render_scene(
            np.asarray(state.quad.pos)[None],
            np.asarray(state.quad.quat)[None],
            targets=np.asarray(state.goal)[None],
            spheres=spheres if len(spheres) else None,
            cylinders=cylinders if len(cylinders) else None,
            arm=float(np.max(np.abs(np.asarray(params.quad.motor_xy)))) * math.sqrt(2.0),
            bounds=(mid - span, mid + span),
        )

    def render_depth(self, key: jax.Array, state: NavigateState, params) -> np.ndarray:
        """The depth frame as a grey ``uint8[H, W, 3]`` image (near = dark)."""
        d = np.asarray(self.depth(key, state, params))
        g = (255 * np.clip(d, 0.0, 1.0)).astype(np.uint8)
        return np.repeat(g[:, :, None], 3, axis=-1)
