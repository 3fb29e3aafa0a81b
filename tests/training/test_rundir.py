"""The run directory helpers: what holds a run, what overwrite=true removes, whole-or-nothing
writes under SIGKILL, and the fault hook's counting (no JAX here: fast)."""

import os
import shutil
import signal
import subprocess
import sys

import pytest

from hordax.training.host.rundir import RunDirError, check_free, claim, clear, run_files

# Writes "new" over "old" with the fault hook armed halfway through the write.
_WRITER = """
import sys
from hordax.training.host.rundir import write_atomic
write_atomic(sys.argv[1], sys.argv[2])
"""


def _write_in_child(path, text, fault):
    env = {**os.environ, "HORDAX_FAULT_AT": fault} if fault else dict(os.environ)
    return subprocess.run(
        [sys.executable, "-c", _WRITER, str(path), text], env=env, timeout=60, check=False
    )


@pytest.mark.timeout(120)
def test_write_atomic__a_kill_mid_write_leaves_the_old_file(tmp_path):
    """SIGKILL halfway through the write: the old content stays whole; unarmed, the new
    content replaces it and no temporary file is left."""
    path = tmp_path / "summary.json"
    path.write_text('{"old": 1}')
    new = '{"new": 2, "padding": "' + "x" * 1000 + '"}'
    proc = _write_in_child(path, new, "write:summary.json")
    assert proc.returncode == -signal.SIGKILL
    assert path.read_text() == '{"old": 1}'
    assert (tmp_path / "summary.json.tmp").read_text() == new[: len(new) // 2]  # its half
    proc = _write_in_child(path, '{"new": 2}', "write:other.json")  # armed elsewhere
    assert proc.returncode == 0
    assert path.read_text() == '{"new": 2}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_write_atomic__flushes_the_file_then_its_directory(tmp_path, monkeypatch):
    """The file's bytes are fsynced before the rename and the directory after it (the
    rename is durable only once the directory's entries are on disk)."""
    import stat

    from hordax.training.host import rundir

    synced = []
    real = os.fsync
    monkeypatch.setattr(
        rundir.os, "fsync", lambda fd: (synced.append(stat.S_ISDIR(os.fstat(fd).st_mode)), real(fd))
    )
    rundir.write_atomic(str(tmp_path / "eval.json"), "{}")
    assert synced == [False, True] and (tmp_path / "eval.json").read_text() == "{}"


@pytest.mark.timeout(60)
def test_check_free_and_clear__only_run_files_count_and_go(tmp_path):
    """A directory with run files is refused (naming it and overwrite=true); clear removes
    the run's files, folders and leftovers, and keeps a user's file and hydra's folder."""
    check_free(str(tmp_path / "new"), overwrite=False)  # absent: free
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / ".hydra").mkdir()
    check_free(str(tmp_path), overwrite=False)  # no run files: free
    for name in ("config.yaml", "overrides.json", "metrics.jsonl", "summary.json.tmp"):
        (tmp_path / name).write_text("x")
    (tmp_path / "checkpoints" / "3").mkdir(parents=True)
    (tmp_path / "backtest_test").mkdir()
    assert run_files(str(tmp_path)) == ["metrics.jsonl", "checkpoints", "config.yaml",
                                        "overrides.json"]  # fmt: skip
    with pytest.raises(RunDirError) as exc:
        check_free(str(tmp_path), overwrite=False)
    assert str(exc.value) == (
        f"hydra.run.dir={tmp_path}: already holds a run (checkpoints, config.yaml, "
        "metrics.jsonl, overrides.json); pass overwrite=true to replace it, choose a new "
        f"directory, or continue it with resume={tmp_path}"
    )
    check_free(str(tmp_path), overwrite=True)
    clear(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".hydra", "notes.txt"]


