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


def test_make__unknown_params_field_lists_allowed():
    with pytest.raises(ValueError, match=r"unknown params field\(s\) \['gravty'\].*gravity"):
        hordax.make("CartPole-v1", gravty=1.0)


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
