"""make/register: gymnax ids, hordax ids, params overrides, clear errors, lazy imports."""

import subprocess
import sys

import jax
import numpy as np
import pytest

import hordax
from hordax.envs.registry import UnknownEnvError


@pytest.mark.parametrize(
    "env_id",
    ["CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCarContinuous-v0", "Breakout-MinAtar"],
)
def test_make__accepts_gymnax_ids(env_id):
    """Every gymnax id works through hordax.make and returns (env, default params)."""
    env, params = hordax.make(env_id)
    same = jax.tree.map(np.array_equal, params, env.default_params)
    assert all(jax.tree.leaves(same))


def test_registered_envs__lists_hordax_ids_and_optionally_gymnax():
    ids = hordax.registered_envs()
    assert "Debug-PointMass-v0" in ids and "CartPole-v1" not in ids
    assert {"CartPole-v1", "Debug-PointMass-v0"} <= set(hordax.registered_envs(include_gymnax=True))


def test_make__sets_params_fields_and_constructor_kwargs():
    """Keywords go to the constructor if it takes them, otherwise to params fields."""
    _, params = hordax.make("CartPole-v1", gravity=12.0, params={"max_steps_in_episode": 7})
    assert params.gravity == 12.0 and params.max_steps_in_episode == 7
    env, _ = hordax.make("Debug-MultiPointMass-v0", num_agents=5, goal_radius=0.2)
    assert env.num_agents == 5


def test_make__unknown_id_names_it_and_suggests():
    with pytest.raises(UnknownEnvError, match=r"env='CartPol-v1'.*did you mean CartPole-v1"):
        hordax.make("CartPol-v1")


def test_make__a_params_field_given_twice_is_refused():
    """``make(id, gravity=2.0, params={"gravity": 1.0})``: one field, two values; the params
    dict won silently."""
    with pytest.raises(ValueError, match=r"^params\.gravity: given twice, as the keyword"):
        hordax.make("CartPole-v1", gravity=2.0, params={"gravity": 1.0})
    _, params = hordax.make("CartPole-v1", length=0.6, params={"gravity": 1.0})
    assert (params.length, params.gravity) == (0.6, 1.0)


def test_make__unknown_params_field_lists_allowed():
    with pytest.raises(ValueError, match=r"^gravty: neither an argument .*params.*'gravity'"):
        hordax.make("CartPole-v1", gravty=1.0)
    with pytest.raises(ValueError, match=r"params.quad.mas: unknown field of QuadParams.*'mass'"):
        hordax.make("Aerial-Hover-v0", params={"quad": {"mas": 1.0}})
    # a keyword is a constructor argument or a params field: a typo of either lists both
    with pytest.raises(ValueError, match=r"^controler: .*constructor \(allowed: \['airframe'"):
        hordax.make("Aerial-Hover-v0", controler="velocity")


@pytest.mark.parametrize(
    ("env_id", "params", "message"),
    [
        # issue #18 item 2: a string reached JAX (a traceback) or numpy (no key named)
        ("CartPole-v1", {"gravity": "abc"}, "params.gravity='abc': must be a finite number"),
        ("Debug-PointMass-v0", {"dt": "abc"}, "params.dt='abc': must be a finite number"),
        # item 3: gymnax ids had no checks; int fields took floats
        (
            "CartPole-v1",
            {"max_steps_in_episode": 0},
            "max_steps_in_episode=0: must be an integer >= 1",
        ),
        ("Debug-PointMass-v0", {"max_steps_in_episode": 2.5}, "=2.5: must be an integer"),
        ("CartPole-v1", {"gravity": float("nan")}, "params.gravity=nan: must be a finite number"),
        ("Pendulum-v1", {"max_torque": float("inf")}, "params.max_torque=inf: must be a finite"),
        ("Asterix-MinAtar", {"ramping": 1}, r"params.ramping=1: must be a bool \(true or false\)"),
        ("Asterix-MinAtar", {"ramp_interval": True}, "params.ramp_interval=True: must be an int"),
        ("Acrobot-v1", {"available_torque": [1.0]}, r"must be an array of shape \[3\]"),
        ("Acrobot-v1", {"available_torque": 1.0}, r"must be an array of shape \[3\]"),
        ("CartPole-v1", {"gravity": [1.0, 2.0]}, r"gravity=\[1.0, 2.0\]: must be a scalar"),
        ("Grid-Ascii-v0", {"agent_pos": [1, 2]}, None),  # int32 array: fits (a floor cell)
        ("Grid-Ascii-v0", {"agent_pos": [1, 2**40]}, r"must fit int32"),
        ("StockTrading-v0", {"turbulence_threshold": float("nan")}, "inf allowed, not NaN"),
        # issue #13: nested params, any depth, with the env's own range checks
        ("Aerial-Hover-v0", {"quad": {"mass": -1}}, r"params.quad.mass=-1.0: must be > 0"),
        ("Aerial-Hover-v0", {"quad.mass": "x"}, r"params.quad.mass='x': must be a finite"),
        ("Aerial-Hover-v0", {"quad": 3}, r"params.quad=3: must be a mapping of QuadParams"),
        ("Grid-XLand-Trials-R1-9x9-v0", {"benchmark": {"goals": 1}}, "benchmark.goals=1: must be"),
    ],
)
def test_make__params_are_checked_against_the_default_field_types(env_id, params, message):
    """Every params field of every id (gymnax's too) takes only values of its default's kind
    (bool / integer / finite float) and shape; the message names the field and the rule."""
    if message is None:
        _, p = hordax.make(env_id, params=params)
        np.testing.assert_array_equal(p.agent_pos, params["agent_pos"])
        return
    with pytest.raises(ValueError, match=message):
        hordax.make(env_id, params=params)


