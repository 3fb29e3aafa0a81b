#!/usr/bin/env bash
# The GPU measurements in benchmarks/RESULTS.md, as run on a lent H100 (no network there):
# wheels for what its image lacks (gymnax, gymnasium, hydra-core, omegaconf, antlr4, rejax,
# distrax, tfp-nightly, dm-tree, gast, decorator, xminigrid) travel in .whl/; hordax runs from the
# checkout (PYTHONPATH). Each step tees its output under $OUT (default: benchmarks/out).
set -uo pipefail
OUT=${OUT:-benchmarks/out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1
nvidia-smi -L | tee "$OUT/device.txt"
python3 -c "import jax, flax, optax; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, jax.devices())" | tee -a "$OUT/device.txt"
step() { local name=$1; shift; echo "== $name: $*"; "$@" 2>&1 | grep -v '^\[' | tee "$OUT/$name.txt"; }
step ppo_vs_rejax_4envs python3 benchmarks/ppo_vs_rejax.py --seeds 3 --json "$OUT/ppo_vs_rejax_4envs.json"
step ppo_vs_rejax_256envs python3 benchmarks/ppo_vs_rejax.py --seeds 3 --num-envs 256 \
  --num-minibatches 32 --total-steps 3000000 --chunks 30
step wrapper_overhead python3 benchmarks/wrapper_overhead.py --num-envs 1024 16384 131072 \
  --steps 5000 --out "$OUT/wrapper_overhead.json"
step bench_random python3 -m hordax.training.cli bench -m benchmark=scaling \
  num_envs=1024,16384,131072 steps=5000 repeats=7
step bench_train python3 -m hordax.training.cli bench -m benchmark=train_scaling \
  num_envs=256,4096,65536 steps=256
step bench_families python3 -m hordax.training.cli bench -m \
  env=Grid-DoorKey-8x8-v0,Grid-XLand-R1-9x9-v0,Aerial-Hover-v0,Aerial-Navigate-v0,StockTrading-v0,CryptoTrading-v0 \
  num_envs=1024,16384 steps=500 repeats=3
step grid_vs_peers python3 benchmarks/grid_vs_peers.py --num-envs 16384 65536 131072 \
  --out "$OUT/grid_vs_peers_gpu.json"
step trading_throughput python3 benchmarks/trading_throughput.py --num-envs 1 2048
step reset_cost python3 benchmarks/reset_cost.py --num-envs 1024 16384 --json "$OUT/reset_cost.json"
step pql_vs_ppo python3 benchmarks/pql_vs_ppo.py --out "$OUT/pql_vs_ppo"
cp bench/multirun-*/results.csv "$OUT/" 2>/dev/null; ls bench
for d in bench/multirun-*; do cp "$d/results.csv" "$OUT/$(basename "$d").csv"; cp "$d/results.png" "$OUT/$(basename "$d").png"; done
