"""Quadrotor dynamics: analytic cases, invariants, and an independent solve_ivp reference."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from hordax.envs.aerial import dynamics as dyn

PRESETS = {"aerial_gym": dyn.aerial_gym_quad(), "crazyflie": dyn.crazyflie()}


@functools.partial(jax.jit, static_argnames="num_steps")
def _rollout(state, commands, params, num_steps):
    """``commands f32[num_steps, 4]`` (or ``[4]`` held) -> states after every step."""
    commands = jnp.broadcast_to(commands, (num_steps, 4))

    def body(s, cmd):
        s = dyn.step(s, cmd, params)
        return s, s

    return jax.lax.scan(body, state, commands)[1]


def _at_rest(params, pos=(0.0, 0.0, 5.0), thrust=0.0, quat=(1.0, 0, 0, 0), omega=(0, 0, 0)):
    return dyn.QuadState(
        pos=jnp.asarray(pos, jnp.float32),
        vel=jnp.zeros(3, jnp.float32),
        quat=jnp.asarray(quat, jnp.float32),
        omega=jnp.asarray(omega, jnp.float32),
        thrust=jnp.broadcast_to(jnp.asarray(thrust, jnp.float32), (4,)),
    )


@pytest.mark.parametrize("preset", PRESETS)
def test_dynamics__hover_thrust_keeps_vehicle_still(preset):
    """m g / 4 per motor from the hover state: |dp|, |v|, |w| < 1e-5 after 5 s."""
    params = PRESETS[preset]
    start = dyn.hover_state(params, jnp.array([0.0, 0.0, 1.0]))
    traj = _rollout(start, jnp.full(4, dyn.hover_thrust(params)), params, 500)
    np.testing.assert_allclose(traj.pos, np.broadcast_to([0.0, 0.0, 1.0], (500, 3)), atol=1e-5)
    np.testing.assert_allclose(traj.vel, 0.0, atol=1e-5)
    np.testing.assert_allclose(traj.omega, 0.0, atol=1e-5)


@pytest.mark.parametrize("preset", PRESETS)
def test_dynamics__free_fall_matches_half_g_t_squared(preset):
    """Motors off (thrust_min = 0), no drag: z(t) = z0 - g t^2 / 2, v(t) = -g t, to 2 s."""
    params = PRESETS[preset].replace(thrust_min=jnp.float32(0.0), lin_drag=jnp.zeros(3))
    traj = _rollout(_at_rest(params, pos=(1.0, -2.0, 30.0)), jnp.zeros(4), params, 200)
    t = 0.01 * np.arange(1, 201)
    g = float(params.gravity)
    np.testing.assert_allclose(traj.pos[:, 2], 30.0 - g * t**2 / 2, atol=2e-4)
    np.testing.assert_allclose(traj.vel[:, 2], -g * t, atol=2e-5)
    np.testing.assert_allclose(traj.pos[:, :2], np.broadcast_to([1.0, -2.0], (200, 2)), atol=0)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_dynamics__body_torque_gives_analytic_angular_acceleration(preset, axis):
    """A thrust pattern with torque M about one body axis gives w(t) = M / J t exactly."""
    params = PRESETS[preset]
    hover = float(dyn.hover_thrust(params))
    alloc = np.asarray(dyn.allocation_matrix(params), np.float64)
    wrench = np.zeros(4)
    wrench[0] = 4 * hover
    wrench[1 + axis] = 0.2 * hover * (0.13 if axis < 2 else 0.01)  # well inside the limits
    thrusts = np.linalg.solve(alloc, wrench).astype(np.float32)
    assert np.all(thrusts > float(params.thrust_min)) and np.all(thrusts < float(params.thrust_max))
    start = _at_rest(params, thrust=thrusts)
    torque = (alloc @ thrusts.astype(np.float64))[1:]
    alpha = torque / np.asarray(params.inertia, np.float64)
    deriv = dyn.derivative(start, jnp.asarray(thrusts), params)
    scale = np.abs(alpha).max()  # off-axis entries are float32 rounding of this size
    np.testing.assert_allclose(deriv.omega, alpha, rtol=1e-5, atol=1e-5 * scale)
    traj = _rollout(start, jnp.asarray(thrusts), params, 50)
    t = 0.01 * np.arange(1, 51)
    np.testing.assert_allclose(traj.omega, t[:, None] * alpha[None], rtol=1e-4, atol=1e-5 * scale)


def _tumbling_params():
    # Asymmetric inertia so that torque-free motion really tumbles (not a trivial spin).
    return PRESETS["aerial_gym"].replace(
        inertia=jnp.array([4.2e-4, 6.1e-4, 8.5e-4], jnp.float32),
        thrust_min=jnp.float32(0.0),
    )


def test_dynamics__torque_free_tumbling_conserves_angular_momentum_and_energy():
    """Motors off, no drag: world angular momentum R J w and 1/2 w.J w constant over 2 s."""
    params = _tumbling_params()
    start = _at_rest(params, omega=(3.0, 0.2, -1.5))
    traj = _rollout(start, jnp.zeros(4), params, 200)
    rot = Rotation.from_quat(np.asarray(traj.quat)[:, [1, 2, 3, 0]]).as_matrix()
    inertia = np.asarray(params.inertia, np.float64)
    omega = np.asarray(traj.omega, np.float64)
    momentum = np.einsum("tij,tj->ti", rot, inertia * omega)
    energy = 0.5 * np.sum(inertia * omega**2, axis=-1)
    m0 = inertia * np.array([3.0, 0.2, -1.5])
    e0 = 0.5 * np.sum(inertia * np.array([3.0, 0.2, -1.5]) ** 2)
    assert np.abs(omega - omega[0]).max() > 0.1, "the body should tumble (w changes in body frame)"
    np.testing.assert_allclose(momentum, np.broadcast_to(m0, momentum.shape), rtol=2e-5, atol=1e-8)
    np.testing.assert_allclose(energy, e0, rtol=2e-5)


def test_dynamics__ballistic_linear_momentum_and_mechanical_energy():
    """Motors off, no drag, thrown sideways: m v_xy constant, m v_z = m v0_z - m g t, E const."""
    params = _tumbling_params()
    start = _at_rest(params, pos=(0.0, 0.0, 40.0), omega=(1.0, -2.0, 0.5))
    start = start.replace(vel=jnp.array([2.0, -1.0, 4.0], jnp.float32))
    traj = _rollout(start, jnp.zeros(4), params, 200)
    m, g = float(params.mass), float(params.gravity)
    t = 0.01 * np.arange(1, 201)
    np.testing.assert_allclose(traj.vel[:, :2], np.broadcast_to([2.0, -1.0], (200, 2)), atol=1e-6)
    np.testing.assert_allclose(m * traj.vel[:, 2], m * (4.0 - g * t), rtol=1e-5, atol=1e-6)
    energy = 0.5 * m * np.sum(np.asarray(traj.vel, np.float64) ** 2, -1) + m * g * traj.pos[:, 2]
    e0 = 0.5 * m * (4 + 1 + 16) + m * g * 40.0
    np.testing.assert_allclose(energy, e0, rtol=1e-5)


def test_dynamics__quaternion_norm_stays_one_over_1e5_steps():
    """Tumbling with random motor commands for 10^5 steps: max | |q| - 1 | < 1e-6."""
    params = _tumbling_params().replace(gravity=jnp.float32(0.0))
    start = _at_rest(params, omega=(5.0, -3.0, 2.0))
    num_steps = 100_000

    @jax.jit
    def run(key):
        def body(s, k):
            cmd = jax.random.uniform(k, (4,), jnp.float32, 0.0, 0.05)
            s = dyn.step(s, cmd, params)
            s = s.replace(pos=jnp.zeros(3), vel=jnp.zeros(3))  # keep translation bounded
            return s, jnp.abs(jnp.linalg.norm(s.quat) - 1.0)

        last, err = jax.lax.scan(body, start, jax.random.split(key, num_steps))
        return last, err.max()

    last, max_err = run(jax.random.key(0))
    assert float(max_err) < 1e-6
    assert np.all(np.isfinite(np.asarray(last.omega)))


# --------------------------------------------------------------------------------------------
# independent reference: the same equations in float64 numpy, integrated by solve_ivp


def _reference_rhs(params):
    p = jax.tree.map(lambda x: np.asarray(x, np.float64), params)
    xy, dirs = p.motor_xy, p.motor_dir

    def rhs(_t, y, cmd):
        vel, q, omega, f = y[3:6], y[6:10], y[10:13], y[13:17]
        q_unit = q / np.linalg.norm(q)
        rot = Rotation.from_quat(q_unit[[1, 2, 3, 0]]).as_matrix()
        thrust = f.sum()
        torque = np.array(
            [np.sum(xy[:, 1] * f), -np.sum(xy[:, 0] * f), p.yaw_coef * np.sum(dirs * f)]
        )
        vb = rot.T @ vel
        drag = -(p.lin_drag * vb + p.quad_drag * np.abs(vb) * vb)
        acc = rot @ (np.array([0.0, 0.0, thrust]) + drag) / p.mass - np.array([0, 0, p.gravity])
        w, x, yq, z = q
        ox, oy, oz = omega
        dq = 0.5 * np.array(
            [
                -x * ox - yq * oy - z * oz,
                w * ox + yq * oz - z * oy,
                w * oy - x * oz + z * ox,
                w * oz + x * oy - yq * ox,
            ]
        )
        ang_drag = -(p.ang_lin_drag * omega + p.ang_quad_drag * np.abs(omega) * omega)
        domega = (torque + ang_drag - np.cross(omega, p.inertia * omega)) / p.inertia
        tau = np.where(cmd >= f, p.motor_tau_up, p.motor_tau_down)
        return np.concatenate([vel, acc, dq, domega, (cmd - f) / tau])

    return rhs


def _reference_trajectory(params, y0, commands):
    rhs = _reference_rhs(params)
    lo, hi = float(params.thrust_min), float(params.thrust_max)
    dt = float(params.dt)
    out, y = [], np.asarray(y0, np.float64)
    for cmd in np.clip(np.asarray(commands, np.float64), lo, hi):
        sol = solve_ivp(rhs, (0.0, dt), y, args=(cmd,), method="DOP853", rtol=1e-10, atol=1e-12)
        y = sol.y[:, -1]
        out.append(y)
    return np.stack(out)


def _command_sequences(params, num_steps):
    """Several motor-command sequences exercising thrust, torques, limits and both lags."""
    rng = np.random.default_rng(0)
    hover = float(dyn.hover_thrust(params))
    lo, hi = float(params.thrust_min), float(params.thrust_max)
    t = 0.01 * np.arange(num_steps)[:, None]
    phase = np.array([0.0, 1.0, 2.0, 3.0])
    return {
        "sinusoids": hover * (1.0 + 0.15 * np.sin(2 * np.pi * 1.5 * t + phase)),
        "random_steps": np.repeat(
            rng.uniform(0.8 * hover, 1.25 * hover, (num_steps // 20, 4)), 20, axis=0
        ),
        "saturating_bangs": np.where((t // 0.25) % 2 == 0, hi * 1.5, lo - 1.0)
        * np.array([1.0, 0.0, 1.0, 0.0])
        + np.where((t // 0.25) % 2 == 0, lo, hi) * np.array([0.0, 1.0, 0.0, 1.0]),
    }


REFERENCE_TOL = {"pos": 1e-4, "vel": 1e-4, "quat": 2e-5, "omega": 2e-4, "thrust": 1e-4}


@pytest.mark.parametrize("preset", PRESETS)
def test_dynamics__matches_solve_ivp_reference_over_2s(preset):
    """hordax RK4 (float32) vs DOP853 (float64, rtol 1e-10) on the same equations, 2 s.

    Drag (linear, quadratic, angular), unequal rise/fall lags and a tumbling start are on
    so every term is exercised; tolerances (max abs error over the trajectory) are
    ``REFERENCE_TOL``: 0.1 mm, 1e-4 m/s, 2e-5 (quaternion), 2e-4 rad/s, 1e-4 N
    (measured errors are 5-10x smaller: ~2e-5 m, ~2e-5 m/s, ~4e-6, ~5e-5 rad/s, ~3e-5 N).
    """
    params = PRESETS[preset]
    params = params.replace(
        quad_drag=jnp.array([0.01, 0.01, 0.02], jnp.float32) * params.mass / 0.225,
        ang_lin_drag=params.inertia * 0.5,
        ang_quad_drag=params.inertia * 0.1,
        motor_tau_down=params.motor_tau_up * 1.5,
    )
    num_steps = 200
    hover = float(dyn.hover_thrust(params))
    q0 = np.asarray(dyn.quat_from_euler(0.2, -0.1, 0.5))
    y0 = np.concatenate([[0.0, 0.0, 2.0], [0.3, -0.2, 0.1], q0, [0.5, -0.4, 0.3], [hover] * 4])
    start = dyn.QuadState(
        pos=jnp.asarray(y0[:3], jnp.float32),
        vel=jnp.asarray(y0[3:6], jnp.float32),
        quat=jnp.asarray(y0[6:10], jnp.float32),
        omega=jnp.asarray(y0[10:13], jnp.float32),
        thrust=jnp.asarray(y0[13:], jnp.float32),
    )
    for name, commands in _command_sequences(params, num_steps).items():
        ours = _rollout(start, jnp.asarray(commands, jnp.float32), params, num_steps)
        ref = _reference_trajectory(params, y0, commands)
        for field, sl in (
            ("pos", slice(0, 3)),
            ("vel", slice(3, 6)),
            ("quat", slice(6, 10)),
            ("omega", slice(10, 13)),
            ("thrust", slice(13, 17)),
        ):
            err = np.abs(np.asarray(getattr(ours, field), np.float64) - ref[:, sl]).max()
            print(f"{preset}/{name}: max |{field} error| = {err:.3g}")
            assert err < REFERENCE_TOL[field], f"{preset}/{name}: max |{field} error| = {err:.3g}"
        assert np.abs(ref[:, 2] - ref[0, 2]).max() > 0.05, f"{name}: trajectory should move"


# --------------------------------------------------------------------------------------------
# allocation, disturbances, validation


@pytest.mark.parametrize("layout", ["x", "+"])
def test_dynamics__allocation_round_trip_for_x_and_plus_layouts(layout):
    """motor_thrusts_for_wrench inverts the allocation matrix (inside the limits)."""
    params = PRESETS["aerial_gym"].replace(motor_xy=dyn.motor_layout(layout, 0.18))
    alloc = np.asarray(dyn.allocation_matrix(params))
    wrench = np.array([4.0, 0.02, -0.03, 0.004], np.float32)
    thrusts = dyn.motor_thrusts_for_wrench(wrench[0], jnp.asarray(wrench[1:]), params)
    np.testing.assert_allclose(alloc @ np.asarray(thrusts), wrench, rtol=1e-5, atol=1e-6)
    if layout == "+":  # roll torque from the left/right pair only, pitch from front/back
        np.testing.assert_allclose(alloc[1], [0.0, -0.18, 0.0, 0.18], atol=1e-7)
        np.testing.assert_allclose(alloc[2], [-0.18, 0.0, 0.18, 0.0], atol=1e-7)
    else:
        np.testing.assert_allclose(np.abs(alloc[1:3]), 0.18 / np.sqrt(2), rtol=1e-6)


def test_dynamics__disturbances_off_by_default_bounded_when_on():
    """prob 0 -> always zero; prob 1 -> every kick nonzero and inside the bounds."""
    keys = jax.random.split(jax.random.key(1), 256)
    params = PRESETS["aerial_gym"]
    force, torque = jax.vmap(dyn.sample_disturbance, (0, None))(keys, params)
    assert not np.any(force) and not np.any(torque)
    on = params.replace(disturb_prob=jnp.float32(1.0))
    force, torque = jax.vmap(dyn.sample_disturbance, (0, None))(keys, on)
    assert np.all(np.abs(force) <= 0.75) and np.all(np.abs(torque) <= 0.004)
    assert np.all(np.linalg.norm(force, axis=-1) > 0)
    half = params.replace(disturb_prob=jnp.float32(0.25))
    force, _ = jax.vmap(dyn.sample_disturbance, (0, None))(keys, half)
    frac = np.mean(np.linalg.norm(force, axis=-1) > 0)
    assert 0.15 < frac < 0.35


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("mass", -0.1, r"params\.quad\.mass=-0\.1.*> 0"),
        ("inertia", [4e-4, 0.0, 8e-4], r"params\.quad\.inertia=.*> 0"),
        ("thrust_max", 0.5, r"params\.quad\.thrust_max=0\.5.*able to hover"),
        ("motor_tau_up", 0.0, r"params\.quad\.motor_tau_up"),
        ("disturb_prob", 1.5, r"params\.quad\.disturb_prob=1\.5.*\[0, 1\]"),
        ("lin_drag", [0.0, -1.0, 0.0], r"params\.quad\.lin_drag.*>= 0"),
        ("mass", float("nan"), r"params\.quad\.mass=nan.*finite"),
    ],
)
def test_dynamics__validate_rejects_bad_params_naming_the_field(field, value, match):
    params = PRESETS["aerial_gym"].replace(**{field: jnp.asarray(value, jnp.float32)})
    with pytest.raises(ValueError, match=match):
        dyn.validate_quad_params(params)


def test_dynamics__presets_validate_and_vmap_over_params():
    """Both presets pass validation; vmap over stacked params equals per-params steps."""
    for params in PRESETS.values():
        dyn.validate_quad_params(params)
    stacked = jax.tree.map(lambda a, b: jnp.stack([a, b]), *PRESETS.values())
    dyn.validate_quad_params(stacked)
    states = jax.tree.map(
        lambda a, b: jnp.stack([a, b]), *(dyn.hover_state(p) for p in PRESETS.values())
    )
    cmd = jnp.array([0.5, 0.05, 0.5, 0.05], jnp.float32)
    batched = jax.vmap(dyn.step, (0, None, 0))(states, cmd, stacked)
    for i, params in enumerate(PRESETS.values()):
        single = dyn.step(dyn.hover_state(params), cmd, params)
        for a, b in zip(jax.tree.leaves(single), jax.tree.leaves(batched), strict=True):
            np.testing.assert_allclose(a, b[i], rtol=1e-6, atol=1e-7)