def test_make__sets_nested_params_keeping_types_and_dtypes():
    """`{"quad": {"mass": ..}}` and `{"ctrl.max_tilt": ..}` set one nested field each; the
    rest keep their defaults; jax-array fields keep their dtype, Python scalars their type."""
    env, p = hordax.make(
        "Aerial-Hover-v0",
        params={"quad": {"mass": 0.3}, "ctrl.max_tilt": 1, "target_center": [0, 0, 3]},
    )
    d = env.default_params
    assert float(p.quad.mass) == pytest.approx(0.3) and p.quad.mass.dtype == d.quad.mass.dtype
    assert float(p.ctrl.max_tilt) == 1.0 and p.ctrl.max_tilt.dtype == d.ctrl.max_tilt.dtype
    assert p.target_center.dtype == d.target_center.dtype and p.target_center.tolist() == [0, 0, 3]
    np.testing.assert_array_equal(p.quad.inertia, d.quad.inertia)
    np.testing.assert_array_equal(p.ctrl.k_pos, d.ctrl.k_pos)
    # a whole group object works too, and its fields are checked like any other
    _, q = hordax.make("Aerial-Hover-v0", params={"quad": p.quad})
    assert float(q.quad.mass) == pytest.approx(0.3)
    _, c = hordax.make("CartPole-v1", gravity=12, max_steps_in_episode=np.int64(9))
    assert type(c.gravity) is float and c.gravity == 12.0 and type(c.max_steps_in_episode) is int


def test_make__invalid_params_value_names_field_and_range():
    with pytest.raises(ValueError, match=r"params.dt=-1.0: must be finite and > 0"):
        hordax.make("Debug-PointMass-v0", dt=-1.0)
    with pytest.raises(ValueError, match=r"params.max_steps_in_episode=0"):
        hordax.make("Debug-PointMass-v0", max_steps_in_episode=0)
    with pytest.raises(ValueError, match=r"num_agents=0"):
        hordax.make("Debug-MultiPointMass-v0", num_agents=0)


def test_register__rejects_duplicates_and_bad_entry_points():
    with pytest.raises(ValueError, match="already registered"):
        hordax.register("Debug-PointMass-v0", "hordax.envs.debug.point_mass:PointMass")
    with pytest.raises(ValueError, match="entry_point"):
        hordax.register("Debug-Broken-v0", "no_colon_here")


def test_import_hordax__imports_no_env_family():
    """Families load lazily: `import hordax` must not import hordax.envs.debug."""
    code = "import sys, hordax; print(any(m.startswith('hordax.envs.debug') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_constructor_accepts__counts_named_parameters_not_a_kwargs_catch_all(monkeypatch):
    """What ``hordax eval split=`` and the trading backtests ask before passing ``split`` /
    ``random_start``: a constructor that only forwards ``**kwargs`` does not count (one such
    grid env was taken for a trading env and handed ``random_start=``)."""
    from gymnax import registration

    from hordax.envs.registry import constructor_accepts

    assert constructor_accepts("StockTrading-v0", ["split", "random_start"])
    assert constructor_accepts("Grid-XLand-Trials-R1-9x9-v0", ["split"])
    assert not constructor_accepts("Grid-XLand-Trials-R1-9x9-v0", ["split", "random_start"])
    assert not constructor_accepts("CartPole-v1", ["split"])
    assert not constructor_accepts("Nope-v0", ["split"])

    def forwards_everything(**kwargs):
        raise AssertionError("not built")

    monkeypatch.setitem(registration._registry, "Debug-Forwarding-v0", forwards_everything)
    assert not constructor_accepts("Debug-Forwarding-v0", ["split"])
