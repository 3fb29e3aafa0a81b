"""MJX physics of the manipulation family: one static model, pure step functions.

The model is an MJCF file under ``assets/`` (shipped with the package, nothing downloaded),
compiled once by MuJoCo's C library and copied to JAX with ``mjx.put_model``. The env
state holds only ``qpos`` and ``qvel`` (with the actuator targets ``ctrl`` given each
step): the family's models have position actuators (no activations) and either no
contacts (the arms) or contacts with the solver's warm start disabled in the MJCF (the hand
scenes), so ``(qpos, qvel, ctrl)`` is the whole physical state (see :func:`control_step`);
``mjx.Data`` is rebuilt from them inside jit.

Domain randomization: :func:`scaled_model` (servo gains, damping), :func:`scaled_friction`
and :func:`scaled_body` (an object's mass and size) return a modified ``mjx.Model`` from
traced scalars, so ``vmap`` over env params randomizes per env.
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


def _distinct_manifold_points(
    poly: jax.Array, poly_mask: jax.Array, poly_norm: jax.Array
) -> jax.Array:
    """MJX's choice of four contact points on a clipped polygon, each one distinct.

    ``poly`` (``f[P, 3]``) is a face-face contact's clipped polygon, ``poly_mask``
    (``bool[P]``) its valid points, ``poly_norm`` (``f[3]``) the reference face's normal.
    Returns ``i32[4]``: indices into ``poly``; an index repeats where fewer than four
    distinct valid points exist (the caller drops the repeats).

    MJX's own ``_manifold_points`` picks a (the first valid point), then b (the farthest
    from a), c (the farthest from line ab) and d (the farthest from lines ac and bc) among
    all valid points. The clipping (``collision_convex._clip``) emits each polygon vertex
    twice, once per edge that ends there, at positions equal up to rounding; so b, c or d
    can be a copy of a point already chosen, and which copy wins is decided by the last
    bits. A cube resting on one edge has two valid points, each emitted twice: MJX's four
    contacts are three copies of one and one of the other, or two of each, depending on a
    1e-7 m nudge (depths ``[-0.11, -1.0, -0.11, -0.11]`` mm against ``[-0.11, -1.0, -0.11,
    -1.0]`` mm), and the contact forces and the cube's motion jump with them (measured in
    benchmarks/RESULTS.md section 34). Here each pick is made among the valid points
    farther than 1 um from those already chosen, with MJX's scores: the points are the
    polygon's distinct vertices (at most four), each once.
    """
    far = 1e-12  # squared distance (m^2): points closer than 1 um are one point

    def away(avail, p):
        return avail & (jnp.sum((poly - p) ** 2, axis=1) > far)

    def pick(avail, score, fallback):
        return jnp.where(jnp.any(avail), jnp.argmax(jnp.where(avail, score, -jnp.inf)), fallback)

    a_idx = jnp.argmax(poly_mask)
    a = poly[a_idx]
    avail = away(poly_mask, a)
    b_idx = pick(avail, jnp.sum((a - poly) ** 2, axis=1), a_idx)
    b = poly[b_idx]
    avail = away(avail, b)
    ap = a - poly
    c_idx = pick(avail, jnp.abs(ap @ jnp.cross(poly_norm, a - b)), a_idx)
    c = poly[c_idx]
    avail = away(avail, c)
    ac, bc = jnp.cross(poly_norm, a - c), jnp.cross(poly_norm, b - c)
    d_idx = pick(avail, jnp.abs((b - poly) @ bc) + jnp.abs(ap @ ac), a_idx)
    return jnp.stack([a_idx, b_idx, c_idx, d_idx])


def _distinct_face_contacts():
    """Make MJX's face-face contacts (box-box, box-mesh, mesh-mesh) drop doubled points
    (applied once, on import): ``collision_convex._create_contact_manifold`` with
    :func:`_distinct_manifold_points` in place of MJX's pick, and a repeated index given
    the no-contact distance 1, as MJX's own ``plane_convex`` does with its repeats. The
    patch replaces a private function of the pinned ``mujoco-mjx==3.17.0``; its arguments
    and results are unchanged (``(dist f[4], pos f[4, 3], normal f[4, 3])``). Returns
    MJX's own function (the tests compare the two).
    """
    from mujoco.mjx._src import collision_convex as cc

    installed = cc._create_contact_manifold
    if hasattr(installed, "_mjx_original"):
        return installed._mjx_original

    def _create_contact_manifold(
        clipping_poly, subject_poly, clipping_norm, subject_norm, sep_axis
    ):
        poly_incident, mask = cc._clip(clipping_poly, subject_poly, clipping_norm, subject_norm)
        poly_ref = cc._project_poly_onto_plane(poly_incident, clipping_poly[0], clipping_norm)
        mask = mask & cc._point_in_front_of_plane(clipping_poly[0], -clipping_norm, poly_incident)
        best = _distinct_manifold_points(poly_ref, mask, clipping_norm)
        unique = jnp.tril(best == best[:, None]).sum(axis=1) == 1
        contact_pts = poly_ref[best]
        penetration = (poly_incident[best] - contact_pts) @ -clipping_norm
        dist = jnp.where(mask[best] & unique, -penetration, jnp.ones_like(penetration))
        normal = -jnp.stack([sep_axis] * 4, 0)
        return dist, contact_pts, normal

    _create_contact_manifold._mjx_original = installed  # type: ignore[attr-defined]
    cc._create_contact_manifold = _create_contact_manifold
    return installed


#: MJX's own ``collision_convex._create_contact_manifold`` (replaced on import, see above)
_MJX_CREATE_CONTACT_MANIFOLD = _distinct_face_contacts()


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


def kinematics(mx: mjx.Model, qpos: jax.Array, qvel: jax.Array, ctrl: jax.Array) -> mjx.Data:
    """``mjx.kinematics`` at ``(qpos, qvel, ctrl)``: body, geom and site positions and frames
    of ``qpos``, the position stage of ``mjx.forward`` and all that a reset reads (its
    values equal ``mjx.forward``'s, tested). The rest of ``mjx.forward`` (collision,
    constraint solve, accelerations) is left out: a reset at rest never reads it, and it
    doubled the compile time of a hand env's step (whose auto-reset branch holds a reset).
    """
    data = mjx.make_data(mx).replace(qpos=qpos, qvel=qvel, ctrl=ctrl)
    return mjx.kinematics(mx, data)


def control_step(
    mx: mjx.Model, qpos: jax.Array, qvel: jax.Array, ctrl: jax.Array, n_substeps: int
) -> mjx.Data:
    """``n_substeps`` calls of ``mjx.step`` with the actuator inputs held at ``ctrl``, then
    ``mjx.kinematics`` so that ``site_xpos`` and ``xpos`` are those of the final ``qpos``.

    Exact for the family's models: ``mj_step`` depends on ``(qpos, qvel, ctrl)`` only when
    no actuator has an activation and the constraint solver does not warm-start from the
    previous step's accelerations (``qacc_warmstart``). The arm models have no contacts or
    constraints at all; the hand scenes have contacts and set ``<flag warmstart="disable"/>``
    in the MJCF that MuJoCo C and MJX both load. Rebuilding ``mjx.Data`` every control
    step then changes nothing (``tests/envs/manipulation`` compares with MuJoCo C's
    ``mj_step`` over 200 control steps).
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


