"""Multi-agent driving: :class:`Drive` (maps with generated traffic) and :class:`DriveLog`
(GPUDrive JSON scenes with log replay). See ``docs/driving.md``.

Both keep every object of a scene in arrays of ``M`` slots: slots ``0..n-1`` are the
controlled agents (the env's agent axis, ``n = num_agents``), the others are background
traffic (IDM car following along lane routes in :class:`Drive`, log replay in
:class:`DriveLog`). Per step and controlled agent:

- the action moves it with the chosen vehicle model (``dynamics``: ``classic``,
  ``bicycle`` (Waymax's invertible bicycle), ``delta_local``, ``state``); discrete actions
  index a steer x accel grid, continuous ones are ``[-1, 1]`` scaled by params;
- events on the new state: goal reached (within ``goal_radius``), collision (its oriented
  box overlaps another object's), off-road (its box crosses a road edge, or its centre is
  outside every drivable quad), kinematic infeasibility (the realized step needs
  ``|accel| > infeasible_accel`` or ``|curvature| > infeasible_curvature``, Waymax's test);
- an agent that reaches its goal is done and leaves the scene; on collision or off-road
  ``collision_behavior`` decides: ``ignore`` (keep driving), ``stop`` (done, stays as a
  stopped obstacle), ``remove`` (done, leaves the scene);
- reward (``weighted``): ``goal_reward`` on arrival + ``collision_weight``,
  ``offroad_weight``, ``infeasible_weight`` per step with the event + ``progress_weight``
  x metres gained towards the goal; ``sparse``: 1 on arrival only.

``agent_mask(state)`` marks the agents active in a state (spawned and not done); a step's
``info["agent_mask"]`` is that of the state it returns (docs/env_protocol.md), so an agent's
transition counts iff it was active in the state it acted from (its arrival step included);
every other slot gets reward 0 and a frozen state.
``info["agent_terminated"]`` is True on the step an agent is done. The episode terminates
when no controlled agent is left and truncates at ``max_steps_in_episode`` (91 = GPUDrive's
and Waymax's log length). ``info["metrics"]``: fractions of the spawned agents that reached
their goal, collided, went off-road, drove infeasibly (so far this episode; read at its end).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.core import MultiAgentEnvironment
from hordax.envs.driving import dynamics as dyn
from hordax.envs.driving import observation as obs_lib
from hordax.envs.driving.geometry import (
    box_corners,
    boxes_overlap,
    points_in_quads,
    segment_hits_box,
)
from hordax.envs.driving.roadgraph import ROAD_TYPES
from hordax.envs.driving.scene import lane_pose, num_scenes, scene_at
from hordax.envs.driving.traffic import following_gaps
from hordax.envs.spaces import MultiDiscrete
from hordax.envs.wrappers.clip import clip_action
from hordax.validation import need

DYNAMICS = ("classic", "bicycle", "delta_local", "state")
ACTION_DIMS = {"classic": 2, "bicycle": 2, "delta_local": 3, "state": 4}
COLLISION_BEHAVIORS = ("ignore", "stop", "remove")
REWARD_TYPES = ("weighted", "sparse")
STEER_SPACINGS = ("linear", "quadratic")
SPLITS = ("all", "train", "test")
PROGRESS = ("euclidean", "route")
LOG_DT = 0.1  # s: GPUDrive's JSON logs (WOMD) are 10 Hz
#: rad: room for the float32 rounding of two yaws in [-pi, pi) (~5e-7) in the infeasibility test
YAW_ROUNDING = 1e-5


@struct.dataclass
class DriveParams:
    """Everything a user may randomize per env instance; ``scenes`` is the scene batch."""

    scenes: Any
    max_steps_in_episode: int = 91
    dt: float = 0.1
    # actions: continuous actions in [-1, 1] and the discrete grid's ends are scaled by these
    max_speed: float = 30.0  # m/s: speed clamp of the bicycle models, observation scale
    max_accel: float = 4.0  # m/s^2 (GPUDrive's discrete grid: 7 values in [-4, 4])
    max_steer: float = 0.6  # rad, classic model's steering angle
    max_curvature: float = 0.3  # 1/m, bicycle model (Waymax's limit)
    max_delta_xy: float = 2.0  # m per step, delta_local model
    max_delta_yaw: float = 0.5  # rad per step, delta_local model
    state_max_xy: float = 1000.0  # m, state model (scene coordinates are centred)
    # goals and spawning (generated traffic)
    goal_radius: float = 2.0
    goal_min_distance: float = 15.0  # m along the route
    goal_max_distance: float = 45.0
    init_speed_max: float = 5.0  # controlled agents start at U[0, init_speed_max]
    vehicle_length: float = 4.5
    vehicle_width: float = 1.9
    size_jitter: float = 0.1  # sizes x U[1 - j, 1 + j]
    # observation scales
    obs_radius: float = 50.0
    goal_scale: float = 100.0
    size_scale: float = 10.0
    lidar_range: float = 50.0
    # reward (weighted combination; GPUDrive's "reliable agents" weights)
    goal_reward: float = 1.0
    collision_weight: float = -0.75
    offroad_weight: float = -0.75
    infeasible_weight: float = 0.0
    progress_weight: float = 0.0  # per metre towards the goal (potential-based shaping)
    infeasible_accel: float = 10.4  # Waymax's kinematic-infeasibility thresholds
    infeasible_curvature: float = 0.3
    # IDM background traffic (desired speed = lane speed limit x U[1 - j, 1 + j])
    idm_speed_jitter: float = 0.2
    idm_max_accel: float = 1.5
    idm_comfort_decel: float = 2.0
    idm_min_gap: float = 2.0
    idm_time_headway: float = 1.5


@struct.dataclass
class DriveState:
    scene: jax.Array  # i32[] index into params.scenes
    pos: jax.Array  # f32[M, 2]
    yaw: jax.Array  # f32[M]
    vel: jax.Array  # f32[M, 2]
    size: jax.Array  # f32[M, 2] (length, width)
    kind: jax.Array  # i32[M] 1 vehicle, 2 pedestrian, 3 cyclist
    exists: jax.Array  # bool[M] in the scene (collides, is observed)
    goal: jax.Array  # f32[n, 2]
    active: jax.Array  # bool[n] still acting
    spawned: jax.Array  # bool[n] took part in this episode
    reached: jax.Array  # bool[n] this episode
    collided: jax.Array  # bool[n]
    offroad: jax.Array  # bool[n]
    infeasible: jax.Array  # bool[n]
    goal_dist: jax.Array  # f32[n]
    route: jax.Array  # i32[M, H] lanes ahead (generated traffic; -1 ends)
    hop: jax.Array  # i32[M] position in route
    s: jax.Array  # f32[M] arc length along route[hop]
    desired: jax.Array  # f32[M] IDM desired speed
    time: jax.Array  # i32[]


_POSITIVE = [
    "dt",
    "max_speed",
    "max_accel",
    "max_steer",
    "max_curvature",
    "max_delta_xy",
    "max_delta_yaw",
    "state_max_xy",
    "goal_radius",
    "goal_min_distance",
    "goal_max_distance",
    "vehicle_length",
    "vehicle_width",
    "obs_radius",
    "goal_scale",
    "size_scale",
    "lidar_range",
    "infeasible_accel",
    "infeasible_curvature",
    "idm_max_accel",
    "idm_comfort_decel",
    "idm_min_gap",
    "idm_time_headway",
]
_FINITE = [
    "goal_reward",
    "collision_weight",
    "offroad_weight",
    "infeasible_weight",
    "progress_weight",
]


def _all(x, rule) -> bool:
    x = np.asarray(x, np.float64)
    return bool(np.all(np.isfinite(x)) and np.all(rule(x)))


def _show(x) -> Any:
    x = np.asarray(x)
    return x.tolist() if x.size <= 8 else f"<{x.dtype} array of shape {list(x.shape)}>"


def validate_scalars(params: DriveParams) -> None:
    for name in _POSITIVE:
        v = getattr(params, name)
        need(_all(v, lambda x: x > 0), f"params.{name}", _show(v), "must be finite and > 0")
    for name in _FINITE:
        v = getattr(params, name)
        need(_all(v, lambda x: x == x), f"params.{name}", _show(v), "must be finite")
    for name in ("size_jitter", "idm_speed_jitter"):
        v = getattr(params, name)
        need(
            _all(v, lambda x: (x >= 0) & (x < 0.5)),
            f"params.{name}",
            _show(v),
            "must be in [0, 0.5)",
        )
    need(
        _all(params.max_steer, lambda x: x < np.pi / 2),
        "params.max_steer",
        _show(params.max_steer),
        "must be in (0, pi/2)",
    )
    v = params.init_speed_max
    need(
        _all(v, lambda x: x >= 0) and np.all(np.asarray(v) <= np.asarray(params.max_speed)),
        "params.init_speed_max",
        _show(v),
        "must be in [0, params.max_speed]",
    )
    need(
        np.all(np.asarray(params.goal_min_distance) <= np.asarray(params.goal_max_distance)),
        "params.goal_min_distance",
        _show(params.goal_min_distance),
        f"must be <= params.goal_max_distance={_show(params.goal_max_distance)}",
    )


def check_road(road, prefix: str = "params.scenes.road") -> None:
    for name in ("seg", "quads"):
        v = getattr(road, name)
        need(_all(v, lambda x: x == x), f"{prefix}.{name}", _show(v), "must be finite")
    kind = np.asarray(road.kind)
    need(
        bool(np.all((kind >= 0) & (kind <= max(ROAD_TYPES.values())))),
        f"{prefix}.kind",
        _show(kind),
        f"must be road types in [0, {max(ROAD_TYPES.values())}]",
    )


class _Driving(MultiAgentEnvironment[DriveState, DriveParams]):
    """What :class:`Drive` and :class:`DriveLog` share: actions, vehicle models, events,
    rewards, observations, spaces, rendering. Subclasses place objects (``reset_env``)
    and move the background ones (``_move_others``)."""

    reads_time = True  # log replay and the time-left observation read state.time

    def __init__(
        self,
        num_agents: int,
        num_objects: int,
        dynamics: str = "classic",
        action_type: str = "discrete",
        steer_bins: int = 13,
        accel_bins: int = 7,
        steer_spacing: str = "linear",
        max_partners: int = 63,
        max_road_points: int = 200,
        lidar_rays: int = 0,
        collision_behavior: str = "remove",
        reward_type: str = "weighted",
        undirected_lines: bool = False,
    ):
        super().__init__()
        need(
            isinstance(num_agents, int) and num_agents >= 1,
            "num_agents",
            num_agents,
            "must be an integer >= 1",
        )
        need(dynamics in DYNAMICS, "dynamics", repr(dynamics), f"must be one of {DYNAMICS}")
        need(
            action_type in ("discrete", "continuous"),
            "action_type",
            repr(action_type),
            "must be 'discrete' or 'continuous'",
        )
        need(
            action_type == "continuous" or dynamics in ("classic", "bicycle"),
            "action_type",
            repr(action_type),
            f"discrete actions need dynamics 'classic' or 'bicycle', "
            f"not {dynamics!r} (use action_type='continuous')",
        )
        for name, v, low in (
            ("steer_bins", steer_bins, 1),
            ("accel_bins", accel_bins, 1),
            ("max_partners", max_partners, 0),
            ("max_road_points", max_road_points, 1),
            ("lidar_rays", lidar_rays, 0),
        ):
            need(isinstance(v, int) and v >= low, name, v, f"must be an integer >= {low}")
        need(
            steer_spacing in STEER_SPACINGS,
            "steer_spacing",
            repr(steer_spacing),
            f"must be one of {STEER_SPACINGS}",
        )
        need(
            collision_behavior in COLLISION_BEHAVIORS,
            "collision_behavior",
            repr(collision_behavior),
            f"must be one of {COLLISION_BEHAVIORS}",
        )
        need(
            reward_type in REWARD_TYPES,
            "reward_type",
            repr(reward_type),
            f"must be one of {REWARD_TYPES}",
        )
        self._n, self._m = num_agents, num_objects
        self.dynamics, self.action_type = dynamics, action_type
        self.steer_bins, self.accel_bins = steer_bins, accel_bins
        self.steer_spacing = steer_spacing
        self.max_partners, self.max_road_points, self.lidar_rays = (
            max_partners,
            max_road_points,
            lidar_rays,
        )
        self.collision_behavior, self.reward_type = collision_behavior, reward_type
        need(
            isinstance(undirected_lines, bool),
            "undirected_lines",
            repr(undirected_lines),
            "must be True or False",
        )
        self.undirected_lines = undirected_lines

    def agent_mask(self, state: DriveState, params: DriveParams) -> jax.Array:
        """``bool[n]``: the controlled agents still acting (spawned, not done)."""
        return state.active

    @property
    def default_params(self) -> DriveParams:
        return self._default

    def validate_params(self, params: DriveParams) -> None:
        super().validate_params(params)
        validate_scalars(params)
        check_road(params.scenes.road)
        self._validate_scenes(params.scenes)

    def _validate_scenes(self, scenes) -> None:
        """The subclass's checks of its scene arrays (``params.scenes``)."""
        raise NotImplementedError

    def _start(self, index, pos, yaw, vel, size, kind, exists, goal, spawned) -> DriveState:
        """A fresh episode's state: the scene's objects as placed (``[M, ...]``), goals
        ``[n, 2]``, every agent's events cleared, time 0; route fields empty (the generated
        traffic of :class:`Drive` fills them)."""
        n, m = self._n, self._m
        none = jnp.zeros(n, bool)
        return DriveState(
            scene=index,
            pos=pos,
            yaw=yaw,
            vel=vel,
            size=size,
            kind=kind,
            exists=exists,
            goal=goal,
            active=spawned,
            spawned=spawned,
            reached=none,
            collided=none,
            offroad=none,
            infeasible=none,
            goal_dist=jnp.linalg.norm(goal - pos[:n], axis=-1),
            route=jnp.zeros((m, 1), jnp.int32),
            hop=jnp.zeros(m, jnp.int32),
            s=jnp.zeros(m),
            desired=jnp.zeros(m),
            time=jnp.int32(0),
        )

    # -- spaces -------------------------------------------------------------------------------

    @property
    def num_agents(self) -> int:
        return self._n

    @property
    def num_objects(self) -> int:
        """Object slots ``M``: controlled agents first, then background traffic."""
        return self._m

    #: route points per observation (:class:`Drive` only: log scenes have no lane route)
    route_points: int = 0
    #: what a route row holds (:class:`Drive`'s ``route_features``)
    route_features: str = "points"

    @property
    def observation_size(self) -> int:
        return obs_lib.observation_size(
            self.max_partners,
            self.max_road_points,
            self.lidar_rays,
            self.route_points,
            obs_lib.ROUTE_WIDTH[self.route_features],
        )

    def observation_space(self, params: DriveParams) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (self._n, self.observation_size), jnp.float32)

    def action_space(self, params: DriveParams):
        if self.action_type == "discrete":
            return MultiDiscrete([self.steer_bins * self.accel_bins] * self._n)
        return spaces.Box(-1.0, 1.0, (self._n, ACTION_DIMS[self.dynamics]), jnp.float32)

    def split_observation(self, obs: jax.Array) -> dict[str, jax.Array]:
        """``obs [..., D]`` -> ``{"ego", "partners", "roads", "lidar", "route"}``
        (observation.py)."""
        return obs_lib.split(
            obs,
            self.max_partners,
            self.max_road_points,
            self.lidar_rays,
            self.route_points,
            obs_lib.ROUTE_WIDTH[self.route_features],
        )

    def action_grid(self, params: DriveParams) -> jax.Array:
        """``f32[steer_bins * accel_bins, 2]`` (accel, steer) of each discrete action, in the
        units of the model (steer: angle for ``classic``, curvature for ``bicycle``).

        ``steer_spacing="linear"`` (GPUDrive's grid): steer values evenly spaced over
        ``[-max, max]``; ``"quadratic"``: ``sign(u) u^2`` of the even ``u``, the same ends
        with finer steps near straight ahead (13 bins: 0.028 x max instead of 0.167 x max),
        the small corrections that lane keeping at speed needs."""
        steer = jnp.linspace(-1.0, 1.0, self.steer_bins) if self.steer_bins > 1 else jnp.zeros(1)
        if self.steer_spacing == "quadratic":
            steer = jnp.sign(steer) * steer**2
        accel = jnp.linspace(-1.0, 1.0, self.accel_bins) if self.accel_bins > 1 else jnp.zeros(1)
        grid = jnp.stack(jnp.meshgrid(accel, steer, indexing="xy"), -1).reshape(-1, 2)
        return grid * jnp.stack([params.max_accel, self._steer_scale(params)])

    def _steer_scale(self, params):
        return params.max_steer if self.dynamics == "classic" else params.max_curvature

    # -- moving the controlled agents ---------------------------------------------------------

    def _controls(self, action: jax.Array, params: DriveParams) -> jax.Array:
        """Clipped action -> model units ``[n, A]`` (accel, steer) or the delta / state."""
        action = clip_action(action, self.action_space(params))
        if self.action_type == "discrete":
            return self.action_grid(params)[action]
        if self.dynamics in ("classic", "bicycle"):
            return action * jnp.stack([params.max_accel, self._steer_scale(params)])
        if self.dynamics == "delta_local":
            return action * jnp.stack(
                [params.max_delta_xy, params.max_delta_xy, params.max_delta_yaw]
            )
        # state: x, y in +-state_max_xy, yaw in +-pi, speed in [0, max_speed]
        return jnp.concatenate(
            [
                action[:, :2] * params.state_max_xy,
                action[:, 2:3] * jnp.pi,
                (action[:, 3:4] + 1.0) * 0.5 * params.max_speed,
            ],
            axis=-1,
        )

    def _move_agents(self, state: DriveState, u: jax.Array, params: DriveParams):
        n, dt = self._n, params.dt
        pos, yaw, vel = state.pos[:n], state.yaw[:n], state.vel[:n]
        if self.dynamics in ("classic", "bicycle"):
            speed = jnp.linalg.norm(vel, axis=-1)
            # speeds stay in [0, max_speed]: the acceleration is limited, not the result; an
            # agent already faster (a logged start) cannot speed up but is not snapped down
            # (that was a one-step brake far past what the infeasibility test allows)
            top = jnp.maximum((params.max_speed - speed) / dt, 0.0)
            accel = jnp.clip(u[:, 0], -speed / dt, top)
            if self.dynamics == "classic":
                pos, yaw, speed = dyn.classic_step(
                    pos, yaw, speed, accel, u[:, 1], state.size[:n, 0], dt
                )
                vel = speed[:, None] * dyn.heading(yaw)
            else:
                aligned = speed[:, None] * dyn.heading(yaw)
                pos, yaw, vel = dyn.invertible_step(pos, yaw, aligned, accel, u[:, 1], dt)
        elif self.dynamics == "delta_local":
            pos, yaw, vel = dyn.delta_local_step(pos, yaw, u, dt)
        else:
            pos, yaw, vel = dyn.state_step(u)
        return pos, yaw, vel

    def advance_agents(self, state: DriveState, action, params: DriveParams):
        """New ``(pos, yaw, vel)`` of the controlled agents: the action (clipped; NaN acts as
        0) through the vehicle model for agents still acting; done agents stay frozen, and
        an agent whose step would be non-finite (absurd params) keeps its state."""
        n, acting = self._n, state.active
        pos, yaw, vel = self._move_agents(state, self._controls(action, params), params)
        ok = jnp.isfinite(pos).all(-1) & jnp.isfinite(yaw) & jnp.isfinite(vel).all(-1)
        keep = ~acting | ~ok
        pos = jnp.where(keep[:, None], state.pos[:n], pos)
        yaw = jnp.where(keep, state.yaw[:n], yaw)
        old_vel = jnp.where(acting[:, None], state.vel[:n], 0.0)
        return pos, yaw, jnp.where(keep[:, None], old_vel, vel)

    # -- the step -----------------------------------------------------------------------------

    def step_env(self, key, state: DriveState, action, params: DriveParams):
        n, behavior = self._n, self.collision_behavior
        scene = scene_at(params.scenes, state.scene)
        road = scene.road
        acting = state.active
        pos_a, yaw_a, vel_a = self.advance_agents(state, action, params)
        moved = self._move_others(state, scene, params)
        new = moved.replace(
            pos=moved.pos.at[:n].set(pos_a),
            yaw=moved.yaw.at[:n].set(yaw_a),
            vel=moved.vel.at[:n].set(vel_a),
            time=state.time + 1,
        )

        # events of the agents that acted, on the new state
        size = new.size
        corners = box_corners(new.pos, new.yaw, size[:, 0], size[:, 1])
        overlap = boxes_overlap(corners[:n, None], corners[None, :])
        overlap &= new.exists[None] & ~jnp.eye(n, self._m, dtype=bool)
        hit = jnp.any(overlap, axis=-1) & acting
        edge = road.kind == ROAD_TYPES["road_edge"]
        crosses = segment_hits_box(
            road.seg[None], pos_a[:, None], yaw_a[:, None], size[:n, 0:1], size[:n, 1:2]
        )
        outside = jnp.any(road.quad_valid) & ~points_in_quads(pos_a, road.quads, road.quad_valid)
        off = (jnp.any(crosses & edge[None], axis=-1) | outside) & acting
        accel_r, curv_r = dyn.invertible_inverse(
            state.yaw[:n], state.vel[:n], yaw_a, vel_a, params.dt
        )
        # the curvature test on the yaw it implies: |dyaw| = |curvature| x travel against the
        # limit's yaw over the same travel, with room for the float32 rounding of the two
        # yaws (read back from a tiny travel, that rounding alone passed the limit: 17 % of
        # agents creeping from rest at full lock were flagged)
        speeds = jnp.linalg.norm(state.vel[:n], axis=-1) + jnp.linalg.norm(vel_a, axis=-1)
        travel = 0.5 * speeds * params.dt  # speed dt + accel dt^2 / 2
        infeasible = acting & (
            (jnp.abs(accel_r) > params.infeasible_accel * 1.001)
            | (
                jnp.abs(curv_r) * travel
                > params.infeasible_curvature * 1.001 * travel + YAW_ROUNDING
            )
        )
        dist = jnp.linalg.norm(new.goal - pos_a, axis=-1)
        arrived = acting & (dist <= params.goal_radius)
        crashed = hit | off
        done = arrived | (crashed if behavior != "ignore" else False)
        leaves = arrived | (crashed if behavior == "remove" else False)
        progress = jnp.where(acting, self._progress(state, pos_a, scene, dist), 0.0)
        terms = {
            "goal": arrived.astype(jnp.float32),
            "collision": hit.astype(jnp.float32),
            "offroad": off.astype(jnp.float32),
            "infeasible": infeasible.astype(jnp.float32),
            "progress": progress.astype(jnp.float32),
        }
        if self.reward_type == "sparse":
            reward = terms["goal"]
        else:
            reward = (
                params.goal_reward * terms["goal"]
                + params.collision_weight * terms["collision"]
                + params.offroad_weight * terms["offroad"]
                + params.infeasible_weight * terms["infeasible"]
                + params.progress_weight * terms["progress"]
            )
        reward = jnp.where(acting, reward, 0.0).astype(jnp.float32)
        stopped = done & ~leaves
        new = new.replace(
            exists=new.exists.at[:n].set(new.exists[:n] & ~leaves),
            vel=new.vel.at[:n].set(jnp.where(stopped[:, None], 0.0, new.vel[:n])),
            active=acting & ~done,
            reached=new.reached | arrived,
            collided=new.collided | hit,
            offroad=new.offroad | off,
            infeasible=new.infeasible | infeasible,
            goal_dist=jnp.where(acting, dist, state.goal_dist),
        )
        count = jnp.maximum(jnp.sum(new.spawned), 1).astype(jnp.float32)
        metrics = {
            "goal_rate": jnp.sum(new.reached) / count,
            "collision_rate": jnp.sum(new.collided) / count,
            "offroad_rate": jnp.sum(new.offroad) / count,
            "infeasible_rate": jnp.sum(new.infeasible) / count,
        }
        info = {
            "metrics": {k: v.astype(jnp.float32) for k, v in metrics.items()},
            "reward_terms": terms,
            "agent_terminated": done,
            "agent_mask": new.active,  # the protocol's: the returned state's agent_mask
        }
        obs = self._observe(new, scene, params)
        return obs, new, reward, ~jnp.any(new.active), info

    def _observe(self, state: DriveState, scene, params: DriveParams) -> jax.Array:
        """Observations of ``state`` in ``scene`` (the state's scene, already gathered by
        the caller: ``scene_at(params.scenes, state.scene)``)."""
        return obs_lib.observe(
            state,
            scene.road,
            params,
            num_agents=self._n,
            max_partners=self.max_partners,
            max_road_points=self.max_road_points,
            lidar_rays=self.lidar_rays,
            route=self._route_observation(state, scene, params),
            undirected_lines=self.undirected_lines,
        )

    def _route_observation(self, state: DriveState, scene, params: DriveParams):
        """The observation's route rows ``[n, K_w, 3]``, or None (no route part)."""
        return None

    def _progress(self, state: DriveState, pos: jax.Array, scene, dist: jax.Array):
        """Metres ``f32[n]`` each agent gained towards its goal on this step, moving from
        ``state`` to ``pos f32[n, 2]`` (``dist``: its new straight-line distance to the
        goal): the drop of that distance."""
        return state.goal_dist - dist

    def _move_others(self, state: DriveState, scene, params: DriveParams) -> DriveState:
        raise NotImplementedError

    def render(self, state: DriveState, params: DriveParams) -> np.ndarray:
        from hordax.envs.driving.render import render_scene

        scene = scene_at(params.scenes, int(state.scene))
        radius = float(np.asarray(params.goal_radius))  # the ring an agent arrives within
        return render_scene(scene.road, state, self._n, goal_radius=radius)


