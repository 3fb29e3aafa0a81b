"""``env.render`` of the manipulation family: MuJoCo's offscreen renderer (EGL here, Mesa's
software driver on CPU) draws the arm at the state's joint angles and the task's markers."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

import hordax
from hordax.envs.manipulation import render as mrender
from hordax.training.evaluation.run import _renderer, write_video

ID = "Manip-Reach-v0"
# MJX compiles take 10-20 s each on 2 cores: the manipulation family is in the full tier
pytestmark = pytest.mark.slow


@functools.cache
def _reset_state():
    env, params = hordax.make(ID)
    _, state = jax.jit(env.reset)(jax.random.key(3), params)
    return env, params, jax.device_get(state)


def _red(img: np.ndarray) -> np.ndarray:
    """Pixels of the target marker's colour (0.9, 0.1, 0.1), lit or shaded."""
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return (r > 100) & (r > 3 * g) & (r > 3 * b)


@pytest.mark.timeout(120)
def test_render__frame_of_the_state_with_its_target():
    env, params, state = _reset_state()
    img = env.render(state, params)
    assert img.dtype == np.uint8 and img.shape == (240, 320, 3)
    assert np.array_equal(img, env.render(state, params))  # a pure function of the state
    # the arm is drawn where qpos puts it: another pose gives another frame
    moved = env.render(state.replace(qpos=state.qpos + 0.4), params)
    assert np.mean(np.any(moved != img, axis=-1)) > 0.01
    # the target is drawn as a red sphere, and nowhere else is red
    assert _red(img).sum() > 10
    bare = mrender.render_frame(
        env.model, state.qpos, (), mrender.default_camera(env.camera_lookat, env.camera_distance)
    )
    assert _red(bare).sum() == 0
    # a bigger sphere covers more pixels (the marker's radius is the success radius)
    big = env.render(state, params.replace(success_radius=0.06))
    assert _red(big).sum() > 4 * _red(img).sum()


@pytest.mark.timeout(120)
def test_render__wrong_qpos_is_refused_and_nan_is_drawn_finite():
    env, params, state = _reset_state()
    with pytest.raises(ValueError, match="qpos has shape"):
        mrender.render_frame(env.model, np.zeros(3))
    img = env.render(state.replace(qpos=state.qpos * np.nan), params)
    assert img.shape == (240, 320, 3)


@pytest.mark.timeout(120)
def test_render__hordax_eval_video_path_writes_a_gif(tmp_path):
    """`hordax eval ... video=` renders with the host fallback of ``_renderer`` (a host
    render cannot be traced) and writes the frames."""
    env, params, state = _reset_state()
    render = _renderer(env, state, params)
    states = [state, state.replace(qpos=state.qpos + 0.4)]  # GIF merges equal frames
    frames = [np.asarray(render(s, params)) for s in states]
    path = tmp_path / "reach.gif"
    write_video(str(path), frames, fps=20)
    from PIL import Image

    with Image.open(path) as gif:
        assert gif.n_frames == 2 and gif.size == (320, 240)
