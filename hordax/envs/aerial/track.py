"""``Aerial-Track-v0``: follow a moving figure-eight (lemniscate) reference."""

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
from hordax.envs.core import Environment


@struct.dataclass
class TrackState:
    quad: dyn.QuadState
    phase: jax.Array  # f32[] reference phase at time 0 (rad)
    time: jax.Array  # i32[]
    error_sum: jax.Array  # f32[] tracking error summed over the episode's steps so far (m)


@struct.dataclass
class TrackParams:
    """Airframe, gains, the figure-eight's shape and speed, spawn, reward and crash rules."""

    quad: dyn.QuadParams = struct.field(default_factory=dyn.aerial_gym_quad)
    ctrl: ctl.ControllerParams = struct.field(default_factory=ctl.default_gains)
    max_steps_in_episode: int = 1000  # 10 s
    center: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.0, 0.0, 2.0], jnp.float32)
    )  # f32[3] m
    amplitude: jax.Array = struct.field(
        default_factory=lambda: jnp.array([2.0, 1.0, 0.0], jnp.float32)
    )  # f32[3] m: x, y (figure-eight lobes) and z (vertical wave) amplitudes
    period: jax.Array = 8.0  # s for one figure-eight
    lookahead: jax.Array = 0.5  # s, the observation's future reference point
    spawn_pos_range: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.5, 0.5, 0.5], jnp.float32)
    )  # f32[3] start = reference(0) + U(-range, range)
    spawn_tilt: jax.Array = 0.3
    spawn_speed: jax.Array = 0.3
    spawn_rate: jax.Array = 0.3
    crash_distance: jax.Array = 3.0  # m from the current reference point
    ground_z: jax.Array = 0.0
    crash_reward: jax.Array = -20.0


def reference(t: jax.Array, phase: jax.Array, params: TrackParams):
    """Figure-eight reference at time ``t`` (s): ``(pos f32[3], vel f32[3], acc f32[3])``.

    ``s = 2 pi t / period + phase``; ``pos = center + (A_x sin s, A_y sin 2s / 2, A_z sin s)``
    (a lemniscate of Gerono in x-y); ``vel``/``acc`` are its exact time derivatives.
    """
    w = 2.0 * math.pi / params.period
    s = w * t + phase
    a = params.amplitude
    offset = jnp.stack([a[0] * jnp.sin(s), a[1] * jnp.sin(2 * s) / 2, a[2] * jnp.sin(s)])
    pos = params.center + offset
    vel = w * jnp.stack([a[0] * jnp.cos(s), a[1] * jnp.cos(2 * s), a[2] * jnp.cos(s)])
    acc = -(w**2) * jnp.stack([a[0] * jnp.sin(s), 2 * a[1] * jnp.sin(2 * s), a[2] * jnp.sin(s)])
    return pos.astype(jnp.float32), vel.astype(jnp.float32), acc.astype(jnp.float32)