# ----------------------------------------------------------------------------------------------
# generated traffic on maps


def random_routes(uniform: jax.Array, lanes, start: jax.Array) -> jax.Array:
    """``i32[M, H]``: from lane ``start[i]``, a uniform random successor at every hop (-1
    after a lane without one), picked by the largest of ``uniform [H - 1, M, S]``."""

    def body(cur, u):
        succ = lanes.succ[jnp.maximum(cur, 0)]  # [M, S]
        ok = (succ >= 0) & (cur >= 0)[:, None]
        pick = jnp.argmax(jnp.where(ok, u, -1.0), axis=-1)
        nxt = jnp.where(ok.any(-1), succ[jnp.arange(succ.shape[0]), pick], -1)
        return nxt, nxt

    rest = jax.lax.scan(body, start, uniform)[1]
    return jnp.concatenate([start[:, None], rest.T], axis=1)


def _route_point(lanes, route: jax.Array, s0: jax.Array, d: jax.Array):
    """Pose ``d`` metres ahead of arc length ``s0`` on ``route[:, 0]`` along the route
    (clamped to the route's end). Returns ``(pos, yaw)``."""
    lens = jnp.where(route >= 0, lanes.length[jnp.maximum(route, 0)], 0.0)  # [M, H]
    ends = jnp.cumsum(lens, axis=-1) - s0[:, None]  # distance from the start to each lane end
    total = ends[:, -1]
    d = jnp.minimum(d, total - 0.01)
    hop = jnp.minimum(jnp.sum(ends < d[:, None], axis=-1), route.shape[1] - 1)
    rows = jnp.arange(route.shape[0])
    before = (ends - lens)[rows, hop]  # where lane route[hop] starts, from s0
    return lane_pose(lanes, jnp.maximum(route[rows, hop], 0), d - before)


