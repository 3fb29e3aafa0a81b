"""A built wheel carries everything the CLI needs (the hydra configs are package data).

The wheel is built offline from a copy of this tree (``pip wheel --no-build-isolation``:
setuptools>=77 comes with the ``dev`` extra), installed with no index into a fresh venv that
sees the already-installed dependencies through a ``.pth`` file, and ``hordax train`` runs
from a folder outside the repository with no ``PYTHONPATH`` or ``HORDAX_CONFIG_DIR``.
"""

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd, **kwargs):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{cmd}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the tree (the build's ``build/`` and ``*.egg-info`` stay out
    of the checkout)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "hordax", src / "hordax", ignore=ignore)
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "--check-build-dependencies", "-q", "-w", str(dist), str(src)],
        timeout=240,
    )  # fmt: skip
    (wheel,) = dist.glob("hordax-*.whl")
    return wheel


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_wheel__carries_the_configs_and_its_cli_trains_outside_the_repo(tmp_path):
    """Every yaml under hordax/configs/ (nested groups, tuned/) is in the wheel; the
    installed ``hordax`` imports from the venv, finds its configs there and prints the run's
    JSON summary line."""
    wheel = _build_wheel(tmp_path)
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("hordax/configs/")}
    in_tree = {p.relative_to(ROOT).as_posix() for p in (ROOT / "hordax/configs").rglob("*.yaml")}
    assert shipped == in_tree
    assert {"hordax/configs/train.yaml", "hordax/configs/tuned/Pendulum-v1_ppo.yaml"} <= shipped
    names = set(zipfile.ZipFile(wheel).namelist())
    assets = "hordax/envs/manipulation/assets"
    assert {
        f"{assets}/panda.xml",
        f"{assets}/panda_push.xml",
        f"{assets}/LICENSE-robosuite",
    } <= names  # MJCF + licence
    hand = ROOT / assets / "shadow_hand"  # the Shadow Hand scenes, model, meshes, licence
    in_tree = {p.relative_to(ROOT).as_posix() for p in hand.rglob("*") if p.is_file()}
    assert f"{assets}/shadow_hand/LICENSE-shadow_hand" in in_tree and in_tree <= names

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=120)
    py = venv / "bin" / "python"
    _run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
         "--no-index", "-q", str(wheel)],
        timeout=240,
    )  # fmt: skip
    # Only now (after the install, so pip never sees the checkout's own hordax metadata):
    # the venv sees the dependencies installed here. Lines of a .pth are plain path entries
    # (the .pth files in them, e.g. an editable hordax's finder, are not processed).
    venv_site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    deps = dict.fromkeys([*site.getsitepackages(), sysconfig.get_path("purelib")])
    (Path(venv_site.stdout.strip()) / "hordax_test_deps.pth").write_text("\n".join(deps) + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HORDAX_CONFIG_DIR")}
    env.pop("XLA_FLAGS", None)  # the CLI's own device setup, as a user gets it
    where = _run(
        [
            str(py),
            "-c",
            "import hordax.training.cli as c; print(c.__file__); print(c.config_dir())",
        ],
        cwd=elsewhere,
        env=env,
        timeout=120,
    ).stdout.split()
    assert all(Path(p).is_relative_to(venv) for p in where), where

    proc = _run(
        [str(venv / "bin" / "hordax"), "train", "env=CartPole-v1", "trainer.num_envs=4",
         "trainer.total_env_steps=2048", "trainer.num_chunks=1", "progress=false", "seed=1"],
        cwd=elsewhere,
        env=env,
        timeout=300,
    )  # fmt: skip
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["env"] == "CartPole-v1" and summary["agent"] == "ppo"
    assert summary["env_steps"] == 2048 and summary["seed"] == 1
    run_dir = Path(summary["run_dir"])
    assert run_dir.is_relative_to(elsewhere) and (run_dir / "summary.json").is_file()


def test_config_dir__a_folder_without_train_yaml_is_named(tmp_path, monkeypatch, capsys):
    """``HORDAX_CONFIG_DIR`` naming a folder without ``train.yaml``: one line, exit code 2."""
    from hordax.training.cli import config_dir

    monkeypatch.setenv("HORDAX_CONFIG_DIR", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        config_dir()
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        f"hordax: error: HORDAX_CONFIG_DIR={tmp_path}: no train.yaml there "
        "(it must be a folder of hordax's hydra configs)\n"
    )
    monkeypatch.delenv("HORDAX_CONFIG_DIR")
    assert (config_dir() / "tuned" / "CartPole-v1_pqn.yaml").is_file()
