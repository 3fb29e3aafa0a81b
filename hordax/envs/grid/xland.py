"""XLand-style task distributions: rulesets, a procedural generator, benchmarks, meta-RL.

A **ruleset** (one task) is three fixed-size int arrays, vmappable like any params:
``goal int32[5]``, ``rules int32[R, 7]`` (``rules.py`` encodings, kind 0 = padding) and
``init_tiles int32[O, 2]`` (objects placed at random free cells at every reset; ``(0, 0)`` =
padding).

The **generator** (:func:`sample_ruleset`, pure JAX) draws a goal over one or two objects,
then a chain of ``depth`` production rules: each rule produces an object the level above
needs from one or two new objects (AgentHold / AgentNear[dir] take one, TileNear[dir] two);
the objects the deepest level needs are placed at reset. Distractor rules turn distractor
objects into other distractor objects, and distractor objects lie around unused. All
objects of a task are distinct ``(tile, colour)`` pairs, so distractors never interfere
with the chain.

A :class:`Benchmark` is a stack of rulesets: materialize it with :func:`make_benchmark`,
save/load it as ``.npz`` (``load_benchmark`` checks it and names what is wrong), split it
train/test on the host, and draw tasks inside jit with ``Benchmark.sample``.

Envs: :class:`XLand` (a single task from params, or a fresh generated task at every reset)
and :class:`XLandTrials` (meta-RL: a trial of ``episodes_per_trial`` episodes on one hidden
task; the observation is the view, optionally with the previous episode's outcome).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hordax.envs.grid import layouts, rules, world
from hordax.envs.grid.env import GridEnv, GridState, check_grid_size

#: objects of the generator: (tile, colour) for 6 tiles x 11 colours
OBJECT_TILES = (world.BALL, world.SQUARE, world.PYRAMID, world.KEY, world.HEX, world.STAR)
OBJECT_COLORS = tuple(range(1, world.NUM_COLORS))
VOCAB = np.array([(t, c) for t in OBJECT_TILES for c in OBJECT_COLORS], np.int32)  # [66, 2]

_GOAL_ONE = np.array(
    [rules.G_AGENT_HOLD, rules.G_AGENT_NEAR]
    + list(range(rules.G_AGENT_NEAR_UP, rules.G_AGENT_NEAR_LEFT + 1)),
    np.int32,
)
_GOAL_TWO = np.array(
    [rules.G_TILE_NEAR] + list(range(rules.G_TILE_NEAR_UP, rules.G_TILE_NEAR_LEFT + 1)), np.int32
)
#: ``goal_kinds`` of the generator: the goal kinds a task may have. ``"all"``: one-object goals
#: (AgentHold, AgentNear, AgentNear[dir]) or, with probability ``p_two``, two-object ones
#: (TileNear, TileNear[dir]); ``"agent_hold"`` / ``"agent_near"``: that one goal kind only
GOAL_KINDS = ("all", "agent_hold", "agent_near")
_GOAL_ONLY = {"agent_hold": rules.G_AGENT_HOLD, "agent_near": rules.G_AGENT_NEAR}
_RULE_ONE = np.array(
    [rules.R_AGENT_HOLD, rules.R_AGENT_NEAR]
    + list(range(rules.R_AGENT_NEAR_UP, rules.R_AGENT_NEAR_LEFT + 1)),
    np.int32,
)
_RULE_TWO = np.array(
    [rules.R_TILE_NEAR] + list(range(rules.R_TILE_NEAR_UP, rules.R_TILE_NEAR_LEFT + 1)), np.int32
)


@struct.dataclass
class RuleSet:
    goal: jax.Array  # int32[..., 5]
    rules: jax.Array  # int32[..., R, 7]
    init_tiles: jax.Array  # int32[..., O, 2]


def ruleset_sizes(depth: int, num_distractor_rules: int, num_distractor_objects: int):
    """Static ``(num_rules, num_objects)`` of the generator's arrays."""
    return depth + num_distractor_rules, 2 + depth + 2 * num_distractor_rules + (
        num_distractor_objects
    )


