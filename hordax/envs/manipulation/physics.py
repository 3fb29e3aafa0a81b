"""MJX physics of the manipulation family: one static model, pure step functions.

The model is an MJCF file under ``assets/`` (shipped with the package, nothing downloaded),
compiled once by MuJoCo's C library and copied to JAX with ``mjx.put_model``. The env
state holds only ``qpos`` and ``qvel`` (the arm models have no activations, contacts or
constraint solver, so these two arrays are the whole physical state: see
:func:`control_step`); ``mjx.Data`` is rebuilt from them inside jit.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import io

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

# mujoco.mjx prints two lines on stdout when the optional NVIDIA Warp backend is missing
# (always on CPU); hordax's CLI writes JSON on stdout, so the import is kept quiet.
with contextlib.redirect_stdout(io.StringIO()):
    from mujoco import mjx
    from mujoco.mjx._src import scan as _mjx_scan


def _fusion_barrier_per_tree_level() -> None:
    """Make MJX's tree scans cheap on XLA:CPU (applied once, on import).

    ``mjx``'s kinematics, inertia and bias forces walk the kinematic tree one depth level at
    a time (``mujoco.mjx._src.scan.body_tree``), each level a few quaternion products of the
    level above. XLA:CPU's fusion emitters (the default in jax 0.9.2) fuse the whole chain
    into one elementwise loop that recomputes every level for every use, which grows
    exponentially with the depth: a batch of 64 ``mjx.step`` of the 8-body Panda took 1.8 s
    (6.8 env steps/s at 5 substeps), 3,000x slower than with
    ``XLA_FLAGS=--xla_cpu_use_fusion_emitters=false``. An ``optimization_barrier`` on each
    level's output stops that fusion (the values are unchanged): 0.6 ms for the same batch.
    The patch wraps the private ``_nvmap`` of the pinned ``mujoco-mjx==3.17.0``.
    """
    nvmap = _mjx_scan._nvmap
    if getattr(nvmap, "_hordax_barrier", False):
        return

    def _nvmap(f, *args):
        return jax.lax.optimization_barrier(nvmap(f, *args))

    _nvmap._hordax_barrier = True  # type: ignore[attr-defined]
    _mjx_scan._nvmap = _nvmap


_fusion_barrier_per_tree_level()


def asset_path(name: str) -> str:
    """Absolute path of a file in ``hordax/envs/manipulation/assets``."""
    return str(importlib.resources.files("hordax.envs.manipulation") / "assets" / name)


@functools.cache
def load_model(name: str) -> mujoco.MjModel:
    """The compiled MuJoCo model of ``assets/<name>`` (cached: compiled once per process).

    Treat it as read-only: it is shared by every env built from the same file.
    """
    return mujoco.MjModel.from_xml_path(asset_path(name))


def put_model(model: mujoco.MjModel) -> mjx.Model:
    """``mjx.put_model`` on the JAX default device (float32 unless x64 is on)."""
    return mjx.put_model(model)


def forward(mx: mjx.Model, qpos: jax.Array, qvel: jax.Array, ctrl: jax.Array) -> mjx.Data:
    """``mjx.forward`` at ``(qpos, qvel, ctrl)``: positions of bodies and sites included."""
    data = mjx.make_data(mx).replace(qpos=qpos, qvel=qvel, ctrl=ctrl)
    return mjx.forward(mx, data)


def control_step(
    mx: mjx.Model, qpos: jax.Array, qvel: jax.Array, ctrl: jax.Array, n_substeps: int
) -> mjx.Data:
    """``n_substeps`` calls of ``mjx.step`` with the actuator inputs held at ``ctrl``, then
    ``mjx.kinematics`` so that ``site_xpos`` and ``xpos`` are those of the final ``qpos``.

    Exact for the family's arm models: with contacts and the constraint solver disabled in
    the MJCF, ``mj_step`` depends on ``(qpos, qvel, ctrl)`` only (no warm start, no
    activations), so rebuilding ``mjx.Data`` every control step changes nothing
    (``tests/envs/manipulation`` compares with MuJoCo C's ``mj_step`` over 200 steps).
    """
    data = mjx.make_data(mx).replace(qpos=qpos, qvel=qvel, ctrl=ctrl)

    def substep(d, _):
        return mjx.step(mx, d), None

    data, _ = jax.lax.scan(substep, data, None, length=n_substeps)
    return mjx.kinematics(mx, data)


def scaled_model(mx: mjx.Model, base: mujoco.MjModel, gain_scale, damping_scale) -> mjx.Model:
    """``mx`` with position-servo gains (``kp`` and ``kv``) times ``gain_scale`` and joint
    damping times ``damping_scale`` (traced scalars: domain randomization by ``vmap`` over
    params). ``base`` is the C model ``mx`` came from; its values are the unscaled ones."""
    gainprm = jnp.asarray(base.actuator_gainprm, mx.actuator_gainprm.dtype)
    biasprm = jnp.asarray(base.actuator_biasprm, mx.actuator_biasprm.dtype)
    gainprm = gainprm.at[:, 0].multiply(gain_scale)
    biasprm = biasprm.at[:, 1:3].multiply(gain_scale)
    damping = jnp.asarray(base.dof_damping, mx.dof_damping.dtype) * damping_scale
    return mx.replace(actuator_gainprm=gainprm, actuator_biasprm=biasprm, dof_damping=damping)


def site_id(model: mujoco.MjModel, name: str) -> int:
    return int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name))


def finite(*arrays: jax.Array) -> jax.Array:
    """``bool[]``: every entry of every array is finite."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in arrays]))


def joint_ranges(model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of the actuators' control ranges (float32)."""
    rng = np.asarray(model.actuator_ctrlrange, np.float32)
    return rng[:, 0], rng[:, 1]
