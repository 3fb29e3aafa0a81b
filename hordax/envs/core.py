"""The hordax environment protocol: thin subclasses of gymnax's ``Environment``.

Single-agent envs implement, as in gymnax 1.0::

    reset_env(key, params) -> (obs, state)
    step_env(key, state, action, params) -> (obs, state, reward, terminated, info)
    observation_space(params), action_space(params), default_params

and callers use the inherited, jitted ``reset`` and ``step``; ``step`` returns
``(obs, state, reward, terminated, truncated, info)``, computes ``truncated`` from
``state.time >= params.max_steps_in_episode``, auto-resets with a *fresh* ``reset_env``
and puts the pre-reset observation in ``info["final_observation"]``.

hordax tightens the contract (see ``docs/env_protocol.md``):

- ``reward`` float32 ``[]``, ``terminated``/``truncated`` bool ``[]``; ``step_env`` never
  folds the time limit into ``terminated``.
- ``info`` has the same pytree structure every step and holds two dicts,
  ``info["metrics"]`` (task metrics, e.g. success) and ``info["reward_terms"]``
  (named, unscaled reward terms); both may be empty.

Multi-agent envs (:class:`MultiAgentEnvironment`) keep the same call shapes with a
leading agent axis: obs ``[n_agents, ...]``, action ``[n_agents, ...]``, reward
``f32[n_agents]``; ``terminated`` stays a scalar ``bool[]`` (the episode ends: gymnax's
auto-reset selects on a scalar) and per-agent status lives in
``info["agent_terminated"]`` and ``info["agent_mask"]``, both ``bool[n_agents]``.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment as gx_env
from gymnax.environments import spaces as gx_spaces

from hordax.envs.spaces import MultiDiscrete

TEnvState = TypeVar("TEnvState")
#: gymnax's un-jitted ``step`` body (hordax's jitted ``step`` adds the action-shape check).
_GYMNAX_STEP = gx_env.Environment.step.__wrapped__
TEnvParams = TypeVar("TEnvParams")


@struct.dataclass
class EnvState:
    """Base state: every hordax state carries the step counter ``time`` (int32 ``[]``)."""

    time: jax.Array


@struct.dataclass
class EnvParams:
    """Base params: the time limit that makes an episode *truncate* (int ``[]``)."""

    max_steps_in_episode: int = 500


def check_time_limit(params: Any) -> None:
    """``params.max_steps_in_episode >= 1`` (every entry, if batched) where the field exists:
    the check every env needs, gymnax's built-ins included; ``ValueError`` naming it."""
    steps = getattr(params, "max_steps_in_episode", None)
    if steps is not None and np.min(np.asarray(steps)) < 1:
        shown = np.asarray(steps).tolist()
        raise ValueError(f"params.max_steps_in_episode={shown}: must be an integer >= 1")


def check_action_shape(action: Any, space: Any, where: str = "env.step") -> None:
    """Raise ``ValueError`` unless ``action`` has ``space.shape`` (``()`` for ``Discrete``).

    Shapes are static, so this runs once when a step is traced (zero cost in the compiled
    program) and catches what broadcasting would hide, e.g. a ``(2,)`` or ``(1,)`` action
    for a ``(4,)`` Box. Under ``vmap`` the per-env shape is checked. Spaces without a
    ``shape`` (Tuple/Dict) are not checked.
    """
    want = getattr(space, "shape", None)
    if want is None:
        return
    want = (want,) if isinstance(want, int) else tuple(want)
    got = tuple(jnp.shape(action))
    if got != want:
        raise ValueError(
            f"{where}: action has shape {got}, expected {want} (the shape of the env's "
            f"{type(space).__name__} action space)"
        )


def empty_info() -> dict[str, dict[str, jax.Array]]:
    """The minimal hordax ``info`` returned by ``step_env``: no metrics, no reward terms."""
    return {"metrics": {}, "reward_terms": {}}


class Environment(gx_env.Environment, Generic[TEnvState, TEnvParams]):
    """A single-agent hordax environment (a gymnax 1.0 ``Environment``).

    Subclasses implement ``reset_env``, ``step_env``, ``observation_space``,
    ``action_space`` and ``default_params``; optionally ``render(state, params)``
    returning ``uint8[H, W, 3]`` and ``validate_params(params)`` (host-side checks that
    raise ``ValueError`` naming the field, the value and the allowed range).
    """

    #: Whether ``reset_env`` draws a random initial state (the contract suite then checks
    #: that consecutive episodes in one slot start differently).
    random_reset: bool = True
    #: Whether the dynamics, reward or observation read ``state.time`` beyond the time
    #: limit (a reference trajectory, a replayed log, a time-discounted reward): then a
    #: state with another ``time`` is another task, and ``VecEnv(stagger=True)`` refuses it.
    reads_time: bool = False

    def validate_params(self, params: Any) -> None:
        """Check user-supplied params on the host; raise ``ValueError`` naming the field."""
        check_time_limit(params)

    @partial(jax.jit, static_argnames=("self",))
    def step(
        self, key: jax.Array, state: Any, action: Any, params: Any = None
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict]:
        """gymnax's ``step`` (jitted, auto-reset) after checking the action's static shape
        against ``action_space(params)`` (:func:`check_action_shape`, at trace time)."""
        params = self.default_params if params is None else params
        check_action_shape(action, self.action_space(params), f"{type(self).__name__}.step")
        return _GYMNAX_STEP(self, key, state, action, params)