def check_vocabulary(depth: int, num_distractor_rules: int, num_distractor_objects: int) -> None:
    """Host-side: the generator's distinct objects fit :data:`VOCAB` (66 ``(tile, colour)``
    pairs); ``ValueError`` naming the three settings otherwise (indexing past the vocabulary
    would repeat objects, and a task's objects must be distinct)."""
    need = ruleset_sizes(depth, num_distractor_rules, num_distractor_objects)[1] + depth
    if need > len(VOCAB):
        raise ValueError(
            f"depth={depth}, num_distractor_rules={num_distractor_rules}, "
            f"num_distractor_objects={num_distractor_objects}: the task needs {need} distinct "
            f"objects (2 + 2 depth + 2 num_distractor_rules + num_distractor_objects), there "
            f"are {len(VOCAB)} ({len(OBJECT_TILES)} tiles x {len(OBJECT_COLORS)} colours)"
        )


def sample_ruleset(
    key: jax.Array,
    depth: int = 1,
    num_distractor_rules: int = 2,
    num_distractor_objects: int = 2,
    goal_kinds: str = "all",
    p_two: float = 0.3,
) -> RuleSet:
    """Draw one task (pure JAX; ``vmap`` over keys for many).

    Args:
        key: PRNG key.
        depth: length of the rule chain between the placed objects and the goal (static).
        num_distractor_rules: rules on distractor objects (static).
        num_distractor_objects: unused objects placed in the room (static).
        goal_kinds: the goal kinds drawn (static, one of :data:`GOAL_KINDS`).
        p_two: probability that the goal (with ``goal_kinds="all"``) or a chain rule
            involves two objects (TileNear).
    """
    num_rules, num_objects = ruleset_sizes(depth, num_distractor_rules, num_distractor_objects)
    check_vocabulary(depth, num_distractor_rules, num_distractor_objects)
    # one uniform draw for everything (each jax.random call compiles its own hash)
    n_u = 3 + 3 * depth + num_distractor_rules
    draw = jax.random.uniform(key, (len(VOCAB) + num_rules + n_u,))
    objs = jnp.asarray(VOCAB)[layouts.smallest(draw[: len(VOCAB)], num_objects + depth)]
    shuffle = layouts.smallest(draw[len(VOCAB) : len(VOCAB) + num_rules], num_rules)
    u = draw[len(VOCAB) + num_rules :]
    ui = iter(range(u.shape[0]))
    nxt = 0  # next unused object (static counter: every draw takes its slot)

    def pick(table, v):
        return jnp.asarray(table)[jnp.minimum((v * len(table)).astype(jnp.int32), len(table) - 1)]

    # goal ------------------------------------------------------------------------------
    goal_one = _GOAL_ONE if goal_kinds == "all" else np.array([_GOAL_ONLY[goal_kinds]], np.int32)
    two = (u[next(ui)] < p_two) & (goal_kinds == "all")
    g_kind = jnp.where(two, pick(_GOAL_TWO, u[next(ui)]), pick(goal_one, u[next(ui)]))
    a, b = objs[0], objs[1]
    nxt = 2
    goal = jnp.stack([g_kind, a[0], a[1], jnp.where(two, b[0], 0), jnp.where(two, b[1], 0)])
    # needed objects (a stack): slot 0 = a, slot 1 = b if two
    needed = jnp.zeros((2 + depth, 2), jnp.int32).at[0].set(a).at[1].set(b)
    count = jnp.where(two, 2, 1)
    chain = []
    for _ in range(depth):
        two_r = u[next(ui)] < p_two
        kind = jnp.where(two_r, pick(_RULE_TWO, u[next(ui)]), pick(_RULE_ONE, u[next(ui)]))
        top = count - 1
        prod = needed[top]
        y, z = objs[nxt], objs[nxt + 1]
        nxt += 2
        chain.append(
            jnp.stack(
                [
                    kind,
                    y[0],
                    y[1],
                    jnp.where(two_r, z[0], 0),
                    jnp.where(two_r, z[1], 0),
                    prod[0],
                    prod[1],
                ]
            )
        )
        needed = needed.at[top].set(y)
        needed = needed.at[top + 1].set(jnp.where(two_r, z, needed[top + 1]))
        count = count + two_r.astype(jnp.int32)
    placed = jnp.where((jnp.arange(2 + depth) < count)[:, None], needed, 0)
    # distractors -------------------------------------------------------------------------
    distract_rules, distract_objs = [], []
    for _ in range(num_distractor_rules):
        y, prod = objs[nxt], objs[nxt + 1]
        nxt += 2
        kind = pick(_RULE_ONE, u[next(ui)])
        distract_rules.append(jnp.stack([kind, y[0], y[1], 0, 0, prod[0], prod[1]]))
        distract_objs += [y]
    for _ in range(num_distractor_objects):
        distract_objs.append(objs[nxt])
        nxt += 1
    rule_rows = chain + distract_rules
    all_rules = jnp.stack(rule_rows) if rule_rows else jnp.zeros((0, rules.RULE_SIZE), jnp.int32)
    all_rules = all_rules[shuffle] if num_rules else all_rules
    init = jnp.concatenate([placed] + ([jnp.stack(distract_objs)] if distract_objs else []), 0)
    pad = num_objects - init.shape[0]
    init = jnp.concatenate([init, jnp.zeros((pad, 2), jnp.int32)], 0)
    return RuleSet(goal.astype(jnp.int32), all_rules.astype(jnp.int32), init.astype(jnp.int32))