class Track(Environment[TrackState, TrackParams]):
    """Track a time-varying figure-eight reference with a random phase per episode.

    - constructor: ``controller`` (default ``"attitude"``) and ``airframe`` as in Hover.
    - observation: ``f32[19]`` = Aerial Gym's 13 with ``reference(t) - position`` as the
      first 3, then the reference velocity (3, world) and
      ``reference(t + lookahead) - position`` (3).
    - action: ``f32[4]`` in ``[-1, 1]`` (controller-dependent); NaN -> 0, clipped.
    - reward: with ``d = |ref - pos|``: ``2 exp(-2 d) + exp(-|v - v_ref|) + 0.2 / (1 + |w|^2)``;
      ``crash_reward`` (-20) on a crash step. Terms in ``info["reward_terms"]``.
    - termination (crash): ``z <= ground_z``, ``d > crash_distance`` or non-finite state.
    - truncation: ``time >= max_steps_in_episode`` (1000 = 10 s).
    - metrics: ``tracking_error`` (m, this step), ``mean_tracking_error`` (m, mean over the
      episode's steps so far: at its last step, the whole episode's), ``crashed``.
    """

    reads_time = True  # the reference trajectory is a function of state.time

    def __init__(self, controller: str = "attitude", airframe: str = "aerial_gym"):
        super().__init__()
        self.controller = common.check_controller(controller)
        self.airframe = airframe
        self._quad, self._ctrl = common.airframe_presets(airframe)

    @property
    def name(self) -> str:
        return "Aerial-Track-v0"

    @property
    def default_params(self) -> TrackParams:
        return TrackParams(quad=self._quad, ctrl=self._ctrl)

    def reset_env(self, key: jax.Array, params: TrackParams) -> tuple[jax.Array, TrackState]:
        k_phase, k_spawn = jax.random.split(key)
        phase = jax.random.uniform(k_phase, (), jnp.float32, 0.0, 2.0 * math.pi)
        start = reference(jnp.float32(0.0), phase, params)[0]
        quad = common.spawn(
            k_spawn,
            start,
            params.spawn_pos_range,
            params.spawn_tilt,
            params.spawn_speed,
            params.spawn_rate,
            params.quad,
        )
        state = TrackState(quad=quad, phase=phase, time=jnp.int32(0), error_sum=jnp.float32(0.0))
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: TrackState, action: jax.Array, params: TrackParams):
        quad, finite = common.fly(
            key, state.quad, action, self.controller, params.quad, params.ctrl
        )
        time = state.time + 1
        t = time.astype(jnp.float32) * params.quad.dt
        ref_pos, ref_vel, _ = reference(t, state.phase, params)
        distance = jnp.linalg.norm(ref_pos - quad.pos)
        error_sum = state.error_sum + distance
        new_state = state.replace(quad=quad, time=time, error_sum=error_sum)
        track = jnp.exp(-2.0 * distance)
        vel = jnp.exp(-jnp.linalg.norm(quad.vel - ref_vel))
        spin = 1.0 / (1.0 + jnp.sum(quad.omega**2))
        reward = 2.0 * track + vel + 0.2 * spin
        crashed = (
            dyn.below_ground(quad, params.ground_z) | (distance > params.crash_distance) | ~finite
        )
        reward = jnp.where(crashed, params.crash_reward, reward).astype(jnp.float32)
        info = {
            "metrics": {
                "tracking_error": distance,
                # at an episode's last step: the whole episode's mean (the Lee reference's figure)
                "mean_tracking_error": error_sum / time.astype(jnp.float32),
                "crashed": crashed.astype(jnp.float32),
            },
            "reward_terms": {
                "track": track,
                "velocity": vel,
                "spin": spin,
                "crash": crashed.astype(jnp.float32),
            },
        }
        return self.observe(key, new_state, action, params), new_state, reward, crashed, info

    def observe(self, key: jax.Array, state: TrackState, action: Any, params: TrackParams):
        t = state.time.astype(jnp.float32) * params.quad.dt
        ref_pos, ref_vel, _ = reference(t, state.phase, params)
        ahead = reference(t + params.lookahead, state.phase, params)[0]
        base = common.state_observation(state.quad, ref_pos - state.quad.pos)
        return jnp.concatenate([base, ref_vel, ahead - state.quad.pos]).astype(jnp.float32)

    def observation_space(self, params: TrackParams) -> spaces.Box:
        high = np.full(19, np.inf, np.float32)
        high[3:7] = 1.0
        return spaces.Box(jnp.asarray(-high), jnp.asarray(high), (19,), jnp.float32)

    def action_space(self, params: TrackParams) -> spaces.Box:
        return common.action_space()

    def validate_params(self, params: TrackParams) -> None:
        super().validate_params(params)
        common.validate_common(params)
        for name in ("period", "lookahead"):
            value = np.asarray(getattr(params, name), np.float64)
            if not np.all(np.isfinite(value)) or np.any(value <= 0):
                raise ValueError(f"params.{name}={value.tolist()}: must be finite and > 0")
        amp = np.asarray(params.amplitude, np.float64)
        if not np.all(np.isfinite(amp)) or np.any(amp < 0):
            raise ValueError(f"params.amplitude={amp.tolist()}: must be finite and >= 0")
        lowest = np.asarray(params.center)[..., 2] - amp[..., 2]
        if np.any(lowest <= np.asarray(params.ground_z)):
            raise ValueError(
                f"params.center={np.asarray(params.center).tolist()}, "
                f"params.amplitude={amp.tolist()}, "
                f"params.ground_z={np.asarray(params.ground_z).tolist()}: the reference "
                "(center z - amplitude z) must stay above ground_z"
            )
        spawn = np.asarray(params.spawn_pos_range, np.float64)
        common.check_starts(
            params,
            lowest=lowest - spawn[..., 2],
            farthest=np.linalg.norm(spawn, axis=-1),
            fields={
                "lowest": "params.center z - params.amplitude z - params.spawn_pos_range z",
                "farthest": "|params.spawn_pos_range| (from the reference)",
            },
        )

    def render(self, state: TrackState, params: TrackParams) -> np.ndarray:
        from hordax.envs.aerial.render import render_scene

        ts = jnp.linspace(0.0, 1.0, 64, dtype=jnp.float32) * params.period
        path = np.asarray(jax.vmap(reference, (0, None, None))(ts, state.phase, params)[0])
        t_now = float(state.time) * float(params.quad.dt)
        ref_now = np.asarray(reference(jnp.float32(t_now), state.phase, params)[0])
        return render_scene(
            np.asarray(state.quad.pos)[None],
            np.asarray(state.quad.quat)[None],
            targets=ref_now[None],
            trajectories=path[None],
            arm=float(np.max(np.abs(np.asarray(params.quad.motor_xy)))) * math.sqrt(2.0),
        )
