"""Evaluation of a saved agent: ``hordax eval RUN_DIR`` and the train-time evaluation hook.

``evaluate`` runs ``episodes`` fresh episodes of every member in one jitted batch (keys from
the evaluation seed space, :mod:`hordax.training.evaluation.episodes`), deterministic by
default, and returns the mean and 95 % Student-t interval of the return, the episode length
and every task metric (``info["metrics"]`` on each episode's last step). A population
evaluates each member on the same episodes (``members``); the top-level figures pool them.

Held-out data (``split=``): trading envs trade the deterministic full-split episode of
:func:`hordax.envs.trading.splits.split_env` (the backtest's, from the split's first row);
any other env whose constructor takes ``split`` (e.g. a benchmark of generated tasks with a
held-out part) is built with ``split=<value>``; other envs refuse ``split``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from hordax.envs.core import is_multi_agent
from hordax.envs.registry import constructor_accepts, make, renamed_params
from hordax.envs.trading import splits
from hordax.training.config import is_mixed
from hordax.training.evaluation.episodes import (
    episode_keys,
    episode_stats,
    interval,
    make_runner,
    make_trajectory,
)
from hordax.training.evaluation.policy import groups_of
from hordax.training.host.rundir import write_atomic

#: Files of a training run that evaluation never writes.
TRAINING_FILES = (
    "config.yaml",
    "overrides.json",
    "metrics.jsonl",
    "params.msgpack",
    "summary.json",
)
#: Step cap for an env without a time limit (``max_steps=0`` and no ``max_steps_in_episode``).
DEFAULT_MAX_STEPS = 100_000


@dataclass
class EvalConfig:
    """``hordax eval`` options (hordax/configs/eval.yaml)."""

    run_dir: str = ""
    """Directory of a finished ``hordax train`` run."""
    episodes: int = 100
    """Fresh episodes per member (one jitted batch)."""
    deterministic: bool = True
    """Greedy / mean actions (false: sample PPO's policy)."""
    seed: int = -1
    """Evaluation seed (-1: the run's own seed, in the evaluation seed space)."""
    split: str = ""
    """Held-out data: '' (the run's env), or a split of an env that has them (trading:
    train | validation | test | all)."""
    video: str = ""
    """Write the first ``video_episodes`` episodes to this GIF (or MP4, with imageio-ffmpeg)."""
    video_episodes: int = 1
    """Episodes in the video."""
    fps: int = 30
    """Video frames per second."""
    max_steps: int = 0
    """Step cap per episode (0: the env's ``max_steps_in_episode``, else 100,000); an episode
    still running there is an error."""
    out: str = ""
    """Where to write the JSON ('' = RUN_DIR/eval.json, RUN_DIR/eval_<split>.json with a split;
    if that file holds an evaluation with other settings, eval[_<split>].1.json, .2, ..)."""
    env_params: dict[str, Any] = field(default_factory=dict)
    """Env params over the run's own (``env_params.collision_distance=0.3``): evaluate a
    policy on another setting of its env than it trained on (checked as at ``make``)."""


def validate_eval(cfg: EvalConfig) -> None:
    """The checks that need no run; ``ValueError`` naming the key."""
    if not cfg.run_dir:
        raise ValueError("run_dir is required: hordax eval RUN_DIR [episodes=N]")
    checks = (
        ("episodes", cfg.episodes >= 1, "must be an integer >= 1"),
        ("video_episodes", cfg.video_episodes >= 1, "must be an integer >= 1"),
        ("fps", 1 <= cfg.fps <= 1000, "must be an integer in [1, 1000]"),
        ("max_steps", cfg.max_steps >= 0, "must be an integer >= 0 (0 = the env's limit)"),
        ("seed", -1 <= cfg.seed < 2**63, "must be -1 (the run's seed) or in [0, 2**63)"),
    )
    for key, ok, rule in checks:
        if not ok:
            raise ValueError(f"{key}={getattr(cfg, key)}: {rule}")
    if cfg.video and not cfg.video.lower().endswith((".gif", ".mp4")):
        raise ValueError(f"video={cfg.video!r}: allowed file types are .gif and .mp4")
    if cfg.video.lower().endswith(".mp4") and importlib.util.find_spec("imageio_ffmpeg") is None:
        raise ValueError(
            f"video={cfg.video!r}: MP4 needs the imageio-ffmpeg package; use a .gif path"
        )
    out = os.path.basename(cfg.out)
    if out in TRAINING_FILES:
        raise ValueError(f"out={cfg.out!r}: would overwrite the run's {out}")


def eval_env(env_id: str, kwargs: dict, params: dict, split: str) -> tuple[Any, Any, int]:
    """``(env, env_params, max steps)`` of the run's env, or of its held-out ``split``."""
    if not split:
        env, env_params = make(env_id, params=params, **kwargs)
        return env, env_params, 0
    if splits.supports_split(env_id):
        env, env_params, num_steps = splits.split_env(env_id, kwargs, params, split)
        return env, env_params, (num_steps or 0) + 1
    if constructor_accepts(env_id, ["split"]):
        env, env_params = make(env_id, params=params, **{**kwargs, "split": split})
        return env, env_params, 0
    raise ValueError(
        f"split={split!r}: env {env_id} has no held-out splits (its constructor takes no"
        " split); leave split empty"
    )


class Evaluator:
    """Evaluation of a run's saved agents on one env: the agents and compiled runners are
    built once and reused for every saved agent (train-time evaluation every K chunks
    compiles once).

    Args:
        cfg: the run's ``TrainConfig``.
        env, env_params: the env to evaluate on (the run's, or a held-out split's).
        episodes: episodes per member; seed: evaluation seed; deterministic: greedy actions.
        max_steps: step cap per episode (0: ``env_params.max_steps_in_episode``).
    """

    def __init__(
        self,
        cfg: Any,
        env: Any,
        env_params: Any,
        episodes: int,
        seed: int,
        deterministic: bool = True,
        max_steps: int = 0,
    ):
        self.cfg, self.env, self.env_params = cfg, env, env_params
        self.episodes, self.seed, self.deterministic = episodes, seed, deterministic
        limit = int(getattr(env_params, "max_steps_in_episode", 0) or 0)
        self.max_steps = int(max_steps or (limit if 0 < limit < splits.NO_TIME_LIMIT else 0))
        self.max_steps = self.max_steps or DEFAULT_MAX_STEPS
        self.keys = episode_keys(seed, episodes)
        self._runners: dict[str, Any] = {}
        self.compile_s = 0.0

    def groups(self, saved: dict, where: str = "params") -> list:
        return groups_of(self.cfg, saved, self.env, self.env_params, self.deterministic, where)

    def _runner(self, group: Any) -> Any:
        if group.algo not in self._runners:
            run = make_runner(self.env, self.env_params, group.policy, self.max_steps)
            params, stats = _member(group.members, 0)
            t0 = time.perf_counter()
            self._runners[group.algo] = run.lower(params, stats, self.keys).compile()
            self.compile_s += time.perf_counter() - t0
        return self._runners[group.algo]

    def __call__(self, saved: dict, where: str = "params") -> dict:
        """Evaluate every member of ``saved``; the statistics as :func:`episode_stats`
        plus ``members`` (a list, for more than one member), ``seed``, ``deterministic``,
        ``wall_s`` and ``compile_s`` (of this call)."""
        t0 = time.perf_counter()
        compile_before = self.compile_s
        outs, labels = [], []
        for group in self.groups(saved, where):
            run = self._runner(group)
            for k in range(group.members.size):
                out = jax.device_get(run(*_member(group.members, k), self.keys))
                if not np.all(out["done"]):
                    raise ValueError(
                        f"max_steps={self.max_steps}: {int(np.sum(~out['done']))} of"
                        f" {self.episodes} episodes still running; raise max_steps"
                    )
                outs.append(out)
                labels.append(group.algo)
        pooled = {
            "return": np.concatenate([o["return"] for o in outs]),
            "length": np.concatenate([o["length"] for o in outs]),
            "terminated": np.concatenate([o["terminated"] for o in outs]),
            "active": np.concatenate([o["active"] for o in outs]),
            "metrics": {
                k: np.concatenate([o["metrics"][k] for o in outs]) for k in outs[0]["metrics"]
            },
        }
        res = episode_stats(pooled, *_teams(self.env))
        res["episodes_per_member"] = self.episodes
        if len(outs) > 1:
            res["members"] = [
                {"algorithm": a, **episode_stats(o, *_teams(self.env))}
                for a, o in zip(labels, outs, strict=True)
            ]
            res["across_members"] = across_members(res["members"])
        res.update(
            seed=self.seed,
            deterministic=self.deterministic,
            compile_s=round(self.compile_s - compile_before, 3),
            wall_s=round(time.perf_counter() - t0, 3),
        )
        self.last_outs = outs
        return res

    def video(self, saved: dict, path: str, num_episodes: int, fps: int) -> int:
        """Render the first ``num_episodes`` evaluation episodes of the first member to
        ``path`` (GIF via PIL, MP4 via imageio-ffmpeg); returns the frame count."""
        group = self.groups(saved)[0]
        v = min(num_episodes, self.episodes)
        lengths = np.asarray(self.last_outs[0]["length"])[:v]
        traj = make_trajectory(self.env, self.env_params, group.policy, int(lengths.max()) + 1)
        states, alive = jax.device_get(traj(*_member(group.members, 0), self.keys[:v]))
        render = _renderer(self.env, jax.tree.map(lambda x: x[0, 0], states), self.env_params)
        frames = []
        for i in range(v):
            for t in range(int(lengths[i]) + 1):  # the first observation ... the last step's
                if t < alive.shape[0] and (t == 0 or alive[t - 1, i]):
                    state = jax.tree.map(lambda x, t=t, i=i: x[t, i], states)
                    frames.append(np.asarray(render(state, self.env_params), np.uint8))
        write_video(path, frames, fps)
        return len(frames)


def _teams(env: Any) -> tuple[Any, Any]:
    """``(team_index, team_names)`` of a multi-agent env (``(None, None)`` otherwise)."""
    if not is_multi_agent(env):
        return None, None
    return env.team_index, list(env.team_names)


def _renderer(env: Any, state: Any, env_params: Any) -> Any:
    """``env.render`` jitted where it traces (pure-JAX renders), else as is (host renders
    that read numpy values)."""
    jitted = jax.jit(env.render)
    try:
        jitted(state, env_params)
    except (TypeError, ValueError):  # jax.errors.ConcretizationTypeError and kin are TypeErrors
        return env.render
    return jitted


def _member(members: Any, k: int) -> tuple[Any, Any]:
    """Member ``k``'s ``(params, obs stats | None)``."""
    pick = lambda t: None if t is None else jax.tree.map(lambda x: np.asarray(x)[k], t)  # noqa: E731
    return pick(members.params), pick(members.obs_stats)


def write_video(path: str, frames: list[np.ndarray], fps: int) -> None:
    """``frames`` (``uint8[H, W, 3]``) as a GIF (PIL) or MP4 (imageio-ffmpeg), atomically."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    if path.lower().endswith(".mp4"):
        import imageio_ffmpeg

        tmp = path + ".tmp.mp4"
        h, w = frames[0].shape[:2]
        writer = imageio_ffmpeg.write_frames(tmp, (w, h), fps=fps, macro_block_size=1)
        writer.send(None)
        for f in frames:
            writer.send(np.ascontiguousarray(f))
        writer.close()
        os.replace(tmp, path)
        return
    import io

    from PIL import Image

    images = [Image.fromarray(f) for f in frames]
    buf = io.BytesIO()
    images[0].save(
        buf,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=round(1000 / fps),
        loop=0,
    )
    write_atomic(path, buf.getvalue())


def agent_label(tc: Any) -> str:
    """The JSON's ``agent``, as the run's training summary names it: ``ensemble`` for a
    mixed-algorithm ensemble (its members list their algorithms), else ``agent.name``."""
    return "ensemble" if is_mixed(tc) else tc.agent.name


def run_eval(cfg: EvalConfig) -> dict:
    """``hordax eval``: load the run, evaluate, write the JSON (and video); return it."""
    from hordax.training.ensemble.members import load_config, read_saved

    validate_eval(cfg)
    tc = load_config(cfg.run_dir)
    params = {**dict(tc.env.params), **dict(cfg.env_params)}
    try:
        env, env_params, cap = eval_env(tc.env.id, dict(tc.env.kwargs), params, cfg.split)
    except ValueError as e:  # name the fields as given here: env_params.<field>
        raise ValueError(renamed_params(str(e), "env_params.")) from None
    if cfg.video and not callable(getattr(env, "render", None)):
        raise ValueError(f"video={cfg.video!r}: env {tc.env.id} has no render(state, params)")
    seed = tc.seed if cfg.seed < 0 else cfg.seed
    ev = Evaluator(tc, env, env_params, cfg.episodes, seed, cfg.deterministic, cfg.max_steps or cap)
    t0 = time.perf_counter()
    saved = read_saved(os.path.join(cfg.run_dir, "params.msgpack"))
    res = ev(saved, where=f"run_dir={cfg.run_dir!r}")
    row = {
        "run_dir": cfg.run_dir,
        "env": tc.env.id,
        "agent": agent_label(tc),
        "split": cfg.split or None,
        **({"env_params": dict(cfg.env_params)} if cfg.env_params else {}),
        **res,
        "wall_s": round(time.perf_counter() - t0, 3),
        "compile_s": round(ev.compile_s, 3),
    }
    row["max_steps"] = ev.max_steps
    if cfg.video:
        row["video"] = cfg.video
        row["video_frames"] = ev.video(saved, cfg.video, cfg.video_episodes, cfg.fps)
    out = cfg.out or default_out(cfg.run_dir, cfg.split, row)
    from hordax import strict_json

    write_atomic(out, strict_json.dumps(row, indent=1))
    row["out"] = out
    return row


#: What makes two evaluations of a run the same one (same numbers for the same params): the
#: fields of an ``eval*.json`` row that ``hordax eval``'s options set.
SETTINGS = ("episodes_per_member", "seed", "deterministic", "split", "env_params", "max_steps")


def default_out(run_dir: str, split: str, row: dict) -> str:
    """Where ``hordax eval`` writes ``row`` without ``out=``: ``RUN_DIR/eval.json``
    (``eval_<split>.json`` with a split), unless that file holds an evaluation with other
    settings (:data:`SETTINGS`: e.g. 256 episodes, and this is a 4-episode video run): then
    the first free ``eval[_<split>].<n>.json`` (n = 1, 2, ..), so no evaluation is lost.
    The same settings again overwrite their own file (same params, same numbers)."""
    want = {k: row.get(k) for k in SETTINGS}
    paths = _eval_paths(run_dir, split)  # endless: the first free name ends the search
    return next(p for p in paths if not os.path.exists(p) or _read_if(p, want) is not None)


def find_eval(run_dir: str, split: str, want: dict) -> dict | None:
    """The first of the run's ``eval[_<split>][.<n>].json`` (as :func:`default_out` names
    them) whose fields equal ``want``'s (e.g. ``{"episodes_per_member": 16, "seed": 0}``),
    else ``None``."""
    for path in _eval_paths(run_dir, split):
        if not os.path.exists(path):
            return None
        found = _read_if(path, want)
        if found is not None:
            return found
    return None


def _eval_paths(run_dir: str, split: str):
    base = os.path.join(run_dir, f"eval_{split}" if split else "eval")
    yield f"{base}.json"
    n = 1
    while True:
        yield f"{base}.{n}.json"
        n += 1


def _read_if(path: str, want: dict) -> dict | None:
    """The JSON object in ``path`` if its fields equal ``want``'s; ``None`` if they do not
    or it is unreadable (not ours to overwrite)."""
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return None
    ok = isinstance(old, dict) and all(old.get(k) == v for k, v in want.items())
    return old if ok else None


def across_members(members: list[dict]) -> dict[str, Any]:
    """The seed-to-seed spread of a population: :func:`interval` over the ``P`` members'
    mean return and mean task metrics (``n = P``). The pooled top-level interval counts
    every episode of every member as independent, which it is not (members share the
    episodes' keys and differ by training seed), so it is narrower than the spread a
    rerun with other seeds would see; this one is the figure to quote across seeds."""
    return {
        "members": len(members),
        "return": interval([m["return"]["mean"] for m in members]),
        "metrics": {
            k: interval([m["metrics"][k]["mean"] for m in members]) for k in members[0]["metrics"]
        },
    }


def flat_fields(res: dict, prefix: str = "eval/") -> dict[str, float]:
    """A ``metrics.jsonl`` row's fields of an evaluation: mean and interval of the return
    and of every task metric."""
    out: dict[str, Any] = {f"{prefix}episodes": res["episodes"]}
    items = [("return", res["return"]), *((f"task/{k}", v) for k, v in res["metrics"].items())]
    for name, st in items:
        out[f"{prefix}{name}"] = st["mean"]
        lo, hi = st["ci95"] or (math.nan, math.nan)
        out[f"{prefix}{name}_ci95_lo"], out[f"{prefix}{name}_ci95_hi"] = lo, hi
    return out