# --------------------------------------------------------------------------------------------
# benchmarks


@struct.dataclass
class Benchmark:
    """A stack of ``N`` rulesets; ``sample``/``get`` work inside jit."""

    goals: jax.Array  # int32[N, 5]
    rules: jax.Array  # int32[N, R, 7]
    init_tiles: jax.Array  # int32[N, O, 2]

    @property
    def num_tasks(self) -> int:
        return int(self.goals.shape[0])

    def get(self, index: jax.Array) -> RuleSet:
        return RuleSet(
            self.goals[index].astype(jnp.int32),
            self.rules[index].astype(jnp.int32),
            self.init_tiles[index].astype(jnp.int32),
        )

    def sample(self, key: jax.Array) -> RuleSet:
        return self.get(jax.random.randint(key, (), 0, self.goals.shape[0]))

    def split(self, prop: float, seed: int = 0) -> tuple[Benchmark, Benchmark]:
        """Host-side shuffled split into ``(first prop, rest)``; disjoint and exhaustive."""
        if not 0.0 < prop < 1.0:
            raise ValueError(f"prop={prop}: must be in (0, 1)")
        n = self.num_tasks
        order = np.random.default_rng(seed).permutation(n)
        cut = int(round(prop * n))
        if cut in (0, n):
            raise ValueError(f"prop={prop} splits {n} tasks into an empty part")
        take = lambda idx: Benchmark(  # noqa: E731
            *(
                jnp.asarray(np.asarray(x)[np.sort(idx)])
                for x in (self.goals, self.rules, self.init_tiles)
            )
        )
        return take(order[:cut]), take(order[cut:])


