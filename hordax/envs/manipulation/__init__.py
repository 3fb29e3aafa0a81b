"""Manipulation family: arms and hands on MuJoCo MJX (``mujoco-mjx``), pure JAX inside jit.

- ``physics``: the static model (MJCF shipped in ``assets/``, loaded once, ``mjx.put_model``),
  the control step (``n_substeps`` ``mjx.step`` calls on a position-servo arm) and the
  kinematics (``mjx.forward``) used by resets.
- ``base``: :class:`~hordax.envs.manipulation.base.ArmEnv`, the shared gymnax environment:
  joint-position targets as offsets around a home pose, fresh resets, NaN handling.
- tasks: ``reach`` (``Manip-Reach-v0``, the robosuite Panda arm, no contacts).

Nothing is imported here: ``mujoco`` loads only when a manipulation id is made.
"""
