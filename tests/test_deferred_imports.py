"""``hordax._deferred``: gymnax's render-only imports (seaborn, pyplot) are not loaded when
hordax starts, and load transparently when first used (gymnax's own Pong renderer, a user's
``import seaborn``, hordax's plots)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
import hordax.envs, gymnax
env, params = hordax.make("CartPole-v1")
print("start", "scipy.stats" in sys.modules, type(sys.modules["seaborn"]).__name__,
      type(sys.modules["matplotlib.pyplot"]).__name__)
from gymnax.environments.misc import pong
palette = pong.sns.color_palette("cubehelix", 3)  # gymnax Pong's renderer reads seaborn
import seaborn as sns
import matplotlib.pyplot as plt
fig = plt.figure()
print("used", len(palette), type(sys.modules["seaborn"]).__name__, sns is sys.modules["seaborn"],
      plt.figure is sys.modules["matplotlib.pyplot"].figure, hasattr(sns, "lineplot"),
      "scipy.stats" in sys.modules)
"""


@pytest.mark.timeout(120)
def test_render_only_modules_load_on_first_use():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=110, check=True
    ).stdout.split("\n")
    assert out[0] == "start False _Deferred _Deferred", out
    assert out[1] == "used 3 module True True True True", out