@pytest.mark.timeout(60)
def test_clear__removes_the_replaced_runs_evaluations(tmp_path):
    """overwrite=true: ``hordax eval``'s files of the old run go with it (they stayed, and
    ``hordax suite`` reuses an ``eval.json`` with matching settings as the new run's)."""
    names = ["eval.json", "eval.1.json", "eval_test.json", "eval_test.2.json", "config.yaml"]
    for name in names:
        (tmp_path / name).write_text("{}")
    (tmp_path / "evaluation_notes.txt").write_text("mine")
    clear(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evaluation_notes.txt"]


@pytest.mark.timeout(60)
def test_claim__refuses_a_run_or_replaces_it_with_overwrite_then_writes_the_files(tmp_path):
    """What the host loop does for every fresh run: refused naming ``run_dir`` (nothing
    touched), or with overwrite the old run's files go before the new ones are written; an
    absent directory is created."""
    files = {"config.yaml": "new: 1\n", "overrides.json": "[]"}
    claim(str(tmp_path / "a" / "b"), overwrite=False, files=files)
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == sorted(files)
    (tmp_path / "summary.json").write_text("old")
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError, match=rf"^run_dir={tmp_path}: already holds a run"):
        claim(str(tmp_path), overwrite=False, files=files)
    assert (tmp_path / "summary.json").read_text() == "old"
    claim(str(tmp_path), overwrite=True, files=files)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a", *files, "notes.txt"])
    assert (tmp_path / "config.yaml").read_text() == "new: 1\n"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop_at", ["eval.json", "backtest_test", "summary.json.tmp"])
def test_clear__a_kill_midway_leaves_the_run_marked(tmp_path, monkeypatch, stop_at):
    """The run's identity (``overrides.json``, ``config.yaml``) goes last: a kill while the
    replaced run's evaluations, backtests or leftovers are removed leaves a directory that
    still holds a run (a fresh run without overwrite=true is refused there), never one that
    looks free beside the old agent's ``eval.json``, which ``hordax suite`` would reuse."""
    for name in ("config.yaml", "overrides.json", "summary.json", "eval.json",
                 "summary.json.tmp"):  # fmt: skip
        (tmp_path / name).write_text("{}")
    (tmp_path / "backtest_test").mkdir()

    def killed_at(path, *args, **kwargs):
        if os.path.basename(path) == stop_at:
            raise KeyboardInterrupt
        return real[os.path.isdir(path)](path, *args, **kwargs)

    real = {False: os.remove, True: shutil.rmtree}
    monkeypatch.setattr(os, "remove", killed_at)
    monkeypatch.setattr(shutil, "rmtree", killed_at)
    with pytest.raises(KeyboardInterrupt):
        clear(str(tmp_path))
    assert {"config.yaml", "overrides.json"} <= set(run_files(str(tmp_path)))
    with pytest.raises(RunDirError):
        check_free(str(tmp_path), overwrite=False)