class MultiAgentEnvironment(Environment[TEnvState, TEnvParams]):
    """A multi-agent hordax environment: arrays with a leading agent axis.

    ``step_env`` returns ``(obs [n, ...], state, reward f32[n], terminated bool[], info)``
    with ``info["agent_terminated"]`` and ``info["agent_mask"]`` of shape ``bool[n]``
    (``agent_mask`` is False for padding, not-yet-spawned or finished agents).
    ``action_space``/``observation_space`` describe the *stacked* arrays. A trainer that
    shares parameters folds ``[num_envs, n_agents]`` into its batch with one reshape.
    """

    @property
    def num_agents(self) -> int:
        """Number of agent slots (the static size of the agent axis)."""
        raise NotImplementedError

    @property
    def agents(self) -> list[str]:
        """Agent names for dict-per-agent adapters (PettingZoo/JaxMARL view)."""
        return [f"agent_{i}" for i in range(self.num_agents)]

    # -- heterogeneous agents: teams and per-agent spaces ------------------------------------

    @property
    def team_names(self) -> tuple[str, ...]:
        """Names of the agent types (teams); a trainer may give each its own parameters."""
        return ("agent",)

    @property
    def team_index(self) -> tuple[int, ...]:
        """Static team of each agent slot (``len == num_agents``, entries index
        :attr:`team_names`). Agents of one team share observation size and action space."""
        return (0,) * self.num_agents

    def agent_observation_space(self, i: int, params: Any) -> Any:
        """Agent ``i``'s own, *unpadded* observation space (a gymnax ``Box``).

        The stacked observation ``[n, D]`` holds agent ``i``'s observation in its first
        ``d_i`` entries and zeros after (``D`` the largest ``d_i``). Default: row ``i`` of the
        stacked space (every agent the same size).
        """
        return row_space(self.observation_space(params), i)

    def agent_action_space(self, i: int, params: Any) -> Any:
        """Agent ``i``'s own action space: ``Discrete(nvec[i])`` for a stacked
        :class:`~hordax.envs.spaces.MultiDiscrete`, ``Box(a_i,)`` for a stacked ``Box[n, A]``
        (an agent ignores entries past its own ``a_i``). Default: row ``i`` of the stacked
        space."""
        return row_space(self.action_space(params), i)

    def agent_mask(self, state: Any, params: Any) -> jax.Array:
        """``bool[n]``: the agents active in ``state`` (False for padding, not-yet-spawned or
        finished agents). On a step it equals ``info["agent_mask"]`` of the step that returned
        ``state``; trainers read it for the state an observation comes from (a new episode's
        first state included), so an agent's transition counts iff it was active when it
        acted. Default: every slot active."""
        return jnp.ones((self.num_agents,), bool)


def row_space(space: Any, i: int) -> Any:
    """Row ``i`` of a stacked space: a ``Box[n, ...]`` -> ``Box[...]`` (its bounds' row),
    a ``MultiDiscrete(nvec)`` -> ``Discrete(nvec[i])``."""
    if isinstance(space, MultiDiscrete):
        return gx_spaces.Discrete(space.nvec[i])
    if not isinstance(space, gx_spaces.Box) or len(space.shape) < 1:
        raise TypeError(f"stacked spaces are Box[n, ...] or MultiDiscrete, got {space!r}")
    low = np.broadcast_to(np.asarray(space.low, space.dtype), space.shape)[i]
    high = np.broadcast_to(np.asarray(space.high, space.dtype), space.shape)[i]
    return gx_spaces.Box(low, high, tuple(space.shape[1:]), space.dtype)


def innermost(env: Any) -> Any:
    """The env at the bottom of a stack of wrappers (the ``_env`` chain); ``env`` itself
    when it wraps nothing."""
    while hasattr(env, "_env"):
        env = env._env
    return env


def env_name(env: Any) -> str:
    """The class name of the env at the bottom of ``env``'s wrappers, for error messages."""
    return type(innermost(env)).__name__