def scaled_friction(mx: mjx.Model, base: mujoco.MjModel, scale, geom_ids=None) -> mjx.Model:
    """``mx`` with the sliding friction (``geom_friction[:, 0]``) of ``geom_ids`` (all geoms
    when ``None``) times ``scale`` (a traced scalar). MuJoCo takes the larger coefficient of
    the two geoms in contact, so scaling every geom scales every contact's friction."""
    friction = jnp.asarray(base.geom_friction, mx.geom_friction.dtype)
    ids = slice(None) if geom_ids is None else np.asarray(geom_ids, np.int32)
    return mx.replace(geom_friction=friction.at[ids, 0].multiply(scale))


def scaled_body(
    mx: mjx.Model, base: mujoco.MjModel, body: int, mass_scale, size_scale
) -> mjx.Model:
    """``mx`` with body ``body`` (an object: primitive geoms, e.g. a sphere or a box) scaled:
    its mass times ``mass_scale * size_scale**3``, its inertia times ``mass_scale *
    size_scale**5``, its geoms' sizes (and bounding radii) times ``size_scale``. Traced
    scalars. The constraint solver's diagonal approximation (``body_invweight0``, computed
    by MuJoCo at compile time) keeps the unscaled value: it only sets the constraints'
    softness scale, not the dynamics' equations.
    """
    geoms = np.flatnonzero(np.asarray(base.geom_bodyid) == body).astype(np.int32)
    mass = jnp.asarray(base.body_mass, mx.body_mass.dtype)
    inertia = jnp.asarray(base.body_inertia, mx.body_inertia.dtype)
    size = jnp.asarray(base.geom_size, mx.geom_size.dtype)
    rbound = jnp.asarray(base.geom_rbound, mx.geom_rbound.dtype)
    m = mass_scale * size_scale**3
    return mx.replace(
        body_mass=mass.at[body].multiply(m),
        body_inertia=inertia.at[body].multiply(m * size_scale**2),
        geom_size=size.at[geoms].multiply(size_scale),
        geom_rbound=rbound.at[geoms].multiply(size_scale),
    )


