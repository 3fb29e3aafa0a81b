"""Manipulation family: arms and hands on MuJoCo MJX (``mujoco-mjx``), pure JAX inside jit.

- ``physics``: the static model (MJCF shipped in ``assets/``, loaded once, ``mjx.put_model``),
  the control step (``n_substeps`` ``mjx.step`` calls on a position-servo arm) and the
  kinematics (``mjx.kinematics``, the position stage of ``mjx.forward``) used by resets.
- ``base``: :class:`~hordax.envs.manipulation.base.ArmEnv`, the shared gymnax environment:
  joint-position targets as offsets around a home pose, fresh resets, NaN handling.
- ``render``: ``env.render(state, params)`` frames with MuJoCo's offscreen renderer.
- tasks: ``reach`` (``Manip-Reach-v0``, the robosuite Panda arm, no contacts), ``push``
  (``Manip-Push-v0``, the Panda pushing a cube, with contacts), ``hand``
  (``Manip-HandSphereRotate-v0`` and ``Manip-HandCubeRotateZ-v0``, the Shadow Hand).

Nothing is imported here: ``mujoco`` loads only when a manipulation id is made.
"""

import os as _os

# MuJoCo chooses its OpenGL backend when mujoco is first imported; without a display the
# default (GLFW) cannot render, EGL can (GPU, or Mesa's software driver on a CPU).
if not _os.environ.get("MUJOCO_GL") and not _os.environ.get("DISPLAY"):
    _os.environ["MUJOCO_GL"] = "egl"
