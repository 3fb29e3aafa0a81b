#!/usr/bin/env bash
# Run HERE (not on the device), once per checkout: the Python packages that hordax needs and
# the device image lacks (see ../.library/device/KINDS.md: it has jax, flax, optax, chex,
# orbax-checkpoint, scipy, matplotlib, imageio, but not these), as CPython 3.12 x86_64 wheels
# in .whl/ (git-ignored), ~37 MB. A device call then names ".whl" in carry, and
# benchmarks/gpu_drive_manip.sh (or gpu_suite.sh) installs them with --no-index.
# antlr4-python3-runtime 4.9.3 (hydra-core's pin) ships as a source archive only: built here.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${plat[@]}" -d .whl \
  mujoco==3.17.0 mujoco-mjx==3.17.0 glfw==2.11.0 trimesh==5.2.0 \
  gymnax==1.0.1 gymnasium==1.3.0 farama-notifications==0.0.4 \
  hydra-core==1.3.2 omegaconf==2.3.1 shapely==2.2.0
python3 -m pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3
ls -la .whl && du -sh .whl
