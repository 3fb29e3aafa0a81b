"""Test setup: 8 host devices for sharding tests must be requested before jax is imported;
optionally one persistent compilation cache per ``pytest`` run, shared by its processes;
compiled programs are released before the process runs out of memory mappings.
"""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_MODE", "offline")
# A test process or `hordax` subprocess killed by a fatal signal prints its Python stacks on
# stderr (which the tests show): a rare SIGSEGV of a subprocess was seen twice, without one.
os.environ.setdefault("PYTHONFAULTHANDLER", "1")
# MuJoCo fixes its OpenGL backend at its first import, which a test module may do before
# hordax.envs.manipulation sets the same headless default (EGL) for its renderer.
if not os.environ.get("MUJOCO_GL") and not os.environ.get("DISPLAY"):
    os.environ["MUJOCO_GL"] = "egl"


def _share_a_compilation_cache() -> None:
    """A fresh, empty JAX persistent compilation cache for this ``pytest`` run, removed at
    exit, and the settings that make every compiled program go into it. Environment
    variables, so the xdist workers (started after this module is imported in the main
    process) and every ``hordax`` subprocess read and write the same directory: a program
    compiled by one test (a resumed run's, a repeated tiny CLI config's, an env's in another
    module) is loaded by the next one instead of compiled again. The key covers the program,
    the compile options (``jax_disable_most_optimizations`` included), the XLA flags, the
    devices and jax's version, so a hit is the very executable a compile would give.

    Nothing from an earlier run is read (CI starts from nothing too). A directory given in
    ``JAX_COMPILATION_CACHE_DIR`` is used instead (and kept).

    Off unless ``HORDAX_TEST_COMPILATION_CACHE=1``: it saved 9 % of the CPU time of the
    CLI-heavy training tests and nothing on the contract suite (benchmarks/RESULTS.md section
    21), and an earlier fresh-clone run with a per-session cache had a subprocess die of
    SIGSEGV, which was neither reproduced nor ruled out since; jax also writes cache entries
    without a lock (a concurrent reader warns on stderr, which CLI tests compare). Loading a
    cached XLA:CPU program logs a spurious machine-feature mismatch (the tuning flags
    ``+prefer-no-gather``/``+prefer-no-scatter`` are not CPU features) on stderr, which CLI
    tests compare line by line: XLA's C++ log is kept to fatal errors while the cache is on.
    """
    if os.environ.get("HORDAX_TEST_COMPILATION_CACHE", "") != "1":
        return
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        cache = tempfile.mkdtemp(prefix="hordax-test-jax-cache-")
        atexit.register(shutil.rmtree, cache, ignore_errors=True)
        os.environ["JAX_COMPILATION_CACHE_DIR"] = cache
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


_share_a_compilation_cache()


import gc  # noqa: E402

import jax  # noqa: E402
import pytest  # noqa: E402


def _map_limit() -> int | None:
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):  # not Linux
        return None


def _map_count() -> int:
    with open("/proc/self/maps", "rb") as f:
        return f.read().count(b"\n")


#: Release compiled programs above this many memory mappings (60 % of the kernel's limit).
_RELEASE_AT = None if _map_limit() is None else int(0.6 * _map_limit())


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    """Every XLA:CPU executable holds ~7-25 memory mappings (its code and data sections) for
    as long as JAX caches it. A test process that compiles thousands of programs (the env
    contract suite: ~10 programs per check per env) reaches Linux's ``vm.max_map_count``
    (65,530 by default); XLA's next compile then dies of SIGSEGV or SIGABRT. So, near that
    limit, drop JAX's caches (the executables go with them, and later tests recompile what
    they need); measured: 100 small programs hold ~2,170 mappings, 72 after clearing."""
    yield
    if _RELEASE_AT is not None and _map_count() > _RELEASE_AT:
        jax.clear_caches()
        gc.collect()


