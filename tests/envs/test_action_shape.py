"""An action of the wrong shape is refused when the step is traced (issue #18 item 7:
Aerial-Hover-v0 took a (2,) or (6,) action silently, ``[1, 0]`` acting as ``[1, 0, 0, 0]``).

Everything here goes through ``jax.eval_shape``: the check is a trace-time one, so no
program is compiled."""

import re

import jax
import jax.numpy as jnp
import pytest

import hordax
from hordax.envs.registry import entry_point
from hordax.envs.wrappers.clip import ClipAction

# one id per env class (sizes and layouts of one class share the check)
_IDS = list({entry_point(i): i for i in hordax.registered_envs()}.values())


def _wrong_shapes(shape: tuple) -> list[tuple]:
    """An extra axis, and (for arrays) one element fewer and one more in the last axis."""
    out = [(*shape, 1), (1,)] if shape == () else [(*shape, 1), (*shape[:-1], shape[-1] + 1)]
    if shape and shape[-1] > 1:
        out.append((*shape[:-1], shape[-1] - 1))
    return out


@pytest.mark.parametrize("env_id", _IDS)
@pytest.mark.slow
def test_step__refuses_actions_of_the_wrong_shape_at_trace_time(env_id):
    """`env.step` and `ClipAction.step` accept the action space's shape (multi-agent:
    `[n_agents, ...]`; Discrete: a scalar) and raise a ValueError naming the expected shape
    for any other, under `vmap` too."""
    env, params = hordax.make(env_id)
    space = env.action_space(params)
    key = jax.random.key(0)
    _, state = jax.eval_shape(env.reset, key, params)
    good = jax.ShapeDtypeStruct(tuple(space.shape), space.dtype)
    for step in (env.step, ClipAction(env).step):
        out = jax.eval_shape(step, key, state, good, params)
        assert out[2].shape == ((env.num_agents,) if hasattr(env, "num_agents") else ())
        for shape in _wrong_shapes(tuple(space.shape)):
            bad = jax.ShapeDtypeStruct(shape, space.dtype)
            with pytest.raises(ValueError, match=re.escape(f"action has shape {shape}, expected")):
                jax.eval_shape(step, key, state, bad, params)
    keys = jax.random.split(key, 2)
    states = jax.eval_shape(jax.vmap(env.reset, in_axes=(0, None)), keys, params)[1]
    bad = jax.ShapeDtypeStruct((2, *_wrong_shapes(tuple(space.shape))[0]), space.dtype)
    with pytest.raises(ValueError, match="action has shape"):
        jax.eval_shape(jax.vmap(env.step, in_axes=(0, 0, 0, None)), keys, states, bad, params)


def test_hover__two_element_action_is_refused_eagerly():
    """The probe from the issue, called eagerly as a user would."""
    env, params = hordax.make("Aerial-Hover-v0")
    _, state = env.reset(jax.random.key(0), params)
    with pytest.raises(ValueError, match=r"Hover.step: action has shape \(2,\), expected \(4,\)"):
        env.step(jax.random.key(1), state, jnp.array([1.0, 0.0]), params)


def test_clip_action__checks_gymnax_envs_too():
    """gymnax's own envs reach hordax's trainers through ClipAction, which checks them."""
    env, params = hordax.make("Pendulum-v1")
    _, state = jax.eval_shape(env.reset, jax.random.key(0), params)
    with pytest.raises(ValueError, match=r"ClipAction: action has shape \(\), expected \(1,\)"):
        jax.eval_shape(ClipAction(env).step, jax.random.key(0), state, jnp.float32(0), params)