@pytest.mark.timeout(60)
def test_claim__never_removes_what_no_hordax_run_wrote(tmp_path):
    """``hordax train hydra.run.dir=~/project overwrite=true`` in a folder holding a user's
    own ``wandb/`` logs, ``checkpoints/`` and ``config.yaml``: refused, naming them, whatever
    ``overwrite`` says (the refusal without it suggested overwrite=true, which deleted them
    all). A hordax run's files are known by its own (``overrides.json``, ``metrics.jsonl``,
    ``checkpoints/meta.json``, ...) or its config; an empty ``checkpoints/`` is no one's."""
    (tmp_path / "wandb" / "run-1").mkdir(parents=True)
    (tmp_path / "wandb" / "run-1" / "events").write_text("mine")
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "model.pt").write_text("mine")
    (tmp_path / "config.yaml").write_text("lr: 0.1\n")
    files = {"config.yaml": "new: 1\n", "overrides.json": "[]"}
    for overwrite in (False, True):
        with pytest.raises(RunDirError) as exc:
            claim(str(tmp_path), overwrite=overwrite, files=files)
        assert str(exc.value) == (
            f"run_dir={tmp_path}: holds checkpoints, config.yaml, wandb that no hordax run wrote"
            " (no overrides.json, metrics.jsonl, params.msgpack, summary.json or"
            " checkpoints/meta.json beside them); choose another directory"
        )
    assert (tmp_path / "checkpoints" / "model.pt").read_text() == "mine"
    assert (tmp_path / "config.yaml").read_text() == "lr: 0.1\n"
    assert (tmp_path / "wandb" / "run-1" / "events").is_file()
    # what a hordax run leaves when killed early is still its own, and replaced
    other = tmp_path / "killed"
    (other / "checkpoints").mkdir(parents=True)  # before meta.json: empty
    claim(str(other), overwrite=True, files=files)
    (other / "overrides.json").unlink()  # killed while writing overrides.json
    (other / "config.yaml").write_text("env: {id: CartPole-v1}\nagent: {}\ntrainer: {}\n")
    claim(str(other), overwrite=True, files=files)
    assert sorted(p.name for p in other.iterdir()) == sorted(files)


_COUNTER = """
from hordax.training.host.rundir import fault_point
for i in range(5):
    print(i, flush=True)
    fault_point("chunk")
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "spec,printed", [("chunk:3", "0\n1\n2\n"), ("chunk", "0\n"), ("x:1", None)]
)
def test_fault_point__kills_at_the_nth_time_of_its_phase(spec, printed):
    env = {**os.environ, "HORDAX_FAULT_AT": spec}
    proc = subprocess.run(
        [sys.executable, "-c", _COUNTER], env=env, capture_output=True, text=True, timeout=60
    )
    if printed is None:  # another phase: never fires
        assert proc.returncode == 0 and proc.stdout == "0\n1\n2\n3\n4\n"
    else:
        assert proc.returncode == -signal.SIGKILL and proc.stdout == printed


@pytest.mark.timeout(60)
def test_cli_early_check__refuses_before_hydra_only_when_a_run_would_start(tmp_path, capsys):
    """`hordax train hydra.run.dir=D` on a run: exit 2 before hydra writes D/.hydra; not
    with overwrite=true, resume=D, or a flag that only prints (--cfg job)."""
    from hordax.training.cli import check_run_dir_early

    (tmp_path / "overrides.json").write_text("[]")
    with pytest.raises(SystemExit) as exc:
        check_run_dir_early(["seed=1", f"hydra.run.dir={tmp_path}"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.startswith(
        f"hordax: error: hydra.run.dir={tmp_path}: already holds a run (overrides.json)"
    )
    for extra in (["overwrite=true"], [f"resume={tmp_path}"], ["--cfg", "job"]):
        check_run_dir_early([f"hydra.run.dir={tmp_path}", *extra])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["overrides.json"]


@pytest.mark.timeout(60)
def test_cli_early_check__a_directory_in_use_is_refused_before_hydra_writes_into_it(
    tmp_path, capsys
):
    """While a run trains in D (its lock), ``hordax train hydra.run.dir=D overwrite=true`` or
    ``resume=D`` stops before hydra rewrites the running run's ``D/.hydra/`` files (the host
    loop refused it only after that)."""
    import fcntl

    from hordax.training.cli import check_run_dir_early

    (tmp_path / "overrides.json").write_text("[]")
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for extra in (["overwrite=true"], [f"resume={tmp_path}"]):
            with pytest.raises(SystemExit) as exc:
                check_run_dir_early([f"hydra.run.dir={tmp_path}", *extra])
            assert exc.value.code == 2
            assert capsys.readouterr().err.startswith(
                f"hordax: error: hydra.run.dir={tmp_path}: in use by another process"
            )
    finally:
        os.close(fd)
    check_run_dir_early([f"hydra.run.dir={tmp_path}", "overwrite=true"])  # free again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["overrides.json"]