def make_benchmark(
    key: jax.Array,
    num_tasks: int,
    depth: int = 1,
    num_distractor_rules: int = 2,
    num_distractor_objects: int = 2,
    goal_kinds: str = "all",
    chunk: int = 65536,
) -> Benchmark:
    """Materialize ``num_tasks`` generated rulesets (``jit(vmap(sample_ruleset))`` in chunks)."""
    args = (depth, num_distractor_rules, num_distractor_objects, goal_kinds)
    gen = jax.jit(jax.vmap(lambda k: sample_ruleset(k, *args)))
    parts = []
    for start in range(0, num_tasks, chunk):
        n = min(chunk, num_tasks - start)
        keys = jax.random.split(jax.random.fold_in(key, start // chunk), n)
        rs = jax.device_get(gen(keys))
        parts.append(
            (rs.goal.astype(np.uint8), rs.rules.astype(np.uint8), rs.init_tiles.astype(np.uint8))
        )
    goals, rs, init = (np.concatenate([p[i] for p in parts]) for i in range(3))
    return Benchmark(jnp.asarray(goals), jnp.asarray(rs), jnp.asarray(init))


BENCHMARK_FORMAT = 1


def save_benchmark(path: str | os.PathLike, bench: Benchmark) -> None:
    """Write ``bench`` as a compressed ``.npz`` (uint8 arrays + a format version)."""
    np.savez_compressed(
        path,
        format_version=np.int32(BENCHMARK_FORMAT),
        goals=np.asarray(bench.goals, np.uint8),
        rules=np.asarray(bench.rules, np.uint8),
        init_tiles=np.asarray(bench.init_tiles, np.uint8),
    )


def load_benchmark(path: str | os.PathLike) -> Benchmark:
    """Read a benchmark written by :func:`save_benchmark`; ``ValueError`` if malformed."""
    try:
        data = np.load(path, allow_pickle=False)
        arrays = {k: data[k] for k in data.files}
    except Exception as err:  # zip, pickle or format errors: all mean "not a benchmark"
        raise ValueError(f"benchmark file {str(path)!r} is not a readable .npz: {err}") from err
    missing = {"format_version", "goals", "rules", "init_tiles"} - set(arrays)
    if missing:
        raise ValueError(f"benchmark file {str(path)!r} lacks arrays {sorted(missing)}")
    version = int(arrays["format_version"])
    if version != BENCHMARK_FORMAT:
        raise ValueError(f"benchmark file {str(path)!r}: format_version={version}, want 1")
    g, r, o = arrays["goals"], arrays["rules"], arrays["init_tiles"]
    expect = {
        "goals": (g, 2, rules.GOAL_SIZE),
        "rules": (r, 3, rules.RULE_SIZE),
        "init_tiles": (o, 3, 2),
    }
    for name, (x, ndim, last) in expect.items():
        if x.ndim != ndim or x.shape[-1] != last or not np.issubdtype(x.dtype, np.integer):
            raise ValueError(
                f"benchmark file {str(path)!r}: {name} is {x.dtype}{list(x.shape)}, want an "
                f"integer array of rank {ndim} with last axis {last}"
            )
    if not (g.shape[0] == r.shape[0] == o.shape[0]) or g.shape[0] == 0:
        raise ValueError(
            f"benchmark file {str(path)!r}: goals/rules/init_tiles hold "
            f"{g.shape[0]}/{r.shape[0]}/{o.shape[0]} tasks (must be equal and > 0)"
        )
    check_task_values(f"benchmark file {str(path)!r}: ", g, r, o, "goals")
    return Benchmark(jnp.asarray(g), jnp.asarray(r), jnp.asarray(o))


def check_task_values(
    prefix: str,
    goal,
    rule_rows,
    init_tiles,
    goal_name: str = "goal",
    grid_hw: tuple[int, int] | None = None,
) -> None:
    """Host-side: the goal as :func:`rules.goal_range_tests` checks it (given ``grid_hw``,
    its positions too), known rule kinds, tile and colour ids in range in ``init_tiles`` and
    in the rules' products. Any leading axes (a benchmark's stack too). ``ValueError``
    naming ``{prefix}{field}``, the first offending row and the rule."""
    r, o = np.asarray(rule_rows), np.asarray(init_tiles)
    tests = [
        *rules.goal_range_tests(goal, goal_name, grid_hw),
        ("rules", r, r[..., 0], rules.NUM_RULES, "rule kind (entry 0)"),
        ("rules", r, r[..., 5], world.NUM_TILES, "produced tile id (entry 5)"),
        ("rules", r, r[..., 6], world.NUM_COLORS, "produced colour id (entry 6)"),
        ("init_tiles", o, o[..., 0], world.NUM_TILES, "tile ids (entry 0)"),
        ("init_tiles", o, o[..., 1], world.NUM_COLORS, "colour ids (entry 1)"),
    ]
    rules.check_in_range(prefix, tests)


# --------------------------------------------------------------------------------------------
# environments


@struct.dataclass
class XLandParams:
    max_steps_in_episode: int
    goal: jax.Array  # int32[5]
    rules: jax.Array  # int32[R, 7]
    init_tiles: jax.Array  # int32[O, 2]


def room_layout(rng: layouts.Draws, h: int, w: int, rooms: int) -> jax.Array:
    """Walled ``h x w`` grid split into 1, 2 or 4 rooms joined by one gap per inner wall.

    Two rooms: the gap is anywhere along the wall (rows ``[1, h - 1)``, XLand-MiniGrid's R2);
    four rooms: one gap per half-wall, as its R4."""
    grid = layouts.walled(h, w)
    rh, rw = h // 2, w // 2
    if rooms >= 2:
        grid = grid.at[:, rw, 0].set(world.WALL)
        # the upper half-wall's gap for four rooms; the whole wall's for two
        grid = grid.at[rng.randint(1, rh if rooms == 4 else h - 1), rw, 0].set(world.FLOOR)
    if rooms == 4:
        grid = grid.at[rh, :, 0].set(world.WALL)
        grid = grid.at[rng.randint(rh + 1, h - 1), rw, 0].set(world.FLOOR)
        grid = grid.at[rh, rng.randint(1, rw), 0].set(world.FLOOR)
        grid = grid.at[rh, rng.randint(rw + 1, w - 1), 0].set(world.FLOOR)
    return grid


def place_task(rng, grid, init_tiles):
    """Put each non-padding ``(tile, colour)`` of ``init_tiles`` on a random free cell."""
    for i in range(init_tiles.shape[0]):
        cell = layouts.sample_cell(rng, layouts.free(grid))
        value = init_tiles[i].astype(jnp.uint8)
        keep = init_tiles[i, 0] == world.EMPTY
        grid = grid.at[cell[0], cell[1]].set(jnp.where(keep, grid[cell[0], cell[1]], value))
    return grid


class XLand(GridEnv):
    """XLand-style single-task env: rooms, objects, production rules and one goal.

    The task is ``params.goal/rules/init_tiles`` (vmap over params = multi-task), or, with
    ``generate=True``, a fresh task from :func:`sample_ruleset` at every reset (generated
    tasks: ``depth``, the distractors and ``goal_kinds``, one of :data:`GOAL_KINDS`). Default
    time limit ``3 * H * W``, view 5x5 (as XLand-MiniGrid).
    """

    layout_name = "xland"

    def __init__(
        self,
        height: int = 9,
        width: int = 9,
        rooms: int = 1,
        view_size: int = 5,
        depth: int = 1,
        num_distractor_rules: int = 2,
        num_distractor_objects: int = 2,
        generate: bool = False,
        task_seed: int = 0,
        goal_kinds: str = "all",
    ):
        if rooms not in (1, 2, 4):
            raise ValueError(f"rooms={rooms!r}: must be 1, 2 or 4")
        check_grid_size("xland", height, width, (5, 5) if rooms == 1 else (7, 7))
        for name, v in (
            ("depth", depth),
            ("num_distractor_rules", num_distractor_rules),
            ("num_distractor_objects", num_distractor_objects),
        ):
            if not isinstance(v, int) or v < 0:
                raise ValueError(f"{name}={v!r}: must be an integer >= 0")
        if goal_kinds not in GOAL_KINDS:
            raise ValueError(f"goal_kinds={goal_kinds!r}: must be one of {GOAL_KINDS}")
        self.rooms, self.generate_tasks = rooms, bool(generate)
        self.gen_args = (depth, num_distractor_rules, num_distractor_objects, goal_kinds)
        num_rules, self.num_objects = ruleset_sizes(*self.gen_args[:3])
        free_cells = (height - 2) * (width - 2) - (height if rooms >= 2 else 0)
        if self.num_objects + 1 > free_cells // 2:
            raise ValueError(
                f"height={height}, width={width}: {self.num_objects} objects need at least "
                f"{2 * (self.num_objects + 1)} free cells"
            )
        self.default_max_steps = 3 * height * width
        self._task = sample_ruleset(jax.random.key(task_seed), *self.gen_args)
        super().__init__(height, width, view_size, num_rules=num_rules)

    @property
    def default_params(self) -> XLandParams:
        return XLandParams(
            self.default_max_steps, self._task.goal, self._task.rules, self._task.init_tiles
        )

    def task(self, key: jax.Array, params: XLandParams) -> RuleSet:
        if self.generate_tasks:
            return sample_ruleset(key, *self.gen_args)
        return RuleSet(params.goal, params.rules, params.init_tiles)

    def build(self, key: jax.Array, task: RuleSet) -> GridState:
        """A fresh episode of ``task``: room layout, objects and agent drawn from ``key``."""
        rng = layouts.Draws(key, 4 + task.init_tiles.shape[0] + 1)
        grid = place_task(
            rng, room_layout(rng, self.height, self.width, self.rooms), task.init_tiles
        )
        pos, d = layouts.sample_agent(rng, grid, jnp.ones((self.height, self.width), bool))
        return GridState(
            grid,
            pos,
            d,
            jnp.zeros(2, jnp.uint8),
            task.goal.astype(jnp.int32),
            jnp.zeros(rules.GOAL_SIZE, jnp.int32),
            task.rules.astype(jnp.int32),
            jnp.int32(0),
        )

    def reset_env(self, key, params):
        k_task, k_ep = jax.random.split(key)
        state = self.build(k_ep, self.task(k_task, params))
        return self.observe(key, state, None, params), state

    def validate_params(self, params: XLandParams) -> None:
        super().validate_params(params)
        for name, want in (
            ("goal", (rules.GOAL_SIZE,)),
            ("rules", (self.num_rules, rules.RULE_SIZE)),
            ("init_tiles", (self.num_objects, 2)),
        ):
            shape = tuple(np.shape(getattr(params, name)))[-len(want) :]
            if shape != want:
                raise ValueError(f"params.{name} has shape {shape}, want {want} for this env")
        check_task_values(
            "params.",
            params.goal,
            params.rules,
            params.init_tiles,
            grid_hw=(self.height, self.width),
        )


# --------------------------------------------------------------------------------------------
# meta-RL trials


@struct.dataclass
class TrialState:
    episode: GridState  # the running episode (its time counts steps within the episode)
    task: RuleSet  # the trial's task, hidden from the agent
    episode_index: jax.Array  # int32[] episodes finished in this trial
    time: jax.Array  # int32[] steps in the trial
    returns: jax.Array  # float32[K] each episode's return so far in this trial
    outcome: jax.Array  # int32[] how the episode before this step's observation ended (OUTCOME_*)
    picked: jax.Array  # uint8[2] object the episode before this observation ended by picking up


#: ``XLandTrials(observe_outcome=True)``'s third observation channel: the view's first step of
#: an episode after a success / after a time-out / after a wrong pick-up (``commit_pickup``);
#: 0 everywhere else
OUTCOME_NONE, OUTCOME_SUCCESS, OUTCOME_TIMEOUT, OUTCOME_WRONG = 0, 1, 2, 3


@struct.dataclass
class TrialParams:
    max_steps_in_episode: int  # trial time limit (truncation), default episodes * steps
    episode_steps: int  # time limit of one episode inside the trial
    benchmark: Benchmark  # tasks to draw from at each trial start


class XLandTrials(XLand):
    """Meta-RL: one task per trial, ``episodes_per_trial`` episodes, the task never observed.

    At trial start a task is drawn from ``params.benchmark`` (or generated, with
    ``generate=True``). An episode ends on success or after ``params.episode_steps``; the
    next episode of the same task starts at once (new layout and start, same rules and
    goal). The trial terminates when ``episodes_per_trial`` episodes are done. The reward
    of each success is ``1 - 0.9 * t / episode_steps`` (``t`` the step within the episode);
    ``info["metrics"]`` holds ``success``, ``episode_index`` (of the step's episode) and
    ``return_episode_k`` for ``k < episodes_per_trial`` (episode ``k``'s return so far in
    this trial; on a trial's last step, the returns of all its episodes: how the return
    changes from the first episode of a trial to the last) and ``return_gain``
    (``return_episode_{K-1} - return_episode_0``: on a trial's last step, the trial's paired
    last-minus-first difference, so its mean and interval over trials come from ``hordax
    eval`` and the learning suite can hold a threshold on it).

    Held-out tasks: ``split="train"`` draws trials from a fixed ``1 - test_fraction`` of
    the benchmark's tasks, ``split="test"`` from the rest (``Benchmark.split``, seed 0:
    disjoint); ``""`` from all of them. Train with ``split=train`` and evaluate with
    ``hordax eval RUN_DIR split=test``.

    ``observe_outcome=True`` adds a third channel to the view ``uint8[V, V, 3]``, the same
    value in every cell: ``OUTCOME_SUCCESS`` (1) / ``OUTCOME_TIMEOUT`` (2) on the first
    observation of an episode whose predecessor in the trial succeeded / ran out of time, 0
    otherwise: the previous step's reward and episode boundary, as RL^2 and XLand-MiniGrid's
    meta-RL baseline feed their agents (without it the agent must infer a success from the
    layout changing under it). The task itself stays unobserved.

    ``commit_pickup=True`` makes the choice commit, as in Harlow's task (Wang et al. 2018) and
    RL^2's bandits: the first object the agent picks up ends the episode, a success (reward as
    above) iff it is the goal's object, else a failure (``OUTCOME_WRONG`` = 3 in the outcome
    channel). The next episode's first observation shows the object picked in the agent's
    own cell (where the view shows what the agent carries): the choice and, with the outcome
    channel, its result arrive together, as RL^2 feeds its agent the previous action and
    reward. Every episode re-places the objects and the agent, so what carries over is the
    object's identity, not its cell: a memoryless policy succeeds in ~1 / (1 + distractors) of
    every episode, a meta-learner that remembers which object paid (or did not) approaches 1
    from the trial's second or third episode on. Only for tasks whose goal is AgentHold of a
    placed object (``goal_kinds="agent_hold"``, ``depth=0``; a given benchmark's goals are
    checked in ``validate_params``).

    ``episode_steps`` sets the default ``params.episode_steps`` (default ``3 * H * W``, as
    :class:`XLand`); the trial's limit defaults to ``episodes_per_trial`` times it.
    """

    SPLITS = ("", "train", "test")
    # the trial's counter ``state.time`` counts towards its truncation only (the reward reads
    # the running episode's own clock, ``state.episode.time``): staggered starts are a state
    # of the task (docs/env_protocol.md), unlike the other grid worlds'
    reads_time = False

    def __init__(
        self,
        episodes_per_trial: int = 4,
        benchmark: Benchmark | None = None,
        num_tasks: int = 64,
        split: str = "",
        test_fraction: float = 0.25,
        height: int = 9,
        width: int = 9,
        rooms: int = 1,
        view_size: int = 5,
        depth: int = 1,
        num_distractor_rules: int = 2,
        num_distractor_objects: int = 2,
        generate: bool = False,
        task_seed: int = 0,
        goal_kinds: str = "all",
        observe_outcome: bool = False,
        commit_pickup: bool = False,
        episode_steps: int | None = None,
    ):
        # XLand's arguments spelled out (no **kwargs): the registry reads the signature to
        # tell constructor arguments from params and which envs take split= (hordax eval)
        if not isinstance(episodes_per_trial, int) or episodes_per_trial < 1:
            raise ValueError(f"episodes_per_trial={episodes_per_trial!r}: must be an int >= 1")
        if split not in self.SPLITS:
            raise ValueError(f"split={split!r}: must be one of {self.SPLITS}")
        super().__init__(
            height,
            width,
            rooms,
            view_size,
            depth,
            num_distractor_rules,
            num_distractor_objects,
            generate,
            task_seed,
            goal_kinds,
        )
        if split and self.generate_tasks:
            raise ValueError(f"split={split!r}: generated tasks (generate=True) have no split")
        if commit_pickup and (goal_kinds != "agent_hold" or depth != 0):
            raise ValueError(
                f"commit_pickup=True with goal_kinds={goal_kinds!r}, depth={depth!r}: a pick-up "
                "commits only where the goal is holding a placed object (goal_kinds='agent_hold', "
                "depth=0)"
            )
        if episode_steps is not None:
            if not isinstance(episode_steps, int) or episode_steps < 1:
                raise ValueError(f"episode_steps={episode_steps!r}: must be an int >= 1")
            self.default_max_steps = episode_steps
        self.episodes_per_trial = episodes_per_trial
        self.observe_outcome = bool(observe_outcome)
        self.commit_pickup = bool(commit_pickup)
        self.obs_channels = 3 if self.observe_outcome else 2  # GridEnv.observation_space
        if benchmark is None:
            benchmark = make_benchmark(jax.random.key(1), num_tasks, *self.gen_args)
        if split:
            if not 0.0 < test_fraction < 1.0:
                raise ValueError(f"test_fraction={test_fraction!r}: must be in (0, 1)")
            train, test = benchmark.split(1.0 - test_fraction)
            benchmark = train if split == "train" else test
        self._benchmark = benchmark

    @property
    def default_params(self) -> TrialParams:
        steps = self.default_max_steps
        return TrialParams(steps * self.episodes_per_trial, steps, self._benchmark)

    def task(self, key, params):
        if self.generate_tasks:
            return sample_ruleset(key, *self.gen_args)
        return params.benchmark.sample(key)

    def reset_env(self, key, params):
        k_task, k_ep = jax.random.split(key)
        task = self.task(k_task, params)
        returns = jnp.zeros(self.episodes_per_trial, jnp.float32)
        zero = jnp.int32(0)
        no_pick = jnp.zeros(2, jnp.uint8)
        state = TrialState(self.build(k_ep, task), task, zero, zero, returns, zero, no_pick)
        return self.observe(key, state, None, params), state

    def step_env(self, key, state: TrialState, action, params: TrialParams):
        ep = self.transition(state.episode, action)
        ep = ep.replace(time=ep.time + 1)
        held = ep.carry
        success = rules.check_goal(ep.goal, ep.grid, ep.agent_pos, ep.carry)
        horizon = jnp.asarray(params.episode_steps, jnp.float32)
        reward = jnp.where(success, 1.0 - 0.9 * ep.time.astype(jnp.float32) / horizon, 0.0)
        # commit_pickup: the first pick-up ends the episode (hands were empty: a pick-up
        # always ends it, so no episode starts with a carried object)
        wrong = (held[0] != world.EMPTY) & ~success if self.commit_pickup else False
        episode_done = success | wrong | (ep.time >= params.episode_steps)
        fresh = self.build(key, state.task)
        ep = jax.tree.map(lambda a, b: jnp.where(episode_done, a, b), fresh, ep)
        index = state.episode_index + episode_done.astype(jnp.int32)
        last = self.episodes_per_trial - 1
        returns = state.returns.at[jnp.minimum(state.episode_index, last)].add(reward)
        ended_as = jnp.where(
            success, OUTCOME_SUCCESS, jnp.where(wrong, OUTCOME_WRONG, OUTCOME_TIMEOUT)
        )
        outcome = jnp.where(episode_done, ended_as, OUTCOME_NONE).astype(jnp.int32)
        picked = jnp.where(episode_done & (held[0] != world.EMPTY), held, jnp.uint8(0))
        new = TrialState(ep, state.task, index, state.time + 1, returns, outcome, picked)
        success_f = success.astype(jnp.float32)
        metrics = {
            "success": success_f,
            "episode_index": state.episode_index.astype(jnp.float32),
        }
        for k in range(self.episodes_per_trial):
            metrics[f"return_episode_{k}"] = returns[k]
        metrics["return_gain"] = returns[last] - returns[0]
        info = {"metrics": metrics, "reward_terms": {"success": success_f}}
        obs = self.observe(key, new, action, params)
        terminated = index >= self.episodes_per_trial
        return obs, new, reward.astype(jnp.float32), terminated, info

    def observe(self, key, state, action, params):
        view = super().observe(key, state.episode, action, params)
        if self.commit_pickup:  # the object just committed to, where the view shows the hands
            me = view[self.view_size - 1, self.view_size // 2]
            shown = jnp.where(state.picked[0] != world.EMPTY, state.picked, me)
            view = view.at[self.view_size - 1, self.view_size // 2].set(shown)
        if not self.observe_outcome:
            return view
        flag = jnp.broadcast_to(state.outcome.astype(view.dtype), view.shape[:-1] + (1,))
        return jnp.concatenate([view, flag], axis=-1)

    def render(self, state, params):
        from hordax.envs.grid.render import render_rgb

        return render_rgb(state.episode, self.view_size)

    def validate_params(self, params: TrialParams) -> None:
        steps = int(params.episode_steps)
        if steps < 1:
            raise ValueError(f"params.episode_steps={steps}: must be >= 1")
        if int(params.max_steps_in_episode) < 1:
            raise ValueError(f"params.max_steps_in_episode={params.max_steps_in_episode}: >= 1")
        b = params.benchmark
        if tuple(b.rules.shape[1:]) != (self.num_rules, rules.RULE_SIZE) or tuple(
            b.init_tiles.shape[1:]
        ) != (self.num_objects, 2):
            raise ValueError(
                f"params.benchmark holds rules {tuple(b.rules.shape[1:])} and init_tiles "
                f"{tuple(b.init_tiles.shape[1:])}; this env needs "
                f"({self.num_rules}, 7) and ({self.num_objects}, 2) (same depth/distractors)"
            )
        hw = (self.height, self.width)
        check_task_values("params.benchmark.", b.goals, b.rules, b.init_tiles, "goals", hw)
        kinds = np.unique(np.asarray(b.goals)[..., 0]) if self.commit_pickup else None
        if kinds is not None and not np.array_equal(kinds, [rules.G_AGENT_HOLD]):
            raise ValueError(
                f"params.benchmark.goals holds goal kinds {kinds.tolist()}; commit_pickup=True "
                f"needs AgentHold ({rules.G_AGENT_HOLD}) goals only"
            )
