"""Offscreen rendering of the manipulation family with MuJoCo's own renderer (host side).

``render_frame(model, qpos, markers)`` draws the task model at joint positions ``qpos`` (a
numpy/JAX array of one env, not a batch) through ``mujoco.Renderer`` and returns
``uint8[height, width, 3]``; task markers that are not bodies of the model (a reach target,
a goal) are added to the scene as spheres. It runs on the host, outside jit: an env's
``render(state, params)`` reads the state's arrays with ``np.asarray``.

OpenGL backend: MuJoCo picks it from ``MUJOCO_GL`` when ``mujoco`` is first imported. With no
display (``DISPLAY`` unset) and ``MUJOCO_GL`` unset, the family sets ``MUJOCO_GL=egl`` before
that import (in ``hordax/envs/manipulation/__init__.py``): EGL renders on an NVIDIA GPU, and on a
CPU through Mesa's software driver (Debian's ``libegl-mesa0``, present on the machines here).
``MUJOCO_GL=osmesa`` (Debian ``libosmesa6``) is the fallback on machines without EGL. A
backend that cannot start raises a ``RuntimeError`` that says which variable to set.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import mujoco
import numpy as np

#: ``(position f[3] m, radius m, rgba f[4])`` of one marker sphere
Marker = tuple[Sequence[float], float, Sequence[float]]

_RENDERERS: dict[tuple[int, int, int], tuple[mujoco.Renderer, mujoco.MjData]] = {}


def default_camera(lookat: Sequence[float], distance: float) -> mujoco.MjvCamera:
    """A free camera looking at ``lookat`` from ``distance`` m, 135 deg azimuth, 25 deg down."""
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = np.asarray(lookat, np.float64)
    cam.distance = float(distance)
    cam.azimuth = 135.0
    cam.elevation = -25.0
    return cam


def _renderer(model: mujoco.MjModel, height: int, width: int):
    """One ``(Renderer, MjData)`` per model and frame size per process (a GL context is
    costly to create: ~0.1-0.3 s, so frames of a video reuse it)."""
    key = (id(model), height, width)
    if key not in _RENDERERS:
        try:
            renderer = mujoco.Renderer(model, height, width)
        except Exception as err:  # the backend's own error types differ (GLFW, EGL, OSMesa)
            backend = os.environ.get("MUJOCO_GL", "") or "glfw (MUJOCO_GL unset)"
            raise RuntimeError(
                f"MuJoCo's offscreen renderer could not start with backend {backend}: {err!r}. "
                "Headless machines: set MUJOCO_GL=egl (Mesa's libegl-mesa0 or an NVIDIA "
                "driver) or MUJOCO_GL=osmesa (apt-get install libosmesa6) before the first "
                "import of mujoco."
            ) from err
        _RENDERERS[key] = (renderer, mujoco.MjData(model))
    return _RENDERERS[key]


def render_frame(
    model: mujoco.MjModel,
    qpos,
    markers: Sequence[Marker] = (),
    camera: mujoco.MjvCamera | None = None,
    height: int = 240,
    width: int = 320,
) -> np.ndarray:
    """``uint8[height, width, 3]``: the model at ``qpos`` (``f[nq]``, one env) seen by
    ``camera`` (default: :func:`default_camera` on the model's centre), with ``markers``
    drawn as spheres. Positions come from ``mj_kinematics`` in float64 on the host."""
    qpos = np.asarray(qpos, np.float64)
    if qpos.shape != (model.nq,):
        raise ValueError(f"render: qpos has shape {qpos.shape}, the model needs ({model.nq},)")
    renderer, data = _renderer(model, height, width)
    data.qpos[:] = np.nan_to_num(qpos)
    mujoco.mj_kinematics(model, data)
    if camera is None:
        camera = default_camera(model.stat.center, 2.0 * float(model.stat.extent))
    renderer.update_scene(data, camera=camera)
    scene = renderer.scene
    if scene.nlight:  # the headlight (light 0): brighter than MuJoCo's default 0.1 ambient
        scene.lights[0].ambient[:] = 0.35
        scene.lights[0].diffuse[:] = 0.6
    for pos, radius, rgba in markers:
        if scene.ngeom >= scene.maxgeom:
            break
        mujoco.mjv_initGeom(
            scene.geoms[scene.ngeom],
            mujoco.mjtGeom.mjGEOM_SPHERE,
            np.array([radius, 0.0, 0.0]),
            np.asarray(pos, np.float64),
            np.eye(3).ravel(),
            np.asarray(rgba, np.float32),
        )
        scene.ngeom += 1
    return renderer.render().copy()
