"""Many ``hordax`` command lines through the real ``main`` in ONE fresh process.

For bad-input cases, which stop before any training: a process per case spends ~5 CPU s
importing jax, gymnax (which imports seaborn, scipy.stats and matplotlib) and hydra before
it prints its one line. hydra's main does not coexist with pytest's output capture, hence
a child process; each case's exit code and stderr are captured apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

_DRIVER = """
import contextlib, io, json, sys
from hordax.training.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    buf, code = io.StringIO(), 0
    with contextlib.redirect_stderr(buf):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code
    out.append({"code": code, "stderr": buf.getvalue()})
print(json.dumps(out))
"""


def run_main(argvs: list[list[str]], cwd, keep_xla_flags: bool = True, timeout: int = 300):
    """``[{"code": exit code, "stderr": text}]``, one per command line of ``argvs``."""
    env = dict(os.environ)
    if not keep_xla_flags:
        env.pop("XLA_FLAGS", None)  # the CLI's own device setup, as a user gets it
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(argvs)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) == len(argvs)
    return results