def site_id(model: mujoco.MjModel, name: str) -> int:
    return int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name))


def body_id(model: mujoco.MjModel, name: str) -> int:
    i = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name))
    if i < 0:
        raise ValueError(f"no body named {name!r} in the model")
    return i


def geom_id(model: mujoco.MjModel, name: str) -> int:
    i = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name))
    if i < 0:
        raise ValueError(f"no geom named {name!r} in the model")
    return i


def actuated_joints(model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    """``(qpos addresses, dof addresses)`` (``np.int32[nu]``) of the joint each actuator
    drives, in actuator order. Every actuator must drive one hinge or slide joint (the
    family's position servos); anything else raises ``ValueError``."""
    ok = np.asarray(model.actuator_trntype) == mujoco.mjtTrn.mjTRN_JOINT
    joints = np.asarray(model.actuator_trnid)[:, 0]
    types = np.asarray(model.jnt_type)[joints]
    scalar = (types == mujoco.mjtJoint.mjJNT_HINGE) | (types == mujoco.mjtJoint.mjJNT_SLIDE)
    if not np.all(ok & scalar):
        raise ValueError("every actuator must drive one hinge or slide joint")
    qadr = np.asarray(model.jnt_qposadr)[joints].astype(np.int32)
    dadr = np.asarray(model.jnt_dofadr)[joints].astype(np.int32)
    return qadr, dadr


def free_joint(model: mujoco.MjModel, body: str) -> tuple[int, int]:
    """``(qpos address, dof address)`` of the free joint of body ``body`` (an object):
    ``qpos[a:a+3]`` is its position (m, world), ``qpos[a+3:a+7]`` its orientation (unit
    quaternion, w first), ``qvel[d:d+3]`` its linear velocity (m/s, world frame) and
    ``qvel[d+3:d+6]`` its angular velocity (rad/s, in the body's own frame: see
    :func:`quat_rotate`)."""
    b = body_id(model, body)
    n, j = int(model.body_jntnum[b]), int(model.body_jntadr[b])
    if n != 1 or model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
        raise ValueError(f"body {body!r} must have exactly one free joint")
    return int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])


