#!/usr/bin/env bash
# The GPU items of issues #16 (driving) and #17 (manipulation), one PART per device call,
# each sized to end inside one call's 10 minutes (a session has 15 minutes of device time,
# the machine's start included), so a session lent a GPU spends none of it preparing:
#
#   here, once:   bash benchmarks/gpu_wheels.sh          # what the device image lacks -> .whl/
#   device call:  run(command="bash benchmarks/gpu_drive_manip.sh throughput",
#                     carry=[".whl"], timeout_s=600)
#
# PART:
#   throughput  random-action throughput of both families (<= 9 min): Drive-USAIntersection-v0
#               agent-steps/s vs envs x agents (GPUDrive's observation sizes; issue #16's
#               "largest batch that fits" against GPUDrive's ~1M agent-steps/s), and each
#               manipulation task's env steps/s beside MuJoCo C's mujoco.rollout on all the
#               machine's cores (issue #17)
#   drive       IPPO on real maps (the tuned config of RESULTS 13h at 1,024 envs x 64 steps
#               and STEPS env steps per seed), then `hordax eval` on the held-out map and the
#               training maps' fresh episodes
#   sphere      PPO on Manip-HandSphereRotate-v0 (its tuned config), then `hordax eval`
#               (rotation_speed rad/s, drop)
#   cube        PPO on Manip-HandCubeRotateZ-v0 (its tuned config), then `hordax eval`
#
# A learning part stops training at BUDGET_S seconds (default 420; `timeout` then the run's
# own last checkpoint): size STEPS (env steps per seed) so that it finishes, from the
# throughput part's figures. Everything it prints goes to $OUT/log.txt; results come back as
# at most 8 files (the device tool's limit): log, CSVs, PNGs, eval JSONs.
# SMOKE=1 runs every part at toy sizes (on a CPU too: checks the script, not the figures).
set -uo pipefail
PART=${1:?usage: gpu_drive_manip.sh throughput|drive|sphere|cube}
OUT=${OUT:-benchmarks/out}; mkdir -p "$OUT"
SMOKE=${SMOKE:-0}
BUDGET_S=${BUDGET_S:-420}
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
fi
export PYTHONUNBUFFERED=1 MUJOCO_GL=${MUJOCO_GL:-egl}
exec > >(tee -a "$OUT/log.txt") 2>&1
hordax() { python3 -m hordax.training.cli "$@"; }
nvidia-smi -L 2>/dev/null || echo "no nvidia-smi: $(uname -m), $(nproc) cores"
python3 -c "import jax, flax, optax, mujoco; print('jax', jax.__version__, 'flax', \
flax.__version__, 'optax', optax.__version__, 'mujoco', mujoco.__version__, jax.devices())"
echo "== part $PART, SMOKE=$SMOKE, BUDGET_S=$BUDGET_S, $(date -u +%FT%TZ)"

# learn NAME EVAL_ARGS -- TRAIN_OVERRIDES: train (time-boxed), then evaluate what finished
learn() {
  local name=$1 evals=$2; shift 2
  local dir=runs/gpu_$name
  local t0=$SECONDS
  timeout -s INT "$BUDGET_S" python3 -m hordax.training.cli train "$@" \
    hydra.run.dir="$dir" overwrite=true
  echo "== $name: training exited $? after $((SECONDS - t0)) s"
  if [ ! -f "$dir/params.msgpack" ]; then
    echo "== $name: no params.msgpack (not finished within BUDGET_S=$BUDGET_S): lower STEPS"
    return 1
  fi
  tail -n 3 "$dir/metrics.jsonl"
  for split in $evals; do
    if [ "$split" = none ]; then
      hordax eval "$dir" episodes="$EPISODES" out="$OUT/eval_$name.json"
    else
      hordax eval "$dir" split="$split" episodes="$EPISODES" out="$OUT/eval_${name}_$split.json"
    fi
  done
}

case $PART in
throughput)
  # per-step time limits sum to ~530 s: a step cut short loses only its unfinished sizes
  # (manip_throughput.py writes its CSV after each size); each size is its own compile
  if [ "$SMOKE" = 1 ]; then envs=(8); agents=(2); menvs=(8); msteps=5; reps=1; lim=(600 600 600)
  else envs=(1024 16384); agents=(8 32); menvs=(1024 8192); msteps=100; reps=3; lim=(75 80 110)
  fi
  for a in "${agents[@]}"; do
    timeout "${lim[0]}" python3 benchmarks/driving_throughput.py --no-peer --envs "${envs[@]}" \
      --agents "$a" --steps 50 --repeats "$reps" --out "$OUT/driving_gpu_a$a"
  done
  for id in Manip-Reach-v0 Manip-Push-v0 Manip-HandSphereRotate-v0 Manip-HandCubeRotateZ-v0; do
    case $id in Manip-Hand*) t=${lim[2]} ;; *) t=${lim[1]} ;; esac
    timeout "$t" python3 benchmarks/manip_throughput.py --env "$id" --num-envs "${menvs[@]}" \
      --steps "$msteps" --repeats "$reps" --csv "$OUT/manip_gpu.csv" --png "$OUT/manip_gpu.png"
  done
  ;;
drive)
  if [ "$SMOKE" = 1 ]; then
    size=(trainer.num_envs=4 trainer.rollout_length=8 trainer.total_env_steps=64
          trainer.num_chunks=1 env.kwargs.max_partners=4 env.kwargs.max_road_points=16
          'agent.network.hidden_sizes=[16]' population.size=1); EPISODES=4
  else
    size=(trainer.num_envs=1024 trainer.rollout_length=64 "trainer.total_env_steps=${STEPS:-50000000}"
          trainer.num_chunks=10 population.size=3); EPISODES=1024
  fi
  # the tuned CPU config (hordax/configs/tuned/Drive-Maps-v0_ippo.yaml: five training maps,
  # rounD Kackertstrasse held out; RESULTS 13h) at GPU batch sizes and budgets
  learn drive "test train" env=Drive-Maps-v0 agent=ippo eval.episodes=0 "${size[@]}"
  ;;
sphere | cube)
  id=$([ "$PART" = sphere ] && echo Manip-HandSphereRotate-v0 || echo Manip-HandCubeRotateZ-v0)
  if [ "$SMOKE" = 1 ]; then
    size=(trainer.num_envs=4 trainer.rollout_length=4 trainer.total_env_steps=16
          trainer.num_chunks=1 agent.num_minibatches=1 'agent.network.hidden_sizes=[16]'); EPISODES=2
  else
    size=("trainer.total_env_steps=${STEPS:-50000000}"); EPISODES=512
  fi
  learn "$PART" none env="$id" eval.episodes=0 "${size[@]}"
  ;;
*) echo "unknown PART=$PART (throughput|drive|sphere|cube)"; exit 2 ;;
esac
echo "== done $(date -u +%FT%TZ); files in $OUT:"; ls -la "$OUT"
