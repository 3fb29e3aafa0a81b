"""Random-action env steps/s: hordax's aerial envs vs gym-pybullet-drones, in one run.

hordax side (in this process, one CPU device): ``Aerial-Hover-v0`` and
``Aerial-Navigate-v0`` (its default 32 x 48 depth camera) through
``benchmarks/aerial_throughput.py``'s program: ``jit(scan(vmap(env.step)))``, the plain
``env.step`` with gymnax's auto-reset (a fresh reset computed for every env on every step;
the batch-level amortized reset is not used), compile timed apart.

gym-pybullet-drones side (a subprocess with the other venv's python, see
``--pybullet-python``): ``HoverAviary`` (one Crazyflie, ``ActionType.RPM``), ``--pb-envs``
copies in a gymnasium ``SyncVectorEnv`` (sequential envs in one process, same-step
auto-reset), stepped with ``action_space.sample()`` for ``--pb-seconds``:

- ``kin``: the state observation, its defaults (30 Hz control, 8 PyBullet steps at 240 Hz);
- ``kin-1substep``: ``pyb_freq = ctrl_freq = 240`` (one physics step per env step, the
  cheapest step it offers);
- ``rgb``: ``ObservationType.RGB`` (obstacles on, PyBullet's TinyRenderer RGB + depth capture
  per drone), resolution set to hordax's 48 x 32 and ``ctrl_freq = 24`` so that a frame is
  rendered on every env step (its capture rate is fixed at 24 frames/s).

Rows alternate hordax and pybullet measurements ``--repeats`` times; medians are reported.

    python3 -m venv /tmp/pbd && /tmp/pbd/bin/pip install pybullet numpy scipy gymnasium \\
        pillow transforms3d && /tmp/pbd/bin/pip install --no-deps <gym-pybullet-drones source>
    PYTHONPATH=$PWD python benchmarks/aerial_vs_pybullet.py --pybullet-python /tmp/pbd/bin/python
    ... --json aerial_vs_pybullet.json

(gym-pybullet-drones 2.1.0 is not on the package index this machine reaches; it installs
from its source tree with ``--no-deps``, skipping stable-baselines3, which it only needs for
its learning examples.) Results go to ``benchmarks/RESULTS.md`` by hand, with the command.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

try:
    from hordax import strict_json
except ImportError:  # the pybullet worker runs in its own venv, without hordax
    import json as strict_json

# (hordax id, pybullet variant it is compared with)
PAIRS = [
    ("Aerial-Hover-v0", "kin"),
    ("Aerial-Hover-v0", "kin-1substep"),
    ("Aerial-Navigate-v0", "rgb"),
]


# --- the pybullet side (runs in the other venv; imports nothing from hordax or jax) ---------
def _pybullet_env(variant: str):
    import gymnasium as gym
    import numpy as np
    from gym_pybullet_drones.envs import HoverAviary
    from gym_pybullet_drones.utils.enums import ActionType, ObservationType

    if variant == "kin":
        return HoverAviary(obs=ObservationType.KIN, act=ActionType.RPM)
    if variant == "kin-1substep":
        return HoverAviary(obs=ObservationType.KIN, act=ActionType.RPM, pyb_freq=240, ctrl_freq=240)
    env = HoverAviary(obs=ObservationType.RGB, act=ActionType.RPM, ctrl_freq=24)
    # hordax's 32 x 48 frame (its default is 64 x 48); buffers and space follow the resolution
    env.IMG_RES = np.array([48, 32])
    shape = (env.NUM_DRONES, 32, 48)
    env.rgb, env.dep, env.seg = np.zeros((*shape, 4)), np.ones(shape), np.zeros(shape)
    # float32 space: its RGB space says uint8 but its observations are float32 arrays, which
    # gymnasium's vector env cannot copy into a uint8 buffer
    env.observation_space = gym.spaces.Box(0.0, 255.0, (*shape, 4), np.float32)
    assert env.IMG_CAPTURE_FREQ == env.PYB_STEPS_PER_CTRL  # a frame on every env step
    return env


def pybullet_worker(variant: str, num_envs: int, seconds: float) -> dict:
    """Steps/s of ``num_envs`` sequential HoverAviary envs with random actions."""
    import contextlib
    import io

    import gymnasium as gym

    with contextlib.redirect_stdout(io.StringIO()):  # its [INFO] lines per env
        envs = gym.vector.SyncVectorEnv(
            [lambda: _pybullet_env(variant)] * num_envs,
            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
        )
        envs.reset(seed=0)
        envs.action_space.seed(0)
        for _ in range(3):  # warm-up
            envs.step(envs.action_space.sample())
        steps, ends = 0, 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            _, _, term, trunc, _ = envs.step(envs.action_space.sample())
            steps += num_envs
            ends += int((term | trunc).sum())
        elapsed = time.perf_counter() - start
        envs.close()
    return {"sps": steps / elapsed, "steps": steps, "episode_ends": ends}


def run_worker(python: str, variant: str, num_envs: int, seconds: float) -> dict:
    cmd = [python, os.path.abspath(__file__), "--worker", variant]
    cmd += ["--pb-envs", str(num_envs), "--pb-seconds", str(seconds)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"pybullet worker {variant} failed:\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


# --- the driver (this venv: hordax) ---------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=["kin", "kin-1substep", "rgb"], help=argparse.SUPPRESS)
    ap.add_argument("--pybullet-python", default="/tmp/pbd/bin/python")
    ap.add_argument("--num-envs", type=int, default=4096, help="hordax envs")
    ap.add_argument("--steps", type=int, default=100, help="hordax Hover steps per timed run")
    ap.add_argument(
        "--navigate-steps", type=int, default=10, help="hordax Navigate steps per timed run"
    )
    ap.add_argument("--pb-envs", type=int, default=8, help="pybullet envs (SyncVectorEnv)")
    ap.add_argument("--pb-seconds", type=float, default=10.0, help="pybullet timed seconds")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    if args.worker:
        print(
            "RESULT "
            + strict_json.dumps(pybullet_worker(args.worker, args.pb_envs, args.pb_seconds))
        )
        return
    for key in ("num_envs", "steps", "navigate_steps", "pb_envs", "repeats"):
        if getattr(args, key) < 1:
            ap.error(f"--{key.replace('_', '-')}={getattr(args, key)}: must be an integer >= 1")
    if not os.path.isfile(args.pybullet_python):
        ap.error(f"--pybullet-python={args.pybullet_python}: no such file (see the docstring)")

    import jax

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from aerial_throughput import random_action_program

    programs, steps = {}, {}
    for env_id in dict.fromkeys(e for e, _ in PAIRS):
        steps[env_id] = args.navigate_steps if "Navigate" in env_id else args.steps
        run, carry = random_action_program(env_id, args.num_envs, steps[env_id])
        t = time.perf_counter()
        run = run.lower(carry).compile()
        compile_s = time.perf_counter() - t
        carry = jax.block_until_ready(run(carry))  # warm-up
        programs[env_id] = (run, carry, compile_s)
    hx: dict[str, list[float]] = {e: [] for e in programs}
    pb: dict[str, list[float]] = {v: [] for _, v in PAIRS}
    for _ in range(args.repeats):  # alternate the two sides, so load drift hits both
        for env_id, (run, carry, _) in programs.items():
            t = time.perf_counter()
            jax.block_until_ready(run(carry))
            hx[env_id].append(args.num_envs * steps[env_id] / (time.perf_counter() - t))
        for variant in pb:
            pb[variant].append(
                run_worker(args.pybullet_python, variant, args.pb_envs, args.pb_seconds)["sps"]
            )
    rows = []
    for env_id, variant in PAIRS:
        h, p = statistics.median(hx[env_id]), statistics.median(pb[variant])
        rows.append(
            {
                "hordax_env": env_id,
                "num_envs": args.num_envs,
                "hordax_steps": steps[env_id],
                "hordax_sps": round(h, 1),
                "hordax_compile_s": round(programs[env_id][2], 2),
                "pybullet": f"HoverAviary {variant}",
                "pb_envs": args.pb_envs,
                "pybullet_sps": round(p, 1),
                "ratio": round(h / p, 1),
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "jax": jax.__version__,
            }
        )
        print(strict_json.dumps(rows[-1]), flush=True)
    print(f"\nrandom-action steps/s, median of {args.repeats} alternating runs")
    print(f"{'hordax env':<20} {'envs':>6} {'hordax':>12} {'compile s':>9}  ", end="")
    print(f"{'gym-pybullet-drones':<26} {'pybullet':>9} {'ratio':>8}")
    for r in rows:
        print(
            f"{r['hordax_env']:<20} {r['num_envs']:>6} {r['hordax_sps']:>12,.0f} "
            f"{r['hordax_compile_s']:>9.1f}  {r['pybullet']:<26} {r['pybullet_sps']:>9,.0f} "
            f"{r['ratio']:>8,.0f}x"
        )
    if args.json:
        with open(args.json, "w") as f:
            strict_json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
