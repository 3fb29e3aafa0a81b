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


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "override,message",
    [
        ("+trainer.num_envz=3", "trainer.num_envz: unknown key 'trainer.num_envz'; allowed"),
        ("+foo=1", "foo: unknown key 'foo'; allowed keys here: ['agent', 'checkpoint',"),
        ("+agent.network.hidden_size=[3]", "unknown key 'agent.network.hidden_size'"),
    ],
)
def test_check_config__a_key_added_with_plus_is_refused(capsys, override, message):
    """Hydra's ``+key=value`` adds a key even to a typed config, and ``OmegaConf.to_object``
    kept it as a stray attribute nothing read: ``+trainer.num_envz=3`` trained silently with
    the default num_envs. Now one line naming the key, exit 2; open dicts still take keys."""
    dict_cfg = cli._compose_train([override], [])
    with pytest.raises(SystemExit) as exc:
        cli.check_config("train", dict_cfg)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hordax: error: ") and message in err and len(err.splitlines()) == 1
    ok = cli._compose_train(["+env.params.gravity=12.0", "+population.hparams.gamma=[0.9]"], [])
    assert cli._added_key(ok) is None


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "overrides,start",
    [
        (
            ["population.size=2", "population.hparams.learning_rate=1e-4"],
            "population.hparams.learning_rate=1e-4: Invalid value assigned",
        ),
        (["agent.network.foo.bar=3"], "agent.network.foo.bar=3: unknown key 'agent.network.foo'"),
    ],
)
def test_precheck__names_the_override_of_a_nested_or_relative_key(capsys, overrides, start):
    """Hydra reports a key inside an open dict relative (``learning_rate``) and an unknown
    group whole (``agent.network.foo``): the line starts with the user's override (it
    started with the bare key, without the value)."""
    cli._register_schemas()
    cfg_dir = cli.config_dir()
    with pytest.raises(SystemExit):  # as main() passes them: open dicts' keys get ++
        cli.precheck_overrides(cli.rewrite_env_override(overrides, cfg_dir), cfg_dir)
    assert capsys.readouterr().err.startswith(f"hordax: error: {start}")


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "override",
    [
        "agent.team_ent_coef.listener=0.1",
        "agent.team_ent_coef={listener: 0.1}",
    ],
)
def test_rewrite__per_team_dicts_take_new_keys(override):
    """``agent.team_ent_coef`` / ``agent.team_hidden_sizes`` (docs/training.md) are open
    dicts: ``agent=ippo agent.team_ent_coef.listener=0.1`` was refused ("unknown key
    'agent.team_ent_coef.listener'; allowed keys here: []"), in both spellings."""
    cli._register_schemas()
    args = ["agent=ippo", "env=MPE-SimpleSpeakerListener-v0", override,
            "agent.team_hidden_sizes.speaker=[32]"]  # fmt: skip
    cfg, _ = cli.check_config("train", cli._compose_train(args, []))
    assert cfg.agent.team_ent_coef == {"listener": 0.1}
    assert cfg.agent.team_hidden_sizes == {"speaker": [32]}


def test_sweep_variants__each_value_of_each_sweep_once():
    args = ["-m", "seed=0,1", "agent.network.hidden_sizes=[32,32]", "trainer.num_envs=range(4,7,2)"]
    assert cli.sweep_variants(args) == [
        ["seed=0", "agent.network.hidden_sizes=[32,32]", "trainer.num_envs=4"],
        ["seed=1", "agent.network.hidden_sizes=[32,32]", "trainer.num_envs=4"],
        ["seed=0", "agent.network.hidden_sizes=[32,32]", "trainer.num_envs=6"],
    ]
    assert cli.sweep_variants(["seed=0,1"]) == [["seed=0,1"]]  # no -m: as given


@pytest.mark.timeout(120)
def test_precheck__a_bad_override_under_multirun_is_one_line(capsys):
    """``hordax train -m seed=0,1 trainer.num_envz=3`` got hydra's multi-line report (exit
    1, advising ``+trainer.num_envz=3``); each sweep variant is now pre-checked."""
    cli._register_schemas()
    cfg_dir = cli.config_dir()
    with pytest.raises(SystemExit) as exc:
        for variant in cli.sweep_variants(["-m", "seed=0,1", "trainer.num_envz=3"]):
            cli.precheck_overrides(variant, cfg_dir)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hordax: error: trainer.num_envz=3: unknown key") and "\n" not in err
    with pytest.raises(SystemExit):  # a bad value in a sweep's second entry
        for variant in cli.sweep_variants(["-m", "agent=ppo,nope"]):
            cli.precheck_overrides(variant, cfg_dir)
    assert "agent=nope: allowed values are" in capsys.readouterr().err


@pytest.mark.timeout(60)
def test_resume_overrides__another_run_directory_is_refused_not_ignored(tmp_path, capsys):
    """``hordax train resume=D hydra.run.dir=E``: the resumed run continues in D, so E was
    silently dropped (a user expecting the continued run in E found nothing there); refused
    naming both, as ``run_dir=E`` already is. The same directory spelled otherwise is fine."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "overrides.json").write_text('["seed=3"]')
    with pytest.raises(SystemExit) as exc:
        cli.resume_overrides([f"resume={run}", f"hydra.run.dir={tmp_path / 'other'}"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == (
        f"hordax: error: resume={run}: conflicts with hydra.run.dir={tmp_path / 'other'} (a"
        " resumed run continues in its own directory: give one of them)"
    )
    same = cli.resume_overrides([f"resume={run}", f"hydra.run.dir={run}/"])
    assert same == ["seed=3", f"resume={run}", f"hydra.run.dir={run}/", f"hydra.run.dir={run}"]