def quat_rotate(quat: jax.Array, vec: jax.Array) -> jax.Array:
    """``vec`` (``f32[3]``) rotated by the unit quaternion ``quat`` (``f32[4]``, w first):
    e.g. a free body's angular velocity from its own frame to the world frame."""
    w, u = quat[0], quat[1:]
    t = 2.0 * jnp.cross(u, vec)
    return vec + w * t + jnp.cross(u, t)


def random_quat(key: jax.Array) -> jax.Array:
    """A uniformly random unit quaternion (``f32[4]``, w first; Shoemake's method)."""
    u1, u2, u3 = jax.random.uniform(key, (3,), jnp.float32)
    a, b = jnp.sqrt(1.0 - u1), jnp.sqrt(u1)
    t2, t3 = 2.0 * jnp.pi * u2, 2.0 * jnp.pi * u3
    return jnp.stack([b * jnp.cos(t3), a * jnp.sin(t2), a * jnp.cos(t2), b * jnp.sin(t3)])


def contact_rows(model: mujoco.MjModel) -> np.ndarray:
    """``np.int32[ncon, R]``: for each of MJX's contact slots of ``model`` (a fixed number,
    e.g. the ``max_contact_points`` of the MJX Shadow Hand), the constraint rows
    (``efc_force`` indices) whose sum is the contact's normal force, ``-1`` padding: the
    ``2 (condim - 1)`` facets of a pyramidal cone (1 for condim 1), the first row of an
    elliptic one. The slots' row addresses are fixed when MJX lays out ``mjx.Data``."""
    con = mjx.make_data(model)._impl.contact
    adr, dim = np.asarray(con.efc_address), np.asarray(con.dim)
    if model.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL:
        n = np.where(dim == 1, 1, 2 * (dim - 1))
    else:
        n = np.ones_like(dim)
    width = int(n.max(initial=1))
    rows = adr[:, None] + np.arange(width)[None]
    return np.where((np.arange(width)[None] < n[:, None]) & (adr[:, None] >= 0), rows, -1).astype(
        np.int32
    )


def contact_normal_forces(
    data: mjx.Data, rows: np.ndarray, geom_group: np.ndarray, num_groups: int
) -> jax.Array:
    """``f32[num_groups]``: the summed normal force (N, >= 0) of the contacts in ``data``
    between a geom of group ``g`` and a geom of group ``-2`` (an object), for each ``g`` in
    ``0..num_groups-1``. ``rows`` is :func:`contact_rows` of the model; ``geom_group``
    (``np.int32[ngeom]``) puts each geom in a group (``-1``: none).

    The forces are those of the constraint solve of the ``mjx.step`` that produced ``data``
    (on its contacts, found before that step's integration): what MuJoCo C's
    ``mj_contactForce`` gives after ``mj_step`` (tested). Which geoms a contact slot holds
    is decided inside the step (MJX keeps the nearest ``max_geom_pairs``); an unused slot
    (geom ``-1``) or a contact without force contributes 0.
    """
    impl = data._impl
    efc = jnp.where(rows >= 0, impl.efc_force[jnp.asarray(np.maximum(rows, 0))], 0.0)
    normal = efc.sum(-1)  # f32[ncon]
    geom = impl.contact.geom  # i32[ncon, 2], -1 in an unused slot
    group = jnp.where(geom >= 0, jnp.asarray(geom_group)[jnp.maximum(geom, 0)], -1)
    g0, g1 = group[:, 0], group[:, 1]
    side = jnp.where(g1 == -2, g0, jnp.where(g0 == -2, g1, -1))  # the object's partner group
    onehot = side[:, None] == jnp.arange(num_groups)[None]
    return jnp.sum(jnp.where(onehot, normal[:, None], 0.0), axis=0).astype(jnp.float32)


def finite(*arrays: jax.Array) -> jax.Array:
    """``bool[]``: every entry of every array is finite."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in arrays]))


def joint_ranges(model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of the actuators' control ranges (float32)."""
    rng = np.asarray(model.actuator_ctrlrange, np.float32)
    return rng[:, 0], rng[:, 1]
