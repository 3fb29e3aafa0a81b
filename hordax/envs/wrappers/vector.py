"""``VecEnv``: the batch view of an environment (``vmap`` over a leading env axis), with
amortized fresh resets.

gymnax's ``step`` computes ``reset_env`` for every env on every step and selects it where
the episode ended; where ``reset_env`` costs more than ``step_env`` (grid layouts, aerial
spawns) that dominates a batch step. ``VecEnv`` instead steps every env without the reset
(:func:`hordax.envs.core.step_no_reset`) and computes only ``reset_pool`` fresh resets per
step, for the slots that finished (in slot order: the ``r``-th finished slot gets
pool entry ``r``); more finishers than that on one step take further rounds of
``reset_pool`` resets in a ``lax.while_loop``. Each finished slot is reset with exactly the
key (``split_step_key(slot_key)[1]``) and params gymnax's ``step`` would have used in that
slot, so every episode starts from its own fresh draw, and the random draws are the very ones
of in-step resets whatever the pool size: outputs equal ``vmap(env.step)``'s up to float
rounding (XLA may fuse the float arithmetic of the two programs differently), and bit for
bit with the pool off.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from hordax.envs.core import (
    has_critic_observation,
    is_multi_agent,
    reads_time,
    split_step_key,
    step_no_reset,
    supports_step_no_reset,
)
from hordax.envs.wrappers.base import Wrapper, map_env_state

#: ``reset_pool=AUTO_POOL`` picks :func:`default_reset_pool`; ``0`` turns pools off.
AUTO_POOL = -1
#: The default pool is ``ceil(num_envs / POOL_DIVISOR)`` (see :func:`default_reset_pool`).
POOL_DIVISOR = 64


def default_reset_pool(num_envs: int) -> int:
    """``max(1, ceil(num_envs / 64))``: fresh resets computed per step by default.

    Each step pays ``k`` resets, so against in-step resets (``num_envs`` of them) the reset
    work drops 64-fold: for an env whose reset costs ``R - 1`` steps (``R`` = in-step cost
    over ``step_env``'s; Grid-FourRooms ~7-32, XLand ~4-5 on a CPU) a step costs about
    ``1 + (R - 1) / 64``. A step that ends ``m > k`` episodes (about ``num_envs / L`` with mean
    episode length ``L``: one round covers ``L >= 64``; synchronized truncations end all at
    once) takes ``ceil(m / k)`` rounds, about ``m`` resets in all. Measured on a 2-core CPU
    (benchmarks/RESULTS.md, "Amortized resets"), smaller pools were no slower through such
    bursts and ``num_envs / 16`` left FourRooms and XLand at 1.4-1.5x ``step_env``; on a GPU,
    where every round is a few kernel launches, a larger pool may pay off: set it.
    """
    return max(1, math.ceil(int(num_envs) / POOL_DIVISOR))


def resolve_reset_pool(reset_pool: int, num_envs: int) -> int:
    """The pool size ``VecEnv`` uses: ``-1`` auto, ``0`` off, ``k >= 1`` capped at
    ``num_envs`` (``num_envs`` means in-step resets). Raises ``ValueError`` naming the value."""
    reset_pool = int(reset_pool)
    if reset_pool < AUTO_POOL:
        raise ValueError(
            f"reset_pool={reset_pool}: must be -1 (auto), 0 (off: in-step reset of every env) "
            "or an integer >= 1"
        )
    if reset_pool == AUTO_POOL:
        return min(default_reset_pool(num_envs), num_envs)
    return num_envs if reset_pool == 0 else min(reset_pool, num_envs)


class VecEnv(Wrapper):
    """Run ``num_envs`` copies of ``env`` with one call.

    ``reset(key, params) -> (obs [B, ...], state [B])``;
    ``step(key, state [B], action [B, ...], params) -> (obs, state, reward [B], terminated [B],
    truncated [B], info [B, ...])``. One key is split into ``num_envs`` keys inside. Outputs
    are those of ``jax.vmap(env.step)`` over those keys (gymnax's in-step auto-reset, the same
    random draws, ``info["final_observation"]`` the true last observation, terminated and
    truncated apart), however the resets are computed (see the module docstring).

    Args:
        env: a (possibly wrapped) single environment.
        num_envs: batch size ``B``.
        params_batched: False when one params instance serves every env (default); True
            when params carry a leading ``[B]`` axis (domain randomization: ``vmap`` over
            params). A finished slot is reset with its own params (gathered with its key).
        critic_obs: observations as ``{"actor", "critic"}`` pairs (see above).
        reset_pool: fresh resets computed per step (``k``): ``-1`` (default) picks
            :func:`default_reset_pool`, ``0`` turns the pool off (``reset_env`` for every env
            every step, gymnax's path), ``k >= num_envs`` is the same as ``0``. Per step the
            pool costs ``k`` resets plus a gather and scatter of ``k`` rows; a step where
            ``m > k`` episodes end costs ``ceil(m / k)`` rounds. Used only where
            :func:`~hordax.envs.core.supports_step_no_reset` holds for ``env`` (a wrapper
            that overrides ``step`` without ``step_no_reset`` gets in-step resets).
        stagger: ``reset`` starts each slot's first episode at a random step counter
            ``time ~ U{0, ..., max_steps_in_episode - 1}`` (the innermost env state's
            ``time``), so that slot's first episode truncates early and the slots' episodes
            end at different steps from then on (Isaac Gym legged_gym's
            ``init_at_random_ep_len``). Without it every slot of a fixed-length task
            truncates on the same step, forever, and each rollout of ``T << max_steps``
            steps holds one phase of the episode only. The env's state is otherwise the
            fresh reset's; only for envs whose dynamics do not read ``time`` (it counts
            towards truncation only) is that a state of the task: an env that reads it
            (:func:`~hordax.envs.core.reads_time`) is refused with a ``ValueError``. The
            first, shortened episodes are logged as such (``LogEpisode`` counts from 0).

    Multi-agent envs: ``info["next_agent_mask"]`` (``bool[B, n_agents]``) is
    ``env.agent_mask`` of the state each slot returns (after an auto-reset, the new
    episode's first state), i.e. which agents act on the returned observation.

    Critic observations (``critic_obs=True``, for an env with ``critic_observation``, see
    ``docs/env_protocol.md``): every observation becomes ``{"actor": obs, "critic": c}``
    with ``c = env.critic_observation(state, params)`` of the state that observation comes
    from (``f32[B, C]``, ``f32[B, n, C]`` multi-agent): ``reset``'s and ``step``'s
    observations, and ``info["final_observation"]``, whose critic part is computed from the
    *terminal* state before the slot's reset (a truncated episode's bootstrap value needs
    it). The step then always takes the no-reset path (``reset_pool=0`` means a pool of
    ``num_envs``: every slot reset, the same draws), so the env stack must support
    :func:`~hordax.envs.core.step_no_reset`.

    Under an outer ``jax.vmap`` (a population of trainers) the rounds' loop condition is
    batched, and ``vmap`` turns the loop into one that runs as many rounds as the member that
    needs most, each round followed by a select over every member's batch state. The usual
    step (no member overflows) then costs one round plus that select, still ``k`` resets
    rather than ``num_envs``; a burst in one member costs every member its rounds.
    """

    def __init__(
        self,
        env: Any,
        num_envs: int,
        params_batched: bool = False,
        reset_pool: int = AUTO_POOL,
        critic_obs: bool = False,
        stagger: bool = False,
    ):
        super().__init__(env)
        self.stagger = bool(stagger)
        if self.stagger and reads_time(env):
            raise ValueError(
                f"stagger=True (trainer.stagger_starts): {type(self.unwrapped).__name__} reads "
                "its step counter state.time beyond the time limit (reads_time), so a "
                "staggered counter would change its task; use stagger=False"
            )
        if int(num_envs) < 1:
            raise ValueError(f"num_envs={num_envs}: must be an integer >= 1")
        self.num_envs = int(num_envs)
        self._params_axis = 0 if params_batched else None
        self.reset_pool = resolve_reset_pool(reset_pool, self.num_envs)
        self.critic_obs = bool(critic_obs)
        if self.critic_obs and not has_critic_observation(env):
            raise ValueError(
                f"critic_obs=True: {type(self.unwrapped).__name__} has no critic_observation"
            )
        if self.critic_obs and not supports_step_no_reset(env):
            raise ValueError(
                f"critic_obs=True needs a stack that supports step_no_reset, got {env!r}"
            )
        self._multi_agent = is_multi_agent(env)
        self._eager_step = None  # jit(self._step), built on the first eager call

    @property
    def amortized(self) -> bool:
        """True when steps compute ``reset_pool < num_envs`` resets (the pool is in use)."""
        return self.reset_pool < self.num_envs and supports_step_no_reset(self._env)

    def _vmap_state_fn(self, fn: Any, state: Any, params: Any) -> Any:
        params = self._env.default_params if params is None else params
        return jax.vmap(fn, in_axes=(0, self._params_axis))(state, params)

    def critic_observation(self, state: Any, params: Any = None) -> jax.Array:
        """``f32[B, ...]``: every slot's critic observation."""
        return self._vmap_state_fn(self._env.critic_observation, state, params)

    def agent_mask(self, state: Any, params: Any = None) -> jax.Array:
        """``bool[B, n_agents]``: every slot's active agents (multi-agent envs)."""
        return self._vmap_state_fn(self._env.agent_mask, state, params)

    def _with_critic(self, obs: Any, state: Any, params: Any) -> Any:
        if not self.critic_obs:
            return obs
        return {"actor": obs, "critic": self.critic_observation(state, params)}

    def _check_batched(self, params: Any) -> None:
        """``params_batched=True``: every params leaf needs a leading axis of ``num_envs``
        (static shapes, checked at trace time); a ``ValueError`` naming the field, not
        ``jax.vmap``'s rank message."""
        if self._params_axis is None:
            return
        for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
            shape = jnp.shape(leaf)
            if not shape or shape[0] != self.num_envs:
                name = jax.tree_util.keystr(path, simple=True, separator=".")
                raise ValueError(
                    f"params.{name} has shape {shape}: params_batched=True needs one value per "
                    f"env, a leading axis of num_envs={self.num_envs} on every params field "
                    "(e.g. jax.vmap over a function that returns params)"
                )

    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, Any]:
        params = self._env.default_params if params is None else params
        self._check_batched(params)
        keys = jax.random.split(key, self.num_envs)
        obs, state = jax.vmap(self._env.reset, in_axes=(0, self._params_axis))(keys, params)
        if self.stagger:
            state = self._staggered(jax.random.fold_in(key, 1), state, params)
        return self._with_critic(obs, state, params), state

    def _staggered(self, key: jax.Array, state: Any, params: Any) -> Any:
        """``state [B]`` with each slot's env ``time`` drawn from ``U{0, ..., limit - 1}``
        (``limit`` its ``params.max_steps_in_episode``); keys apart from the resets'."""
        limit = jnp.broadcast_to(jnp.asarray(params.max_steps_in_episode), (self.num_envs,))
        u = jax.random.uniform(key, (self.num_envs,))
        times = jnp.minimum(jnp.floor(u * limit), limit - 1).astype(jnp.int32)

        def set_time(s: Any, t: jax.Array) -> Any:
            return map_env_state(self._env, s, lambda e: e.replace(time=t.astype(e.time.dtype)))

        return jax.vmap(set_time)(state, times)

    def step(
        self, key: jax.Array, state: Any, action: Any, params: Any = None
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict]:
        if jax.core.trace_ctx.is_top_level():
            # Called eagerly (outside any jit/vmap): run the step as one compiled program,
            # built once per VecEnv. Op by op, the reset rounds' while_loop closes over new
            # functions on every call, so it recompiled on every step (~0.4 s per CartPole step).
            if self._eager_step is None:
                self._eager_step = jax.jit(self._step)
            return self._eager_step(key, state, action, params)
        return self._step(key, state, action, params)

    def _step(
        self, key: jax.Array, state: Any, action: Any, params: Any = None
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict]:
        params = self._env.default_params if params is None else params
        self._check_batched(params)
        keys = jax.random.split(key, self.num_envs)
        axes = (0, 0, 0, self._params_axis)
        if not (self.amortized or self.critic_obs):
            out = jax.vmap(self._env.step, in_axes=axes)(keys, state, action, params)
            return self._agent_mask_info(out, params)
        step = lambda k, s, a, p: step_no_reset(self._env, k, s, a, p)  # noqa: E731
        obs, state, reward, terminated, truncated, info = jax.vmap(step, in_axes=axes)(
            keys, state, action, params
        )
        if self.critic_obs:  # the terminal state's critic observation, before the reset
            final = self._with_critic(info["final_observation"], state, params)
            info = {**info, "final_observation": final}
        obs, state = self._reset_finished(
            keys, jnp.logical_or(terminated, truncated), (obs, state), params
        )
        out = (self._with_critic(obs, state, params), state, reward, terminated, truncated, info)
        return self._agent_mask_info(out, params)

    def _agent_mask_info(self, out: tuple, params: Any) -> tuple:
        if not self._multi_agent:
            return out
        obs, state, reward, terminated, truncated, info = out
        info = {**info, "next_agent_mask": self.agent_mask(state, params)}
        return obs, state, reward, terminated, truncated, info

    def _reset_keys(self, slot_keys: jax.Array) -> jax.Array:
        """The reset keys of slots with step keys ``slot_keys [k]``: the very keys gymnax's
        ``step`` would give ``reset_env`` in those slots (distinct per slot and per step)."""
        return jax.vmap(lambda key: split_step_key(key)[1])(slot_keys)

    def _reset_finished(
        self, keys: jax.Array, done: jax.Array, obs_state: tuple, params: Any
    ) -> tuple[Any, Any]:
        """Write a fresh reset into every slot where ``done``, ``reset_pool`` slots a round.

        ``keys [B]``: the slots' step keys; ``done bool[B]``; ``obs_state``: the batch
        ``(obs, state)`` after ``step_no_reset``.
        """
        n, k = self.num_envs, self.reset_pool
        size = math.ceil(n / k) * k  # whole rounds
        # order[r]: the slot of the r-th finished env (ascending); n (dropped) past the last.
        order = jnp.nonzero(done, size=size, fill_value=n)[0].astype(jnp.int32)
        num_done = jnp.sum(done, dtype=jnp.int32)

        def fill(r: jax.Array, obs_state: tuple) -> tuple:
            slots = jax.lax.dynamic_slice_in_dim(order, r * k, k)  # i32[k], ascending
            src = jnp.minimum(slots, n - 1)  # unused entries: a reset that is dropped below
            reset_keys = self._reset_keys(keys[src])
            params_src = params
            if self._params_axis is not None:
                params_src = jax.tree.map(lambda p: p[src], params)
            fresh = jax.vmap(self._env.reset, in_axes=(0, self._params_axis))(
                reset_keys, params_src
            )
            return jax.tree.map(
                lambda x, y: x.at[slots].set(y, mode="drop", indices_are_sorted=True),
                obs_state,
                fresh,
            )

        # Round 0 always runs; more than k finishers take further rounds. One copy of the
        # reset program (compile time), in a real loop: not a select over both branches.
        _, obs_state = jax.lax.while_loop(
            lambda c: (c[0] == 0) | (c[0] * k < num_done),
            lambda c: (c[0] + 1, fill(c[0], c[1])),
            (jnp.int32(0), obs_state),
        )
        return obs_state
