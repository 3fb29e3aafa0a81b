"""Particle-world physics and the observation/reward pieces the MPE scenarios share.

The rules are PettingZoo MPE's (``mpe2`` 1.1, ``_mpe_utils/core.py`` and ``simple_env.py``),
written as array functions over the agent axis instead of Python loops over entities:

- **actions**: a discrete action of an agent that moves *and* talks is one integer
  ``move + 5 * word`` (PettingZoo's layout: ``Discrete(5 * dim_c)``); one that only moves picks
  ``move`` in ``[0, 5)`` (no-op, -x, +x, -y, +y); one that only talks picks ``word`` in
  ``[0, dim_c)``. Continuous actions are PettingZoo's ``continuous_actions=True`` layout in
  ``[0, 1]``: ``[no-op, -x, +x, -y, +y]`` for a mover (force ``(a2 - a1, a4 - a3)``), then
  ``dim_c`` raw utterance values for a talker.
- **forces**: the move, times the agent's ``accel`` (PettingZoo's "sensitivity", 5 by default),
  plus contact forces from every other colliding entity: ``contact_force * d / |d| * k *
  log(1 + exp(-(|d| - r_a - r_b) / k))`` with ``k = contact_margin`` (a softplus of the
  penetration).
- **integration** (per movable agent, PettingZoo's order): ``pos += vel * dt``, then
  ``vel = vel * (1 - damping) + force / mass * dt``, then the speed is capped at ``max_speed``.
- **communication**: the state's utterance is the action's (one-hot for discrete actions);
  silent agents say zeros.

Landmarks never move in the nine scenarios, so the state keeps agents and landmarks apart and
landmarks have no velocity.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hordax.envs.core import EnvState

#: Discrete move -> unit direction: no-op, -x, +x, -y, +y (PettingZoo's order).
MOVE_DIRECTIONS = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]], np.float32)
NUM_MOVES = 5
#: PettingZoo's default "sensitivity" (accel) of an agent that sets none.
DEFAULT_ACCEL = 5.0


@struct.dataclass
class MPEState(EnvState):
    """The state of a particle world (``n`` agents, ``L`` landmarks).

    Attributes:
        pos: f32[n, 2] agent positions.
        vel: f32[n, 2] agent velocities.
        landmarks: f32[L, 2] landmark positions (landmarks never move).
        comm: f32[n, dim_c] each agent's current utterance (zeros for silent agents).
        goal: i32[G] the scenario's random choices at reset (goal landmarks, keys); ``G`` may
            be 0.
        time: i32[] steps taken in this episode.
    """

    pos: jax.Array
    vel: jax.Array
    landmarks: jax.Array
    comm: jax.Array
    goal: jax.Array


@struct.dataclass
class MPEParams:
    """Physics of a particle world: every value a user may randomize (``vmap`` over params).

    Attributes:
        agent_size: f32[n] agent radii (contacts and the scenarios' "touching" tests).
        landmark_size: f32[L] landmark radii.
        mass: f32[n] agent masses.
        accel: f32[n] force per unit of move action (PettingZoo's sensitivity).
        max_speed: f32[n] speed caps (``inf``: none).
        max_steps_in_episode: episode length (PettingZoo's ``max_cycles``); episodes always
            truncate, never terminate.
        dt: integration step (s).
        damping: fraction of velocity lost per step, in ``[0, 1]``.
        contact_force: stiffness of the contact force.
        contact_margin: softness ``k`` of the contact's softplus penetration (> 0).
    """

    agent_size: jax.Array
    landmark_size: jax.Array
    mass: jax.Array
    accel: jax.Array
    max_speed: jax.Array = struct.field(metadata={"allow_inf": True})
    max_steps_in_episode: int = 25
    dt: float = 0.1
    damping: float = 0.25
    contact_force: float = 100.0
    contact_margin: float = 1e-3


@struct.dataclass
class TalkParams:
    """Params of a world where no agent moves (simple_crypto): only the episode length;
    physics would have nothing to act on."""

    max_steps_in_episode: int = 25


@struct.dataclass
class SharedRewardParams(MPEParams):
    """:class:`~hordax.envs.mpe.world.MPEParams` plus PettingZoo's ``local_ratio``: each
    agent's reward is ``(1 - local_ratio) * global + local_ratio * own`` (in ``[0, 1]``)."""

    local_ratio: float = 0.5

    @classmethod
    def extend(cls, params: MPEParams, **extra: float) -> SharedRewardParams:
        """``params`` with ``local_ratio`` (and any ``extra`` field) added."""
        fields = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
        return cls(**fields, **extra)


def mix_rewards(own: jax.Array, global_: jax.Array, local_ratio: jax.Array) -> jax.Array:
    """``f32[n]`` PettingZoo's blend ``global * (1 - local_ratio) + own * local_ratio``."""
    return global_ * (1 - local_ratio) + own * local_ratio


@dataclasses.dataclass(frozen=True)
class Layout:
    """Static (numpy) description of who moves, talks and collides; sets shapes and masks.

    Attributes:
        movable: bool[n] the agent moves (its action has the 5 move entries).
        silent: bool[n] the agent never talks.
        agent_collide: bool[n] the agent takes part in contacts.
        landmark_collide: bool[L] the landmark takes part in contacts.
        dim_c: size of the communication channel.
    """

    movable: np.ndarray
    silent: np.ndarray
    agent_collide: np.ndarray
    landmark_collide: np.ndarray
    dim_c: int

    @property
    def num_agents(self) -> int:
        return len(self.movable)

    def discrete_actions(self) -> tuple[int, ...]:
        """Number of discrete actions of each agent: ``5`` to move, ``dim_c`` to talk, their
        product to do both (PettingZoo's ``Discrete`` sizes)."""
        return tuple(
            (NUM_MOVES if m else 1) * (self.dim_c if not s else 1)
            for m, s in zip(self.movable, self.silent, strict=True)
        )

    def continuous_actions(self) -> tuple[int, ...]:
        """Width of each agent's continuous action: ``5`` to move plus ``dim_c`` to talk."""
        return tuple(
            (NUM_MOVES if m else 0) + (self.dim_c if not s else 0)
            for m, s in zip(self.movable, self.silent, strict=True)
        )


# --------------------------------------------------------------------------------------------
# actions


def decode_discrete(action: jax.Array, layout: Layout) -> tuple[jax.Array, jax.Array]:
    """``i32[n]`` discrete actions -> ``(move f32[n, 2], utterance f32[n, dim_c])``.

    The move is a unit direction (before ``accel``); the utterance a one-hot word (zeros for
    silent agents). Movers that talk split their action as ``move + 5 * word``.
    """
    movable = jnp.asarray(layout.movable)
    move = jnp.where(movable, action % NUM_MOVES, 0)
    word = jnp.where(movable, action // NUM_MOVES, action)
    direction = jnp.asarray(MOVE_DIRECTIONS)[move]
    utterance = jax.nn.one_hot(word, layout.dim_c, dtype=jnp.float32)
    utterance = jnp.where(jnp.asarray(layout.silent)[:, None], 0.0, utterance)
    return direction, utterance


def decode_continuous(action: jax.Array, layout: Layout) -> tuple[jax.Array, jax.Array]:
    """``f32[n, A]`` continuous actions in ``[0, 1]`` -> ``(move f32[n, 2], utterance)``.

    A mover's move is ``(a2 - a1, a4 - a3)`` and its utterance ``a[5 : 5 + dim_c]``; an agent
    that cannot move talks with ``a[0 : dim_c]``. Entries past an agent's own width are ignored.
    """
    n, width = action.shape
    movable = np.asarray(layout.movable)
    if movable.any():
        direction = jnp.stack([action[:, 2] - action[:, 1], action[:, 4] - action[:, 3]], -1)
        direction = jnp.where(jnp.asarray(movable)[:, None], direction, 0.0)
    else:
        direction = jnp.zeros((n, 2), jnp.float32)
    if layout.dim_c == 0:
        return direction, jnp.zeros((n, 0), jnp.float32)
    # static column of each agent's utterance entries (clipped for agents that do not talk)
    start = np.where(movable, NUM_MOVES, 0)
    cols = np.minimum(start[:, None] + np.arange(layout.dim_c)[None, :], width - 1)
    utterance = jnp.take_along_axis(action, jnp.asarray(cols), axis=1)
    utterance = jnp.where(jnp.asarray(layout.silent)[:, None], 0.0, utterance)
    return direction, utterance


# --------------------------------------------------------------------------------------------
# physics


def contact_forces(
    pos: jax.Array, landmarks: jax.Array, params: MPEParams, layout: Layout
) -> jax.Array:
    """``f32[n, 2]`` total contact force on each movable, colliding agent (0 on the others).

    One ``[r, k]`` computation for the ``r`` movable colliding agents against the ``k``
    colliding entities (agents, then landmarks); the pair of an agent with itself is masked,
    and so is a pair at distance 0 (PettingZoo divides by it and gives NaN).
    """
    n = layout.num_agents
    rows = np.flatnonzero(layout.movable & layout.agent_collide)
    col_agents = np.flatnonzero(layout.agent_collide)
    col_landmarks = np.flatnonzero(layout.landmark_collide)
    if rows.size == 0 or col_agents.size + col_landmarks.size < 2:
        return jnp.zeros((n, 2), jnp.float32)
    col_pos = jnp.concatenate([pos[col_agents], landmarks[col_landmarks]])
    col_size = jnp.concatenate([params.agent_size[col_agents], params.landmark_size[col_landmarks]])
    delta = pos[rows][:, None, :] - col_pos[None, :, :]  # [r, k, 2], from the other to me
    dist = jnp.sqrt(jnp.sum(jnp.square(delta), -1))
    dist_min = params.agent_size[rows][:, None] + col_size[None, :]
    k = params.contact_margin
    penetration = jnp.logaddexp(0.0, -(dist - dist_min) / k) * k
    other = np.concatenate([col_agents, np.full(col_landmarks.size, -1)])
    pair = (rows[:, None] != other[None, :]) & (dist > 0)
    safe_dist = jnp.where(pair, dist, 1.0)
    force = params.contact_force * delta / safe_dist[..., None] * penetration[..., None]
    force = jnp.where(pair[..., None], force, 0.0).sum(1)
    if rows.size == n:
        return force
    return jnp.zeros((n, 2), jnp.float32).at[rows].set(force)


def integrate(
    pos: jax.Array, vel: jax.Array, force: jax.Array, params: MPEParams, layout: Layout
) -> tuple[jax.Array, jax.Array]:
    """One step of PettingZoo's integrator for movable agents: ``(pos, vel)`` ``f32[n, 2]``.

    ``pos += vel * dt`` (the old velocity), ``vel = vel * (1 - damping) + force / mass * dt``,
    then a speed above ``max_speed`` is scaled down to it. Agents that cannot move keep both.
    """
    new_pos = pos + vel * params.dt
    new_vel = vel * (1 - params.damping)
    new_vel = new_vel + (force / params.mass[:, None]) * params.dt
    speed = jnp.sqrt(jnp.square(new_vel[:, 0]) + jnp.square(new_vel[:, 1]))
    max_speed = params.max_speed
    too_fast = speed > max_speed
    capped = new_vel / jnp.where(too_fast, speed, 1.0)[:, None] * max_speed[:, None]
    new_vel = jnp.where(too_fast[:, None], capped, new_vel)
    movable = jnp.asarray(layout.movable)[:, None]
    return jnp.where(movable, new_pos, pos), jnp.where(movable, new_vel, vel)


def step_world(
    state: MPEState, action: jax.Array, params: MPEParams, layout: Layout, continuous: bool
) -> MPEState:
    """Apply one (already clipped) stacked action: forces, integration, utterances, time.

    A world where no agent moves (``params`` may then be :class:`TalkParams`) only talks."""
    decode = decode_continuous if continuous else decode_discrete
    direction, utterance = decode(action, layout)
    if not layout.movable.any():
        return state.replace(comm=utterance, time=state.time + 1)
    force = direction * params.accel[:, None]
    force = force + contact_forces(state.pos, state.landmarks, params, layout)
    pos, vel = integrate(state.pos, state.vel, force, params, layout)
    return state.replace(pos=pos, vel=vel, comm=utterance, time=state.time + 1)


# --------------------------------------------------------------------------------------------
# observation and reward pieces


def relative(points: jax.Array, origins: jax.Array) -> jax.Array:
    """``points f32[k, 2]`` relative to each of ``origins f32[r, 2]``, flattened: ``f32[r, 2k]``
    (point-major: ``[p0x - ox, p0y - oy, p1x - ox, ...]``, PettingZoo's concatenation)."""
    return (points[None, :, :] - origins[:, None, :]).reshape(origins.shape[0], -1)


def others(num: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Static ``int[r, num - 1]``: for each row agent, the other agents of ``range(num)`` in
    index order (``rows`` defaults to every agent)."""
    rows = np.arange(num) if rows is None else np.asarray(rows)
    return np.array([[j for j in range(num) if j != i] for i in rows], np.int32).reshape(
        len(rows), num - 1
    )


def relative_others(pos: jax.Array, rows: np.ndarray, cols: np.ndarray) -> jax.Array:
    """``pos[cols[i]] - pos[rows[i]]`` for each row agent, flattened: ``f32[r, 2 k]`` with
    ``cols`` a static ``int[r, k]`` (e.g. :func:`others`)."""
    return (pos[cols] - pos[rows][:, None, :]).reshape(len(rows), -1)


def distances(a: jax.Array, b: jax.Array) -> jax.Array:
    """``f32[r, k]`` Euclidean distances between ``a f32[r, 2]`` and ``b f32[k, 2]``."""
    return jnp.sqrt(jnp.sum(jnp.square(a[:, None, :] - b[None, :, :]), -1))


def touching(a: jax.Array, b: jax.Array, size_a: jax.Array, size_b: jax.Array) -> jax.Array:
    """``bool[r, k]``: PettingZoo's ``is_collision``, distance below the sum of the radii."""
    return distances(a, b) < size_a[:, None] + size_b[None, :]


def boundary_penalty(pos: jax.Array) -> jax.Array:
    """``f32[r]`` PettingZoo's out-of-arena penalty (simple_tag, simple_world_comm), summed
    over both coordinates: 0 below ``|x| = 0.9``, ``10 (|x| - 0.9)`` up to 1, then
    ``min(exp(2 |x| - 2), 10)``."""
    x = jnp.abs(pos)
    ramp = (x - 0.9) * 10
    steep = jnp.minimum(jnp.exp(2 * x - 2), 10.0)
    return jnp.sum(jnp.where(x < 0.9, 0.0, jnp.where(x < 1.0, ramp, steep)), -1)