class Drive(_Driving):
    """Agents on real or procedural maps with generated goals and IDM background traffic.

    Args:
        scenes: map names (``hordax.envs.driving.maps.MAPS``) and/or procedural kinds
            (``"procedural-intersection"``, ``"procedural-merge"``,
            ``"procedural-roundabout"``: ``num_variants`` random layouts each); one scene of
            the batch is drawn per episode.
        num_agents: controlled agents (the agent axis), all spawned every episode.
        num_background: IDM-driven vehicles beside them (spawned where slots allow).
        route_hops: lanes in a route (goals and background routes follow successors).
        num_variants, seed: procedural layouts per kind and the host seed that draws them.
        route_points: points of each agent's lane route ahead of it in its observation
            (0, the default: none, GPUDrive's layout), ``route_spacing`` metres apart
            (observation.py, ``route``).
        route_features: what each route row holds: ``"points"`` (the default: valid, x, y
            of the first polyline point at or past each arc length, the first one
            ``route_spacing`` ahead) or ``"lane"`` (valid, x, y, cos, sin of the route's
            direction, interpolated, from the agent's foot on its route: row 0 holds its
            lateral offset and heading error; observation.py, ``route_lane``).
        yield_to_crossing: background traffic also yields at crossing conflicts (traffic.py:
            whoever reaches a point of its route first goes first, under constant-velocity
            predictions), not only to the object ahead in its lane; False (the default)
            keeps plain IDM car following, which does not yield to crossing traffic.
        progress: what the reward's ``progress`` term measures: ``"euclidean"`` (the
            default) the drop of the straight-line distance to the goal, ``"route"`` the
            arc length gained along the agent's lane route up to its goal (the agent's
            position projected on the route), which does not pay for cutting across a
            roundabout's island or a corner towards a goal that the road reaches around.
        test_scenes: held-out scenes (maps and/or procedural kinds; a procedural kind here
            draws its layouts from a second seed stream, so they differ from ``scenes``').
        split: which scenes the batch holds: ``"train"`` (``scenes``), ``"test"``
            (``test_scenes``) or ``"all"`` (both; the default). Train with
            ``split="train"``, evaluate with ``hordax eval RUN_DIR split=test``.
        **options: keyword arguments of :class:`_Driving` (dynamics, actions, observation
            sizes, lidar, collision behaviour, reward type).
    """

    def __init__(
        self,
        scenes: str | Sequence[str] = ("procedural-intersection",),
        num_agents: int = 8,
        num_background: int = 8,
        route_hops: int = 8,
        num_variants: int = 8,
        seed: int = 0,
        test_scenes: str | Sequence[str] = (),
        split: str = "all",
        route_points: int = 0,
        route_spacing: float = 5.0,
        route_features: str = "points",
        yield_to_crossing: bool = False,
        progress: str = "euclidean",
        **options: Any,
    ):
        from hordax.envs.driving.scene import stack_maps
        from hordax.envs.driving.sources import map_arrays

        need(
            isinstance(num_background, int) and num_background >= 0,
            "num_background",
            num_background,
            "must be an integer >= 0",
        )
        need(
            isinstance(route_hops, int) and route_hops >= 2,
            "route_hops",
            route_hops,
            "must be an integer >= 2",
        )
        need(split in SPLITS, "split", repr(split), f"must be one of {SPLITS}")
        need(
            isinstance(route_points, int) and route_points >= 0,
            "route_points",
            route_points,
            "must be an integer >= 0",
        )
        need(
            isinstance(route_spacing, (int, float)) and 0 < route_spacing < float("inf"),
            "route_spacing",
            route_spacing,
            "must be a finite number of metres > 0",
        )
        need(
            route_features in obs_lib.ROUTE_WIDTH,
            "route_features",
            repr(route_features),
            f"must be one of {tuple(obs_lib.ROUTE_WIDTH)}",
        )
        need(
            isinstance(yield_to_crossing, bool),
            "yield_to_crossing",
            repr(yield_to_crossing),
            "must be True or False",
        )
        need(
            progress in PROGRESS,
            "progress",
            repr(progress),
            f"must be one of {PROGRESS}",
        )
        test_scenes = (test_scenes,) if isinstance(test_scenes, str) else tuple(test_scenes)
        need(
            split != "test" or bool(test_scenes),
            "split",
            "'test'",
            "needs held-out scenes: test_scenes=() is empty",
        )
        super().__init__(num_agents, num_agents + num_background, **options)
        self.scene_names = (scenes,) if isinstance(scenes, str) else tuple(scenes)
        self.test_scene_names, self.split = test_scenes, split
        self.route_hops = route_hops
        self.route_points, self.route_spacing = route_points, float(route_spacing)
        self.route_features = route_features
        self.yield_to_crossing, self.progress = yield_to_crossing, progress
        arrays = []
        if split != "test":
            arrays += map_arrays(self.scene_names, num_variants, seed)
        if split != "train" and test_scenes:
            arrays += map_arrays(test_scenes, num_variants, seed, True, "test_scenes")
        self._scenes = stack_maps(arrays, self.max_road_points, self._m)
        self._default = DriveParams(scenes=self._scenes)
        self.validate_params(self._default)

    def validate_params(self, params: DriveParams) -> None:
        super().validate_params(params)
        need(
            bool(np.all(np.asarray(params.goal_radius) < np.asarray(params.goal_min_distance))),
            "params.goal_radius",
            _show(params.goal_radius),
            f"must be < params.goal_min_distance={_show(params.goal_min_distance)}: a goal "
            "drawn within the radius of the spawn is reached on the first step without driving",
        )

    def _validate_scenes(self, scenes) -> None:
        lanes = scenes.lanes
        for name in ("pts", "cum", "length", "speed_limit", "spawn_s"):
            v = getattr(lanes, name)
            need(
                _all(v, lambda x: x == x), f"params.scenes.lanes.{name}", _show(v), "must be finite"
            )
        need(
            _all(lanes.length, lambda x: x > 0),
            "params.scenes.lanes.length",
            _show(lanes.length),
            "must be > 0",
        )
        n_lanes = np.asarray(lanes.succ).shape[-2]
        for name in ("succ", "spawn_lane"):
            v = np.asarray(getattr(lanes, name))
            low = -1 if name == "succ" else 0
            need(
                bool(np.all((v >= low) & (v < n_lanes))),
                f"params.scenes.lanes.{name}",
                _show(v),
                f"must be lane indices in [{low}, {n_lanes})",
            )
        npts = np.asarray(lanes.npts)
        need(
            bool(np.all((npts >= 2) & (npts <= np.asarray(lanes.pts).shape[-2]))),
            "params.scenes.lanes.npts",
            _show(npts),
            "must be in [2, points per lane]",
        )
        slots = np.asarray(lanes.spawn_valid).reshape(-1, np.asarray(lanes.spawn_valid).shape[-1])
        fewest = int(slots.sum(-1).min())
        need(
            fewest >= self._n,
            "params.scenes.lanes.spawn_valid",
            f"<{fewest} slots>",
            f"more agents than spawn slots: num_agents={self._n} needs >= {self._n} "
            "valid slots in every scene",
        )

    def reset_env(self, key, params: DriveParams):
        n, m, hops = self._n, self._m, self.route_hops
        lanes0 = params.scenes.lanes
        n_slots, n_succ = lanes0.spawn_valid.shape[-1], lanes0.succ.shape[-1]
        # one draw for everything (each separate draw compiles its own threefry program)
        sizes = [1, n_slots, (hops - 1) * m * n_succ, n, m, m, 2 * m]
        u = jnp.split(jax.random.uniform(key, (sum(sizes),)), np.cumsum(sizes)[:-1])
        count = num_scenes(params.scenes)
        index = jnp.minimum((u[0][0] * count).astype(jnp.int32), count - 1)
        scene = scene_at(params.scenes, index)
        lanes = scene.lanes
        # distinct spawn slots: the m largest random priorities among the valid slots
        top, slot = jax.lax.top_k(jnp.where(lanes.spawn_valid, u[1], -1.0), m)
        exists = top >= 0
        lane0, s0 = lanes.spawn_lane[slot], lanes.spawn_s[slot]
        route = random_routes(u[2].reshape(hops - 1, m, n_succ), lanes, lane0)
        pos, yaw = lane_pose(lanes, lane0, s0)
        d = params.goal_min_distance + (params.goal_max_distance - params.goal_min_distance) * u[3]
        goal = _route_point(lanes, route[:n], s0[:n], d)[0]
        desired = lanes.speed_limit[lane0] * (1.0 + params.idm_speed_jitter * (2 * u[4] - 1))
        speed = jnp.concatenate(
            [params.init_speed_max * u[5][:n], desired[n:] * (0.3 + 0.7 * u[5][n:])]
        )
        jitter = 1.0 + params.size_jitter * (2 * u[6].reshape(m, 2) - 1)
        size = jnp.stack([params.vehicle_length, params.vehicle_width]) * jitter
        vel = speed[:, None] * dyn.heading(yaw)
        kind = exists.astype(jnp.int32)
        state = self._start(index, pos, yaw, vel, size, kind, exists, goal, exists[:n])
        state = state.replace(route=route, s=s0, desired=desired)
        return self._observe(state, scene, params), state

    def _route_observation(self, state: DriveState, scene, params: DriveParams):
        if not self.route_points:
            return None
        return obs_lib.ROUTE_ROWS[self.route_features](
            state,
            scene.lanes,
            params,
            num_agents=self._n,
            points=self.route_points,
            spacing=self.route_spacing,
        )

    def _progress(self, state: DriveState, pos: jax.Array, scene, dist: jax.Array):
        if self.progress == "euclidean":
            return super()._progress(state, pos, scene, dist)
        pts, ok, cum = obs_lib.route_polyline(scene.lanes, state.route[: self._n])
        goal = obs_lib.route_arc(pts, ok, cum, state.goal)
        before = jnp.minimum(obs_lib.route_arc(pts, ok, cum, state.pos[: self._n]), goal)
        return jnp.minimum(obs_lib.route_arc(pts, ok, cum, pos), goal) - before

    def _move_others(self, state: DriveState, scene, params: DriveParams) -> DriveState:
        """IDM along each background vehicle's route; the leader is the nearest object
        ahead in its lane corridor (its own frame: ahead, lateral overlap + 0.3 m) or, with
        ``yield_to_crossing``, the first crossing conflict it must yield at, if nearer."""
        n, m, dt = self._n, self._m, params.dt
        if m == n:
            return state
        lanes, bg = scene.lanes, slice(n, m)
        route = None
        if self.yield_to_crossing:
            pts, ok, cum = obs_lib.route_polyline(lanes, state.route[bg])
            # arc length along the whole route: the start of lane route[hop] + s on it
            first = state.hop[bg] * lanes.pts.shape[1]  # that lane's first polyline point
            here = jnp.take_along_axis(cum, first[:, None], axis=1)[:, 0] + state.s[bg]
            route = (pts, ok, cum, here)
        gap, lead_speed = following_gaps(state, n, m, route)
        speed = jnp.linalg.norm(state.vel[bg], axis=-1)
        accel = dyn.idm_accel(speed, state.desired[bg], gap, speed - lead_speed, params)
        accel = jnp.clip(accel, -9.0, params.idm_max_accel)
        new_speed = jnp.maximum(speed + accel * dt, 0.0)
        s = state.s[bg] + 0.5 * (speed + new_speed) * dt
        hop, route = state.hop[bg], state.route[bg]
        rows, last = jnp.arange(m - n), route.shape[1] - 1
        for _ in range(2):  # lanes shorter than a step's travel are crossed in one step
            lane, nxt = route[rows, hop], route[rows, jnp.minimum(hop + 1, last)]
            length = lanes.length[jnp.maximum(lane, 0)]
            over = (s > length) & (hop < last) & (nxt >= 0)
            s = jnp.where(over, s - length, s)
            hop = jnp.where(over, hop + 1, hop)
        lane = jnp.maximum(route[rows, hop], 0)
        exists = state.exists[bg] & (s <= lanes.length[lane])  # route's end: it leaves
        pos, yaw = lane_pose(lanes, lane, s)
        live = state.exists[bg]
        pos = jnp.where(live[:, None], pos, state.pos[bg])
        yaw = jnp.where(live, yaw, state.yaw[bg])
        vel = jnp.where(exists[:, None], new_speed[:, None] * dyn.heading(yaw), 0.0)
        return state.replace(
            pos=state.pos.at[bg].set(pos),
            yaw=state.yaw.at[bg].set(yaw),
            vel=state.vel.at[bg].set(vel),
            exists=state.exists.at[bg].set(exists),
            hop=state.hop.at[bg].set(hop),
            s=state.s.at[bg].set(jnp.where(live, s, state.s[bg])),
        )


