"""The README's quick start (examples/quickstart.py) runs and learns."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quickstart__runs_and_trains():
    """The quick start prints 4096-env shapes and a learned CartPole return above 150."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "(4096, 4) (4096, 4)" in proc.stdout
    ret = float(re.search(r"last 10 updates: ([\d.]+)", proc.stdout).group(1))
    assert ret > 150, proc.stdout


def test_readme__quick_start_matches_example():
    """The README's Python quick start and examples/quickstart.py use the same calls."""
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / "examples" / "quickstart.py").read_text()
    for call in (
        'hordax.make("CartPole-v1")',
        "jax.vmap(env.reset, in_axes=(0, None))",
        "make_train(OnPolicyTrainerConfig(total_env_steps=200_000), PPOConfig(), env, params)",
        "jax.jit(jax.vmap(train))",
    ):
        assert call in readme and call in example, call