#: Test directories and modules that compile without XLA's optimizations: their tests compile
#: many small programs once each and run them briefly, so optimizing costs more compile time
#: than it saves at run time (measured in one process each, load ~9-11: tests/envs/mpe 860 s
#: -> 492 s, tests/envs/aerial 582 s -> 295 s, tests/envs/grid 456 s -> 161 s; the other
#: directories: benchmarks/RESULTS.md section 21; every test passing both ways); the properties they
#: check do not depend on it (tolerances cover float reassociation; where runs are compared
#: bit for bit, every run of the comparison compiles the same way).
#: Not for learning tests or pinned figures: those were taken with optimizations on
#: (:data:`OPTIMIZED`, and the training modules not named here).
FAST_COMPILE_DIRS = (
    "tests/contract/",
    "tests/envs/",
    # training modules that compare runs with runs (bit for bit or within a tolerance), no
    # learning threshold or pinned figure: 621 -> 413 CPU s for these six (load ~9-11)
    "tests/training/test_checkpoint.py",
    "tests/training/test_curriculum.py",
    "tests/training/test_multiprocess.py",
    "tests/training/test_rundir.py",
    "tests/training/test_sharding.py",
    "tests/training/test_trainer_contract.py",
    # and these, which hold neither a learning threshold nor a pinned figure nor a check of
    # the optimized program's HLO (tests/agents/test_networks.py keeps its optimizations;
    # the learning runs of PQL, PQN and IPPO moved to tests/training/test_trainer_learning.py
    # for this)
    "tests/agents/test_ppo.py",
    "tests/agents/test_pqn.py",
    "tests/training/test_backtest.py",
    "tests/training/test_bad_input_table.py",
    "tests/training/test_bench.py",
    "tests/training/test_bootstrap_truncation.py",
    "tests/training/test_cli_flags.py",
    "tests/training/test_ensemble.py",
    "tests/training/test_estimators.py",
    "tests/training/test_eval_policies.py",
    "tests/training/test_mixed_ensemble.py",
    "tests/training/test_multi_agent.py",
    "tests/training/test_off_policy.py",
    "tests/training/test_on_policy.py",
    "tests/training/test_pql_parallel.py",
    "tests/training/test_suite.py",
)
#: Modules under :data:`FAST_COMPILE_DIRS` that keep XLA's optimizations: learning tests.
OPTIMIZED = (
    "tests/envs/driving/test_learning.py",
    "tests/envs/manipulation/test_manip_learning.py",
)
#: The environment variable that carries the option to subprocesses (the ``hordax`` CLI).
_NO_OPT_ENV = "JAX_DISABLE_MOST_OPTIMIZATIONS"


def fast_compiles(path: str) -> bool:
    """Whether the test module at ``path`` (a node id, ``/``-separated) compiles fast."""
    return path.startswith(FAST_COMPILE_DIRS) and not path.startswith(OPTIMIZED)


@pytest.fixture(scope="module", autouse=True)
def _fast_compiles(request: pytest.FixtureRequest, monkeypatch_module: pytest.MonkeyPatch):
    """Per module of :data:`FAST_COMPILE_DIRS`: ``jax_disable_most_optimizations`` on while it
    runs (in this process and, through the environment, in the subprocesses it starts), then
    restored. Every compiled program is dropped before and after: jit's caches do not key on
    this option, so a program compiled with the other setting would be reused and change
    float results (the pinned training checksums did, when the fixture once outlived its
    directory)."""
    if not fast_compiles(request.node.nodeid.replace(os.sep, "/")):
        yield
        return
    before = jax.config.read("jax_disable_most_optimizations")
    jax.clear_caches()
    jax.config.update("jax_disable_most_optimizations", True)
    monkeypatch_module.setenv(_NO_OPT_ENV, "1")
    yield
    monkeypatch_module.undo()
    jax.config.update("jax_disable_most_optimizations", before)
    jax.clear_caches()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


#: The env contract suite: its tests run in groups of one env id each (see below).
CONTRACT_FILE = "tests/contract/test_env_contract.py"


def _env_id(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("env_id") if callspec is not None else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Inside the env contract suite, the checks of one env run one after another: they read
    one compiled program (``hordax.testing``), whose outputs are kept for the newest few
    envs only. (How tests are spread over workers: :func:`pytest_xdist_make_scheduler`.)

    Every test of the MJX manipulation family (its files, its env ids in the contract, its
    example) gets the ``mjx`` mark: CI runs ``-m "not (slow and mjx)"`` (README).
    """
    for item in items:
        if "manip" in item.nodeid.lower():
            item.add_marker(pytest.mark.mjx)
    first = next((i for i, it in enumerate(items) if it.nodeid.startswith(CONTRACT_FILE)), None)
    if first is not None:
        last = max(i for i, it in enumerate(items) if it.nodeid.startswith(CONTRACT_FILE))
        block = items[first : last + 1]
        if all(it.nodeid.startswith(CONTRACT_FILE) for it in block):
            order = {
                env: n for n, env in enumerate(dict.fromkeys(filter(None, map(_env_id, block))))
            }
            block.sort(key=lambda it: order.get(_env_id(it), len(order)))  # stable
            items[first : last + 1] = block


def worker_scope(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, except in the env contract suite, where
    each env id (the test's parameter) is one unit, so the contract's env classes spread over
    every worker while one env's checks share a worker (and the contract parts it
    computed). Read from the node id alone (all the xdist controller sees)."""
    path = nodeid.split("::")[0]
    if path == CONTRACT_FILE and nodeid.endswith("]") and "[" in nodeid:
        return "contract:" + nodeid[nodeid.index("[") + 1 : -1]
    return path


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """How the suite is spread over xdist workers (pyproject: ``-n auto --dist loadgroup``):
    whole units of :func:`worker_scope` per worker, so a file's module fixtures and compiled
    programs are built once.

    xdist's own ``loadgroup`` reads ``xdist_group`` marks through a node-id suffix that
    pytest 9 no longer carries (``item._nodeid``): under pytest 9.2 every test was its own
    unit, the checks of one env ran on both workers and each computed the contract parts
    (found in stop 29: benchmarks/RESULTS.md section 25). This scheduler needs no marks.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _ByFileAndEnv(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_scope(nodeid)

    return _ByFileAndEnv(config, log)