def has_critic_observation(env: Any) -> bool:
    """True when ``env`` (or the env a wrapper stack ends in) offers a critic observation.

    An env may provide ``critic_observation(state, params)`` (a pure function of its own
    state: ``f32[C]`` for a single agent, e.g. manipulation's privileged object state;
    ``f32[n_agents, C]`` for a multi-agent env, e.g. the global state MAPPO's centralized
    critic reads) and ``critic_observation_space(params)`` describing it. Actors never see it.
    """
    inner = innermost(env)
    return callable(getattr(inner, "critic_observation", None)) and callable(
        getattr(inner, "critic_observation_space", None)
    )


#: gymnax envs whose dynamics, reward or observation read ``state.time`` (the bandits'
#: and meta-envs' time feature, bsuite's chains).
_GYMNAX_READS_TIME = frozenset(
    {
        "BernoulliBandit",
        "GaussianBandit",
        "MetaMaze",
        "PointRobot",
        "DiscountingChain",
        "MemoryChain",
        "UmbrellaChain",
    }
)


def reads_time(env: Any) -> bool:
    """True when ``env`` (or the env a wrapper stack ends in) reads its step counter
    ``state.time`` for more than the time limit (:attr:`Environment.reads_time`, or one of
    gymnax's such envs)."""
    inner = innermost(env)
    if isinstance(inner, Environment):
        return bool(inner.reads_time)
    return type(inner).__name__ in _GYMNAX_READS_TIME


def is_multi_agent(env: Any) -> bool:
    """True when ``env`` (possibly wrapped) is a :class:`MultiAgentEnvironment`."""
    return isinstance(innermost(env), MultiAgentEnvironment)


# --------------------------------------------------------------------------------------------
# Stepping without the auto-reset (the batch layer's amortized fresh resets build on it)


def split_step_key(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(key_step, key_reset)`` exactly as gymnax's ``step`` splits its key."""
    key_step, key_reset = jax.random.split(key)
    return key_step, key_reset


def step_no_reset(
    env: Any, key: jax.Array, state: Any, action: Any, params: Any = None
) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict]:
    """gymnax's ``step`` minus the auto-reset and its select.

    Returns ``(obs, state, reward, terminated, truncated, info)`` where ``obs``/``state`` are
    ``step_env``'s even when the episode ended (the caller resets those slots), and ``info``
    holds gymnax's three keys with ``info["final_observation"] = obs``. ``step_env`` gets
    ``split_step_key(key)[0]``, as in gymnax's ``step``, so on a step that does not end the
    episode the result equals ``env.step(key, ...)`` exactly; where it ends, ``env.step``
    would return ``env.reset(split_step_key(key)[1], params)`` instead.

    Works for hordax envs and raw gymnax envs alike (it calls ``env.step_env`` and
    ``env.is_truncated``, after the same trace-time action-shape check as hordax's ``step``);
    on a wrapper (anything with ``_env``) it calls the wrapper's own
    ``step_no_reset``. Whether that is equivalent for a given stack:
    :func:`supports_step_no_reset`.
    """
    if hasattr(env, "_env"):
        return env.step_no_reset(key, state, action, params)
    params = env.default_params if params is None else params
    check_action_shape(action, env.action_space(params), f"{type(env).__name__}.step")
    key_step, _ = split_step_key(key)
    obs, state, reward, terminated, info = env.step_env(key_step, state, action, params)
    truncated = env.is_truncated(state, params)
    info = {**info, "terminated": terminated, "truncated": truncated, "final_observation": obs}
    return obs, state, reward, terminated, truncated, info


def _defining_class(cls: type, name: str) -> int | None:
    """Position in ``cls.__mro__`` of the class that defines ``name`` (None: nowhere)."""
    return next((i for i, c in enumerate(cls.__mro__) if name in vars(c)), None)


def supports_step_no_reset(env: Any) -> bool:
    """True when ``step_no_reset(env, ...)`` is ``env.step`` minus its reset, layer by layer.

    Every wrapper layer (anything with ``_env``) must define ``step_no_reset`` in the same
    class as ``step`` or below it (a wrapper that overrides ``step`` but inherits
    ``step_no_reset`` would skip its own step logic), and the innermost env must use gymnax's
    inherited ``step`` (an env that overrides ``step`` may do more than ``step_env``).
    """
    layer = env
    while hasattr(layer, "_env"):
        cls = type(layer)
        at_step, at_no_reset = _defining_class(cls, "step"), _defining_class(cls, "step_no_reset")
        if at_step is not None and (at_no_reset is None or at_no_reset > at_step):
            return False
        layer = layer._env
    # gymnax's inherited step, or hordax's (the same body after a trace-time shape check)
    return getattr(type(layer), "step", None) in (gx_env.Environment.step, Environment.step)