# ----------------------------------------------------------------------------------------------
# logged scenes (GPUDrive JSON)


class DriveLog(_Driving):
    """GPUDrive JSON scenes: the first ``num_agents`` controllable vehicles of each file are
    controlled, every other object replays its log (present where ``valid``).

    Args:
        files: GPUDrive JSON scene files (default: the shipped hand-made example); one is
            drawn per episode, so with a single file the reset is deterministic
            (``random_reset`` False).
        num_agents: controlled slots (files with fewer controllable vehicles pad them; an
            agent that starts within ``params.goal_radius`` of its goal, possible when that
            is raised above the 2 m the agents are picked with, is not spawned: it stays at
            its start as an obstacle, masked and out of the metrics).
        max_objects: object slots in all (controlled + replayed); a file with more objects
            is refused, naming the file and field.
        **options: keyword arguments of :class:`_Driving`.
    """

    def __init__(
        self,
        files: str | Sequence[str] = (),
        num_agents: int = 4,
        max_objects: int = 16,
        **options: Any,
    ):
        from hordax.envs.driving import gpudrive_json
        from hordax.envs.driving.scene import stack_logs

        files = (files,) if isinstance(files, str) else tuple(files) or (gpudrive_json.EXAMPLE,)
        need(
            isinstance(max_objects, int) and max_objects >= num_agents,
            "max_objects",
            max_objects,
            f"must be an integer >= num_agents={num_agents}",
        )
        super().__init__(num_agents, max_objects, **options)
        self.files = files
        goal_radius = DriveParams(scenes=None).goal_radius
        logs = [
            gpudrive_json.log_arrays(gpudrive_json.load(f), f, num_agents, max_objects, goal_radius)
            for f in files
        ]
        self.random_reset = len(files) > 1
        self._default = DriveParams(scenes=stack_logs(logs, min_roads=self.max_road_points))
        self.validate_params(self._default)

    def validate_params(self, params: DriveParams) -> None:
        super().validate_params(params)
        need(
            _all(params.dt, lambda x: np.abs(x - LOG_DT) < 1e-6),
            "params.dt",
            _show(params.dt),
            f"must be {LOG_DT} s: the logs are replayed one {LOG_DT} s log step per env step, "
            "so another dt moves the controlled agents at another rate than the logged objects",
        )

    def _validate_scenes(self, sc) -> None:
        for name in ("traj", "size", "goal"):
            v = getattr(sc, name)
            need(_all(v, lambda x: x == x), f"params.scenes.{name}", _show(v), "must be finite")
        need(_all(sc.size, lambda x: x > 0), "params.scenes.size", _show(sc.size), "must be > 0")
        kind = np.asarray(sc.kind)
        need(
            bool(np.all((kind >= 0) & (kind <= 3))),
            "params.scenes.kind",
            _show(kind),
            "must be object types in [0, 3]",
        )

    def reset_env(self, key, params: DriveParams):
        n = self._n
        count = num_scenes(params.scenes)
        index = jnp.minimum((jax.random.uniform(key) * count).astype(jnp.int32), count - 1)
        sc = scene_at(params.scenes, index)
        exists = sc.valid[:, 0]
        start = sc.traj[:, 0]
        # the agents were picked with the default goal radius; one that starts within
        # params.goal_radius (a larger one) would "arrive" on its first step without
        # driving: it is not spawned (masked, out of the metrics) and stays where it starts
        trivial = jnp.linalg.norm(sc.goal[:n] - start[:n, 0:2], axis=-1) <= params.goal_radius
        spawned = sc.controlled[:n] & exists[:n] & ~trivial
        standing = jnp.zeros(self._m, bool).at[:n].set(~spawned)  # agent slots left out
        state = self._start(
            index,
            start[:, 0:2],
            start[:, 2],
            jnp.where(standing[:, None], 0.0, start[:, 3:5]),
            sc.size,
            sc.kind,
            exists,
            sc.goal[:n],
            spawned,
        )
        return self._observe(state, sc, params), state

    def _move_others(self, state: DriveState, scene, params: DriveParams) -> DriveState:
        """Log replay of slots ``n..M-1`` at the next step (the log's last step after it)."""
        n = self._n
        t = jnp.minimum(state.time + 1, scene.traj.shape[1] - 1)
        now = scene.traj[n:, t]
        return state.replace(
            pos=state.pos.at[n:].set(now[:, 0:2]),
            yaw=state.yaw.at[n:].set(now[:, 2]),
            vel=state.vel.at[n:].set(now[:, 3:5]),
            exists=state.exists.at[n:].set(scene.valid[n:, t]),
        )


def _spell_out_options(cls: type) -> type:
    """Give ``cls`` (whose ``__init__`` forwards ``**options`` to :class:`_Driving`) the
    signature with those options spelled out as keyword-only arguments: the registry reads
    it to tell constructor arguments from params overrides (``make(id, dynamics=...,
    progress_weight=...)``), and ``help(cls)`` shows them."""
    own = list(inspect.signature(cls.__init__).parameters.values())[1:]  # without self
    shared = list(inspect.signature(_Driving.__init__).parameters.values())[3:]
    own = [p for p in own if p.kind is not inspect.Parameter.VAR_KEYWORD]
    shared = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in shared]
    cls.__signature__ = inspect.Signature(own + shared)
    return cls


_spell_out_options(Drive)
_spell_out_options(DriveLog)
