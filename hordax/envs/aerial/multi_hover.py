"""``Aerial-MultiHover-v0``: N quadrotors share the airspace, each must reach its own goal."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.aerial import common
from hordax.envs.aerial import controllers as ctl
from hordax.envs.aerial import dynamics as dyn
from hordax.envs.aerial.hover import setpoint_reward, validate_setpoint_terms
from hordax.envs.core import MultiAgentEnvironment


@struct.dataclass
class MultiHoverState:
    quad: dyn.QuadState  # leaves with a leading agent axis [n, ...]
    goal: jax.Array  # f32[n, 3]
    crashed: jax.Array  # bool[n]: the agent crashed earlier (frozen, masked)
    time: jax.Array  # i32[]


@struct.dataclass
class MultiHoverParams:
    quad: dyn.QuadParams = struct.field(default_factory=dyn.aerial_gym_quad)
    ctrl: ctl.ControllerParams = struct.field(default_factory=ctl.default_gains)
    max_steps_in_episode: int = 500
    center: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.0, 0.0, 2.0], jnp.float32)
    )  # f32[3] centre of the start/goal ring (m)
    ring_radius: jax.Array = 2.0  # m: starts on a ring, goals at the diametrically opposite
    jitter: jax.Array = 0.2  # m, U(-jitter, jitter) per axis on starts and goals
    collision_distance: jax.Array = 0.3  # m between drone centres: both crash
    crash_distance: jax.Array = 8.0  # m from the own goal: crash
    ground_z: jax.Array = 0.0
    crash_reward: jax.Array = -20.0
    success_radius: jax.Array = 0.1
    # Hover's optional terms of Aerial Gym's sim2real setpoint task (0 = off: the base reward)
    precision_gain: jax.Array = 0.0  # x exp(-50 d)
    progress_scale: jax.Array = 0.0  # x (d_prev - d) per step
    # Separation shaping (0 = off): minus separation_penalty x sum over the other flying
    # agents of max(0, 1 - gap / separation_radius) per step: a slope before the collision
    separation_penalty: jax.Array = 0.0
    separation_radius: jax.Array = 1.0  # m
    # > 0: the gap above is the pair's predicted closest approach within this many seconds
    # at their current velocities (a closing pair is penalized before it is near; 0 = the
    # current gap)
    separation_horizon: jax.Array = 0.0  # s
    # Threat sensing (inf = off, every other drone observed): the others' relative position
    # and velocity are observed only while the pair's predicted closest approach within
    # sensing_horizon s is under sensing_radius m, zeros otherwise (a drone is never at zero
    # offset: it would have collided). Far-off drones at rest then leave the observation,
    # and with it the point a policy comes to rest at; closing ones enter it early. (m)
    sensing_radius: jax.Array = struct.field(default=float("inf"), metadata={"allow_inf": True})
    sensing_horizon: jax.Array = 1.0  # s
    # spawn attitude/velocity noise (as Hover)
    spawn_pos_range: jax.Array = struct.field(default_factory=lambda: jnp.zeros(3, jnp.float32))
    spawn_tilt: jax.Array = 0.2
    spawn_speed: jax.Array = 0.2
    spawn_rate: jax.Array = 0.2


def miss_vector(rel_pos: jax.Array, rel_vel: jax.Array, horizon: jax.Array) -> jax.Array:
    """``f32[..., 3]``: the other drone's predicted offset ``p + v t`` at the ``t`` in
    ``[0, horizon]`` (s) where the pair is closest, at their current velocities.

    ``rel_pos``, ``rel_vel``: ``f32[..., 3]`` (the other drone's minus this one's); a pair
    moving apart (or ``horizon`` 0) gives the current offset ``p``.
    """
    speed2 = jnp.sum(rel_vel * rel_vel, axis=-1)
    closing = -jnp.sum(rel_pos * rel_vel, axis=-1)  # > 0 when approaching
    t = jnp.clip(closing / jnp.maximum(speed2, 1e-9), 0.0, horizon)
    return rel_pos + t[..., None] * rel_vel


def closest_approach(rel_pos: jax.Array, rel_vel: jax.Array, horizon: jax.Array) -> jax.Array:
    """``f32[...]``: the smallest gap ``|p + v t|`` over ``t`` in ``[0, horizon]`` (s)
    (the norm of :func:`miss_vector`)."""
    return jnp.linalg.norm(miss_vector(rel_pos, rel_vel, horizon), axis=-1)


class MultiHover(MultiAgentEnvironment[MultiHoverState, MultiHoverParams]):
    """``num_agents`` drones start on a ring and must swap to the opposite side.

    Paths cross near the centre, so agents must avoid each other.

    - constructor: ``num_agents`` (2..16, default 4), ``controller`` (default
      ``"velocity"``), ``airframe``, ``fine_error`` (m, default 0 = off), ``miss_vectors``
      (default False), ``frame`` (``"world"``, the default, or ``"yaw"``: every vector below
      in the drone's yaw frame, the frame of the velocity command, and the quaternion
      without its yaw, so that a policy needs neither to hold its heading nor to turn the
      world's vectors into its command's frame).
    - observation ``f32[n, own_size + per_other (n - 1)]``: the agent's Aerial Gym 13 (goal -
      position first), with ``fine_error`` > 0 followed by the goal error at that scale,
      ``clip((goal - position) / fine_error, -1, 1)`` (a linear signal of the last
      centimetres, where the 13's error is a sliver of its normalized range; ``own_size``
      16, else 13); then the other agents' positions relative to it (others in index order,
      world frame), then their velocities relative to it (same order): a closing speed is
      what tells a policy that a crossing drone will collide; a crashed (frozen) drone is
      observed at zero velocity. With ``miss_vectors`` a third block follows: each other's
      predicted offset at the pair's closest approach within ``sensing_horizon`` s
      (:func:`miss_vector`: the way to move away from a collision course, which the
      position and velocity give only through a quotient; ``per_other`` 9, else 6). With a
      finite ``sensing_radius`` another drone's values are zeros unless the pair's predicted
      closest approach within ``sensing_horizon`` s is under ``sensing_radius`` m (threat
      sensing).
    - action ``f32[n, 4]`` in ``[-1, 1]``; NaN -> 0, clipped. Crashed agents are frozen.
    - reward ``f32[n]``: Hover's reward per agent (with its optional ``precision_gain`` and
      ``progress_scale`` terms, off by default), minus ``separation_penalty`` x the sum over
      the other flying agents of ``max(0, 1 - gap / separation_radius)`` (off by default;
      with ``separation_horizon`` > 0 the gap is the pair's predicted closest approach
      within that many seconds at their current velocities);
      ``crash_reward`` on the step an agent crashes; 0 afterwards.
    - agent crash: below ground, farther than ``crash_distance`` from its goal, non-finite,
      or closer than ``collision_distance`` to another live agent (both crash).
      ``info["agent_terminated"]`` = crashed so far; ``info["agent_mask"]`` = still flying.
    - termination (episode): every agent crashed. Truncation: ``max_steps_in_episode``.
    - metrics: ``distance`` (mean over live agents), ``success`` (fraction of agents within
      ``success_radius``), ``all_success`` (1 when every agent is flying and within
      ``success_radius``: the team's success), ``crashed`` (fraction), ``collisions``
      (agents crashed by collision this step).
    """

    def __init__(
        self,
        num_agents: int = 4,
        controller: str = "velocity",
        airframe: str = "aerial_gym",
        fine_error: float = 0.0,
        miss_vectors: bool = False,
        frame: str = "world",
    ):
        super().__init__()
        if not 2 <= int(num_agents) <= 16:
            raise ValueError(f"num_agents={num_agents}: must be an integer in [2, 16]")
        if not (math.isfinite(float(fine_error)) and float(fine_error) >= 0):
            raise ValueError(f"fine_error={fine_error}: must be finite and >= 0 (0 = off)")
        self._num_agents = int(num_agents)
        self.fine_error = float(fine_error)
        if not isinstance(miss_vectors, bool | np.bool_):
            raise ValueError(f"miss_vectors={miss_vectors!r}: must be true or false")
        self.miss_vectors = bool(miss_vectors)
        if frame not in ("world", "yaw"):
            raise ValueError(f"frame={frame!r}: must be 'world' or 'yaw'")
        self.frame = frame
        #: values observed per other drone: relative position and velocity (and miss vector)
        self.per_other = 9 if self.miss_vectors else 6
        #: length of the agent's own part of the observation (before the others' vectors)
        self.own_size = 16 if self.fine_error > 0 else 13
        self.controller = common.check_controller(controller)
        self.airframe = airframe
        self._quad, self._ctrl = common.airframe_presets(airframe)

    @property
    def name(self) -> str:
        return "Aerial-MultiHover-v0"

    @property
    def num_agents(self) -> int:
        return self._num_agents

    @property
    def default_params(self) -> MultiHoverParams:
        return MultiHoverParams(quad=self._quad, ctrl=self._ctrl)

    def reset_env(self, key: jax.Array, params: MultiHoverParams):
        n = self.num_agents
        k_ring, k_spawn = jax.random.split(key)
        u = jax.random.uniform(k_ring, (1 + 6 * n,), jnp.float32, -1.0, 1.0)  # one draw
        angle = (u[0] + 1.0) * math.pi
        angles = angle + 2 * math.pi * jnp.arange(n, dtype=jnp.float32) / n
        ring = jnp.stack([jnp.cos(angles), jnp.sin(angles), jnp.zeros(n)], -1)
        starts = params.center + params.ring_radius * ring
        starts = starts + params.jitter * u[1 : 1 + 3 * n].reshape(n, 3)
        goals = params.center - params.ring_radius * ring
        goals = goals + params.jitter * u[1 + 3 * n :].reshape(n, 3)
        quad = jax.vmap(
            lambda k, p: common.spawn(
                k,
                p,
                params.spawn_pos_range,
                params.spawn_tilt,
                params.spawn_speed,
                params.spawn_rate,
                params.quad,
            )
        )(jax.random.split(k_spawn, n), starts.astype(jnp.float32))
        state = MultiHoverState(
            quad=quad, goal=goals.astype(jnp.float32), crashed=jnp.zeros(n, bool), time=jnp.int32(0)
        )
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: MultiHoverState, action: jax.Array, params):
        n = self.num_agents
        fly = jax.vmap(common.fly, (0, 0, 0, None, None, None))
        quad, finite = fly(
            jax.random.split(key, n), state.quad, action, self.controller, params.quad, params.ctrl
        )
        live = ~state.crashed
        quad = jax.tree.map(
            lambda new, old: jnp.where(live.reshape((n,) + (1,) * (new.ndim - 1)), new, old),
            quad,
            state.quad,
        )
        reward, terms, crashed_solo, distance = jax.vmap(setpoint_reward, (0, 0, 0, None))(
            quad, state.quad.pos, state.goal, params
        )
        rel_pos = quad.pos[None] - quad.pos[:, None]  # [i, j]: x_j - x_i
        gap = jnp.linalg.norm(rel_pos, axis=-1)
        both_live = live[:, None] & live[None, :] & ~jnp.eye(n, dtype=bool)
        collided = jnp.any(both_live & (gap < params.collision_distance), axis=1)
        near = closest_approach(
            rel_pos, quad.vel[None] - quad.vel[:, None], params.separation_horizon
        )
        crowding = jnp.sum(
            jnp.where(both_live, jnp.maximum(0.0, 1.0 - near / params.separation_radius), 0.0),
            axis=1,
        )
        reward = reward - params.separation_penalty * crowding
        terms = {**terms, "crowding": crowding}
        new_crash = live & (crashed_solo | ~finite | collided)
        reward = jnp.where(new_crash, params.crash_reward, jnp.where(live, reward, 0.0))
        crashed = state.crashed | new_crash
        new_state = state.replace(quad=quad, crashed=crashed, time=state.time + 1)
        still = ~crashed
        count = jnp.maximum(jnp.sum(still), 1)
        within = still & (distance < params.success_radius)
        info = {
            "metrics": {
                "distance": jnp.sum(jnp.where(still, distance, 0.0)) / count,
                "success": jnp.mean(within.astype(jnp.float32)),
                "all_success": jnp.all(within).astype(jnp.float32),
                "crashed": jnp.mean(crashed.astype(jnp.float32)),
                "collisions": jnp.sum((live & collided).astype(jnp.float32)),
            },
            "reward_terms": {
                k: jnp.mean(jnp.where(live, v, 0.0)).astype(jnp.float32) for k, v in terms.items()
            },
            "agent_terminated": crashed,
            "agent_mask": still,
        }
        obs = self.observe(key, new_state, action, params)
        return obs, new_state, reward.astype(jnp.float32), jnp.all(crashed), info

    def observe(self, key: jax.Array, state: MultiHoverState, action: Any, params):
        n = self.num_agents
        quad = state.quad
        to_frame = None  # world -> each drone's yaw frame, when observed in it
        if self.frame == "yaw":  # vectors in each drone's yaw frame, attitude without yaw
            euler = dyn.quat_to_euler(quad.quat)  # f32[n, 3]: roll, pitch, yaw

            def to_frame(v):  # f32[n, ..., 3]: Rz(-yaw_i) v for agent i
                return common.yaw_frame(euler[:, 2].reshape((n,) + (1,) * (v.ndim - 2)), v)

            # q = q_yaw q_tilt: with q_tilt and the yaw-frame velocity the body velocity
            # (q_tilt^-1 applied) and the body rates are unchanged
            tilt = dyn.quat_from_euler(euler[:, 0], euler[:, 1], jnp.zeros_like(euler[:, 2]))
            quad = quad.replace(quat=tilt, vel=to_frame(quad.vel))
            error = to_frame(state.goal - state.quad.pos)
        else:
            error = state.goal - quad.pos  # f32[n, 3]
        own = jax.vmap(common.state_observation)(quad, error)
        if self.fine_error > 0:  # the goal error at a fine scale, saturating beyond it
            own = jnp.concatenate([own, jnp.clip(error / self.fine_error, -1.0, 1.0)], axis=-1)
        others = np.array([[j for j in range(n) if j != i] for i in range(n)], np.int32)

        def relative(x):  # f32[n, n - 1, 3], [i, k]: x_j - x_i for the k-th other j of i
            rel = x[None, :, :] - x[:, None, :]
            return rel[np.arange(n)[:, None], others]

        # a crashed drone is frozen in place: others see it at rest, not at the velocity it
        # had when it crashed (its state keeps that velocity)
        vel = jnp.where(state.crashed[:, None], 0.0, state.quad.vel)
        rel_pos, rel_vel = relative(state.quad.pos), relative(vel)
        miss = miss_vector(rel_pos, rel_vel, params.sensing_horizon)  # f32[n, n - 1, 3]
        sensed = (jnp.linalg.norm(miss, axis=-1) < params.sensing_radius)[..., None]
        parts = (rel_pos, rel_vel, miss) if self.miss_vectors else (rel_pos, rel_vel)
        if to_frame is not None:
            parts = tuple(to_frame(r) for r in parts)
        rel = [jnp.where(sensed, r, 0.0).reshape(n, 3 * (n - 1)) for r in parts]
        return jnp.concatenate([own, *rel], axis=-1).astype(jnp.float32)

    def agent_mask(self, state: MultiHoverState, params: MultiHoverParams) -> jax.Array:
        return ~state.crashed

    def observation_space(self, params: MultiHoverParams) -> spaces.Box:
        n = self.num_agents
        high = np.full((n, self.own_size + self.per_other * (n - 1)), np.inf, np.float32)
        high[:, 3:7] = 1.0
        high[:, 13 : self.own_size] = 1.0
        return spaces.Box(jnp.asarray(-high), jnp.asarray(high), high.shape, jnp.float32)

    def action_space(self, params: MultiHoverParams) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (self.num_agents, 4), jnp.float32)

    def validate_params(self, params: MultiHoverParams) -> None:
        super().validate_params(params)
        common.validate_common(params)
        validate_setpoint_terms(params)
        penalty = np.asarray(params.separation_penalty, np.float64)
        if not np.all(np.isfinite(penalty)) or np.any(penalty < 0):
            raise ValueError(
                f"params.separation_penalty={penalty.tolist()}: must be finite and >= 0"
            )
        for name in ("separation_horizon", "sensing_horizon"):
            horizon = np.asarray(getattr(params, name), np.float64)
            if not np.all(np.isfinite(horizon)) or np.any(horizon < 0):
                raise ValueError(f"params.{name}={horizon.tolist()}: must be finite and >= 0")
        sensing = np.asarray(params.sensing_radius, np.float64)
        if np.any(np.isnan(sensing)) or np.any(sensing <= 0):
            raise ValueError(
                f"params.sensing_radius={sensing.tolist()}: must be > 0 (inf: observe every drone)"
            )
        for name in ("ring_radius", "collision_distance", "separation_radius"):
            v = np.asarray(getattr(params, name), np.float64)
            if not np.all(np.isfinite(v)) or np.any(v <= 0):
                raise ValueError(f"params.{name}={v.tolist()}: must be finite and > 0")
        low = np.asarray(params.center)[..., 2] - np.asarray(params.jitter)
        if np.any(low <= np.asarray(params.ground_z)):
            raise ValueError(
                f"params.center={np.asarray(params.center).tolist()}, "
                f"params.jitter={np.asarray(params.jitter).tolist()}, "
                f"params.ground_z={np.asarray(params.ground_z).tolist()}: starts and goals "
                "(center z - jitter) must be above ground_z"
            )
        spawn = np.asarray(params.spawn_pos_range, np.float64)
        jitter = np.abs(np.asarray(params.jitter, np.float64))
        common.check_starts(
            params,
            lowest=low - spawn[..., 2],
            # start - goal = 2 r ring + jitter (u1 - u2) + spawn offset, |u1 - u2| <= 2 sqrt(3)
            farthest=2.0 * np.asarray(params.ring_radius, np.float64)
            + 2.0 * math.sqrt(3.0) * jitter
            + np.linalg.norm(spawn, axis=-1),
            fields={
                "lowest": "params.center z - params.jitter - params.spawn_pos_range z",
                "farthest": "2 params.ring_radius + 2 sqrt(3) params.jitter + "
                "|params.spawn_pos_range| (from the goal)",
            },
        )
        common.check_success_radius(params)

    def render(self, state: MultiHoverState, params: MultiHoverParams) -> np.ndarray:
        from hordax.envs.aerial.render import render_scene

        return render_scene(
            np.asarray(state.quad.pos),
            np.asarray(state.quad.quat),
            targets=np.asarray(state.goal),
            arm=float(np.max(np.abs(np.asarray(params.quad.motor_xy)))) * math.sqrt(2.0),
        )
