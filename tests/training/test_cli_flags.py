"""Hydra's own flags pass through the CLI's override pre-check (no jax work here)."""

from __future__ import annotations

import pytest

from hordax.training import cli


def test_strip_flags__drops_flags_and_their_values():
    args = ["--cfg", "job", "env=Pendulum-v1", "-p", "agent", "--multirun", "seed=3"]
    assert cli._strip_flags(args) == ["env=Pendulum-v1", "seed=3"]


@pytest.mark.timeout(120)
def test_precheck__accepts_cfg_job_and_still_names_a_bad_override(capsys):
    cli._register_schemas()  # as main() does before composing
    cfg_dir = cli.config_dir()
    cli.precheck_overrides(["--cfg", "job", "env=Pendulum-v1", "agent=pql"], cfg_dir)
    with pytest.raises(SystemExit):
        cli.precheck_overrides(["--cfg", "job", "agent=nope"], cfg_dir)
    assert "agent=nope: allowed values are" in capsys.readouterr().err
