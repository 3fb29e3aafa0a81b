"""XLand-style tasks: generator structure, a hand-built task end to end, benchmarks, trials."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hordax.envs.grid import rules, world, xland

F, L, R, PICK, DROP, TOG = range(6)


def _obtainable_depths(rs):
    """Host-side forward chaining: {object: fewest rule applications to make it}."""
    depth = {tuple(o): 0 for o in np.asarray(rs.init_tiles) if o[0] != 0}
    changed = True
    while changed:
        changed = False
        for r in np.asarray(rs.rules):
            kind = int(r[0])
            if kind == 0:
                continue
            ins = [tuple(r[1:3])]
            if rules.R_TILE_NEAR <= kind <= rules.R_TILE_NEAR_LEFT:
                ins.append(tuple(r[3:5]))
            if all(i in depth for i in ins):
                d = 1 + max(depth[i] for i in ins)
                prod = tuple(r[5:7])
                if prod not in depth or d < depth[prod]:
                    depth[prod], changed = d, True
    return depth


@functools.cache
def _sampled(depth, n=256):
    gen = jax.jit(jax.vmap(lambda k: xland.sample_ruleset(k, depth, 2, 2)))
    return jax.device_get(gen(jax.random.split(jax.random.key(depth), n)))


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_generator__goal_reachable_through_a_chain_of_exactly_depth(depth):
    """Every goal object is obtainable; the deepest needs exactly `depth` rule firings."""
    batch = _sampled(depth)
    for i in range(batch.goal.shape[0]):
        rs = jax.tree.map(lambda x, i=i: x[i], batch)
        made = _obtainable_depths(rs)
        g = np.asarray(rs.goal)
        needs = [tuple(g[1:3])]
        if g[0] == rules.G_TILE_NEAR or rules.G_TILE_NEAR_UP <= g[0] <= rules.G_TILE_NEAR_LEFT:
            needs.append(tuple(g[3:5]))
        assert all(o in made for o in needs), f"task {i}: goal {g} unreachable"
        assert max(made[o] for o in needs) == depth, f"task {i}: chain depth"
        placed = [tuple(o) for o in np.asarray(rs.init_tiles) if o[0] != 0]
        assert len(placed) == len(set(placed)), "placed objects are distinct"
        assert rules.G_AGENT_HOLD <= g[0] < rules.NUM_GOALS
    assert len({tuple(np.asarray(batch.goal[i])) for i in range(256)}) > 200  # varied


@pytest.mark.parametrize("kind", ["agent_hold", "agent_near"])
def test_generator__goal_kinds_restrict_the_goal(kind):
    """``goal_kinds`` names the only goal kind drawn (one object: the placed goal object plus
    the distractors); ``"all"`` keeps the mix, two-object goals included."""
    keys = jax.random.split(jax.random.key(4), 256)
    only = jax.vmap(lambda k: xland.sample_ruleset(k, 0, 0, 2, kind))(keys)
    want = {"agent_hold": rules.G_AGENT_HOLD, "agent_near": rules.G_AGENT_NEAR}[kind]
    assert set(np.asarray(only.goal[:, 0]).tolist()) == {want}
    assert (np.asarray(only.goal[:, 3]) == 0).all()  # no second goal object
    placed = np.asarray(only.init_tiles)
    np.testing.assert_array_equal(placed[:, 0], np.asarray(only.goal[:, 1:3]))
    assert (placed[:, 2:, 0] > 0).all()  # the two distractors lie in the room
    mixed = jax.vmap(lambda k: xland.sample_ruleset(k, 0, 0, 2))(keys).goal[:, 0]
    assert len(set(np.asarray(mixed).tolist())) > 4
    bench = xland.make_benchmark(jax.random.key(0), 32, 0, 0, 2, goal_kinds=kind)
    assert set(np.asarray(bench.goals[:, 0]).tolist()) == {want}


def test_xland__hand_built_task_end_to_end():
    """Goal AgentHold(star) with rule AgentHold(ball) -> star: picking up the ball wins."""
    env = xland.XLand(depth=1, num_distractor_rules=0, num_distractor_objects=0)
    goal = rules.goal(rules.G_AGENT_HOLD, world.STAR, world.ORANGE)
    rule = rules.rule(rules.R_AGENT_HOLD, world.BALL, world.RED, prod=(world.STAR, world.ORANGE))
    init = np.array([[world.BALL, world.RED], [0, 0], [0, 0]], np.int32)
    params = env.default_params.replace(
        goal=jnp.asarray(goal), rules=jnp.asarray(rule[None]), init_tiles=jnp.asarray(init)
    )
    env.validate_params(params)
    _, s = env.reset(jax.random.key(0), params)
    ball = np.argwhere(np.asarray(s.grid[..., 0]) == world.BALL)
    assert len(ball) == 1
    # stand west of the ball facing east (move a wall-free spot: clear the row first)
    r, c = ball[0]
    if c == 1:  # no room to the west: put the ball one cell east
        grid = s.grid.at[r, c].set(jnp.array([world.FLOOR, 0], jnp.uint8))
        c = 2
        grid = grid.at[r, c].set(jnp.array([world.BALL, world.RED], jnp.uint8))
        s = s.replace(grid=grid)
    s = s.replace(agent_pos=jnp.asarray([r, c - 1], jnp.int32), agent_dir=jnp.int32(0))
    _, s1, rew, term, info = env.step_env(jax.random.key(1), s, F, params)  # blocked by ball
    assert not bool(term) and float(rew) == 0.0
    _, s2, rew, term, info = env.step_env(jax.random.key(2), s1, PICK, params)
    assert tuple(np.asarray(s2.carry)) == (world.STAR, world.ORANGE)
    assert bool(term) and float(info["metrics"]["success"]) == 1.0
    np.testing.assert_allclose(float(rew), 1 - 0.9 * 2 / params.max_steps_in_episode, rtol=1e-6)


def test_xland__generated_tasks_differ_per_reset_and_params_task_is_used():
    """generate=True draws a new task per reset; otherwise the params task is the state's."""
    gen = xland.XLand(generate=True)
    _, states = jax.vmap(gen.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), 16), gen.default_params
    )
    assert len({tuple(g) for g in np.asarray(states.goal)}) > 8
    fixed = xland.XLand()
    p = fixed.default_params
    _, s = fixed.reset(jax.random.key(5), p)
    np.testing.assert_array_equal(s.goal, p.goal)
    np.testing.assert_array_equal(s.rules, p.rules)
    placed = sorted(tuple(o) for o in np.asarray(p.init_tiles) if o[0])
    grid = np.asarray(s.grid).reshape(-1, 2)
    on_grid = sorted(tuple(o) for o in grid if o[0] not in (world.FLOOR, world.WALL))
    assert on_grid == placed


def test_benchmark__save_load_split_sample(tmp_path):
    """Round trip through .npz; split is disjoint and exhaustive; sample draws its tasks."""
    bench = xland.make_benchmark(jax.random.key(0), 500, depth=2, chunk=128)
    assert bench.num_tasks == 500
    path = tmp_path / "b.npz"
    xland.save_benchmark(path, bench)
    back = xland.load_benchmark(path)
    for a, b in (
        (bench.goals, back.goals),
        (bench.rules, back.rules),
        (bench.init_tiles, back.init_tiles),
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    train, test = back.split(0.8, seed=1)
    assert (train.num_tasks, test.num_tasks) == (400, 100)

    def rows(b):
        return {
            np.asarray(b.rules[i]).tobytes() + np.asarray(b.goals[i]).tobytes()
            for i in range(b.num_tasks)
        }

    assert not rows(train) & rows(test)
    assert rows(train) | rows(test) == rows(back)
    sampled = jax.jit(jax.vmap(test.sample))(jax.random.split(jax.random.key(3), 64))
    allowed = {np.asarray(test.goals[i]).tobytes() for i in range(100)}
    assert all(np.asarray(g, np.uint8).tobytes() in allowed for g in np.asarray(sampled.goal))


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        ("not a zip", "not a readable .npz"),
        ({"goals": np.zeros((3, 5), np.uint8)}, "lacks arrays"),
        (
            {
                "format_version": 1,
                "goals": np.zeros((3, 4), np.uint8),
                "rules": np.zeros((3, 2, 7), np.uint8),
                "init_tiles": np.zeros((3, 4, 2), np.uint8),
            },
            "goals is uint8",
        ),
        (
            {
                "format_version": 1,
                "goals": np.zeros((3, 5), np.uint8),
                "rules": np.zeros((2, 2, 7), np.uint8),
                "init_tiles": np.zeros((3, 4, 2), np.uint8),
            },
            "3/2/3 tasks",
        ),
        (
            {
                "format_version": 1,
                "goals": np.full((3, 5), 99, np.uint8),
                "rules": np.zeros((3, 2, 7), np.uint8),
                "init_tiles": np.zeros((3, 4, 2), np.uint8),
            },
            r"goals=\[99, 99, 99, 99, 99\] \(at \[0\]\): goal kind \(entry 0\) .* \[0, 15\)",
        ),
        (
            {
                "format_version": 2,
                "goals": np.zeros((3, 5), np.uint8),
                "rules": np.zeros((3, 2, 7), np.uint8),
                "init_tiles": np.zeros((3, 4, 2), np.uint8),
            },
            "format_version=2",
        ),
    ],
)
def test_benchmark__malformed_files_raise(tmp_path, payload, match):
    """A malformed benchmark file raises ValueError naming what is wrong."""
    path = tmp_path / "bad.npz"
    if isinstance(payload, str):
        path.write_text(payload)
    else:
        np.savez(path, **payload)
    with pytest.raises(ValueError, match=match):
        xland.load_benchmark(path)


def random_trial(env, params, steps, record):
    """``trial(key) -> (first obs, scan outputs)``: ``steps`` uniformly random actions from a
    reset; each step's output is ``record(state, next_state, obs, action, key, reward,
    terminated, info)``."""

    def trial(key):
        obs, s = env.reset(key, params)

        def body(s, k):
            k_a, k_s = jax.random.split(k)
            a = jax.random.randint(k_a, (), 0, 6)
            obs, s2, r, term, info = env.step_env(k_s, s, a, params)
            return s2, record(s, s2, obs, a, k_s, r, term, info)

        return obs, jax.lax.scan(body, s, jax.random.split(key, steps))[1]

    return trial


def test_trials__same_hidden_task_across_episodes():
    """A trial keeps its task over episodes, re-lays the room, and ends after K episodes."""
    env = xland.XLandTrials(episodes_per_trial=3, num_tasks=16)
    params = env.default_params.replace(episode_steps=4, max_steps_in_episode=12)
    env.validate_params(params)
    obs, s = env.reset(jax.random.key(0), params)
    assert obs.shape == (env.view_size, env.view_size, 2)  # the view only: no task id
    step = jax.jit(env.step_env)
    grids, terms, idx = [np.asarray(s.episode.grid)], [], []
    for t in range(12):
        obs, s, r, term, info = step(jax.random.key(t + 1), s, jnp.int32(L), params)  # no-op-ish
        np.testing.assert_array_equal(s.episode.goal, s.task.goal)
        np.testing.assert_array_equal(s.episode.rules, s.task.rules)
        terms.append(bool(term))
        idx.append(int(s.episode_index))
        grids.append(np.asarray(s.episode.grid))
    assert idx == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3]
    assert terms == [False] * 11 + [True]
    assert not np.array_equal(grids[3], grids[4])  # a new layout for episode 2
    # a new trial (fresh reset) draws a task from the benchmark
    goals = jax.vmap(lambda k: env.reset(k, params)[1].task.goal)(
        jax.random.split(jax.random.key(9), 32)
    )
    assert len({tuple(g) for g in np.asarray(goals)}) > 4


@pytest.mark.timeout(120)
def test_trials__per_episode_returns_and_held_out_split():
    """``return_episode_k`` on a trial's last step is the reward summed over its episode
    ``k`` (random play on a small room, so episodes succeed), ``return_gain`` the last
    episode's minus the first's; ``split=train/test`` draw
    trials from disjoint parts of the benchmark; the trial, not the episode, terminates."""
    kw = dict(height=5, width=5, depth=0, num_distractor_rules=0, num_distractor_objects=0)
    env = xland.XLandTrials(episodes_per_trial=3, num_tasks=40, **kw)
    params = env.default_params.replace(episode_steps=12, max_steps_in_episode=36)

    trial = random_trial(
        env, params, 36, lambda s, s2, obs, a, k, r, term, info: (r, term, info["metrics"])
    )
    _, (r, term, m) = jax.jit(jax.vmap(trial))(jax.random.split(jax.random.key(3), 64))
    r, term, idx = np.asarray(r), np.asarray(term), np.asarray(m["episode_index"])
    assert term.any(axis=1).all()
    end = np.argmax(term, axis=1)  # the trial's last step (the scan steps on past it)
    rows = np.arange(64)
    # one trial = one env episode: the first termination comes in the third episode
    np.testing.assert_array_equal(idx[rows, end], 2)
    in_trial = np.arange(36)[None] <= end[:, None]
    for k in range(3):
        want = np.where(in_trial & (idx == k), r, 0.0).sum(axis=1)
        got = np.asarray(m[f"return_episode_{k}"])[rows, end]
        np.testing.assert_allclose(got, want, rtol=1e-6)
    gain = np.asarray(m["return_episode_2"]) - np.asarray(m["return_episode_0"])
    np.testing.assert_allclose(np.asarray(m["return_gain"]), gain, atol=1e-6)
    assert (np.where(in_trial, r, 0.0) > 0).sum() > 20  # the check saw real rewards

    # held-out tasks: trials draw from params.benchmark (test_trials__same_hidden_task...)
    parts = [
        xland.XLandTrials(
            episodes_per_trial=3, num_tasks=40, split=split, **kw
        ).default_params.benchmark
        for split in ("train", "test")
    ]
    assert [b.num_tasks for b in parts] == [30, 10]  # test_fraction 0.25
    full = env.default_params.benchmark
    tasks = lambda bs: sorted(  # noqa: E731
        tuple(np.concatenate([np.ravel(b.goals[i]), np.ravel(b.init_tiles[i])]))
        for b in bs
        for i in range(b.num_tasks)
    )
    assert tasks(parts) == tasks([full])  # disjoint and exhaustive
    with pytest.raises(ValueError, match="split='val'"):
        xland.XLandTrials(split="val")
    # hordax eval split=test builds the env with split=, not as a trading split (which would
    # also pass random_start=): the registry reads the explicit signature
    from hordax.envs.registry import constructor_accepts
    from hordax.envs.trading.splits import supports_split

    assert constructor_accepts("Grid-XLand-Trials-R1-9x9-v0", ["split"])
    assert not supports_split("Grid-XLand-Trials-R1-9x9-v0")
    with pytest.raises(ValueError, match="generate=True"):
        xland.XLandTrials(split="test", generate=True)


@pytest.mark.timeout(60)
def test_trials__observe_outcome_channel():
    """``observe_outcome=True``: a third view channel, constant over the cells, is 1 on the
    first observation after a successful episode, 2 after a timed-out one, else 0; the first
    two channels are the plain view."""
    kw = dict(height=5, width=5, depth=0, num_distractor_rules=0, num_distractor_objects=0)
    plain = xland.XLandTrials(episodes_per_trial=3, num_tasks=40, **kw)
    env = xland.XLandTrials(episodes_per_trial=3, num_tasks=40, observe_outcome=True, **kw)
    params = env.default_params.replace(episode_steps=6, max_steps_in_episode=18)
    assert env.observation_space(params).shape == (5, 5, 3)
    assert plain.observation_space(params).shape == (5, 5, 2)

    def record(s, s2, obs, a, k, r, term, info):
        return obs, plain.observe(k, s2, a, params), r, s2.episode_index - s.episode_index

    trial = random_trial(env, params, 17, record)

    obs0, (obs, view, r, ended) = jax.jit(jax.vmap(trial))(jax.random.split(jax.random.key(5), 32))
    obs, view, r, ended = map(np.asarray, (obs, view, r, ended))
    assert (np.asarray(obs0)[..., 2] == 0).all()
    np.testing.assert_array_equal(obs[..., :2], view)
    flag = obs[..., 2]
    assert (flag == flag[..., :1, :1]).all()  # one value per observation
    want = np.where(ended == 1, np.where(r > 0, 1, 2), 0)
    np.testing.assert_array_equal(flag[..., 0, 0], want)
    assert (want == 1).sum() > 5 and (want == 2).sum() > 5  # both outcomes were seen


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_trials__commit_pickup_ends_the_episode_on_the_first_pick_up():
    """``commit_pickup=True`` (the registered Harlow id): an episode ends exactly when the
    agent picks up an object, a success iff it is the goal's object (outcome 1, reward as
    usual), else a failure (outcome 3, reward 0); time-outs stay outcome 2; the hands are
    empty in every new episode, whose first view shows the object picked in the agent's
    cell. Random play picks the goal in about 1 of 2 commits (Harlow's two objects)."""
    import hordax

    env, params = hordax.make("Grid-XLand-Trials-Harlow-R1-7x7-v0")
    assert env.commit_pickup and env.observation_space(params).shape == (5, 5, 3)
    assert (params.episode_steps, params.max_steps_in_episode) == (20, 80)

    def record(s, s2, obs, a, k, r, term, info):
        ep = s.episode
        front = world.get_cell(ep.grid, world.front_pos(ep.agent_pos, ep.agent_dir))
        picked = (a == PICK) & (jnp.asarray(world.PICKABLE)[front[0]]) & (ep.carry[0] == 0)
        is_goal = (front[0] == ep.goal[1]) & (front[1] == ep.goal[2])
        ended = s2.episode_index - s.episode_index
        me = obs[4, 2, :2]  # the agent's own view cell
        return picked, is_goal, r, ended, obs[0, 0, 2], s2.episode.carry, s.episode.time, me, front

    trial = random_trial(env, params, 60, record)
    _, out = jax.jit(jax.vmap(trial))(jax.random.split(jax.random.key(2), 128))
    picked, is_goal, r, ended, flag, carry, t, me, front = map(np.asarray, out)
    live = np.cumsum(np.concatenate([np.zeros_like(ended[:, :1]), ended[:, :-1]], 1), 1) < 4
    picked, is_goal, r, ended, flag, me, front = (
        x[live] for x in (picked, is_goal, r, ended, flag, me, front)
    )
    # the next episode's first view shows the object picked where it shows the hands
    np.testing.assert_array_equal(me[picked], front[picked])
    assert (me[~picked] == [world.FLOOR, 0]).all()
    assert (carry[live] == 0).all()  # a pick-up always ends the episode
    timeout = (t[live] + 1 >= params.episode_steps) & ~picked
    np.testing.assert_array_equal(ended, (picked | timeout).astype(ended.dtype))
    np.testing.assert_array_equal(r > 0, picked & is_goal)
    want = np.where(picked, np.where(is_goal, 1, 3), np.where(timeout, 2, 0))
    np.testing.assert_array_equal(flag, want)
    rate = (picked & is_goal).sum() / picked.sum()
    assert picked.sum() > 60 and 0.35 < rate < 0.65, (picked.sum(), rate)
    # the same id without the option: a wrong pick-up is only a step, outcome 3 never appears
    plain, p2 = hordax.make("Grid-XLand-Trials-Harlow-R1-7x7-v0", commit_pickup=False)
    _, out = jax.jit(jax.vmap(random_trial(plain, p2, 60, record)))(
        jax.random.split(jax.random.key(2), 64)
    )
    assert not (np.asarray(out[4]) == 3).any() and (np.asarray(out[5]) != 0).any()
    held = np.asarray(out[5])
    hands = np.where(held[..., :1] == 0, np.array([world.FLOOR, 0], held.dtype), held)
    np.testing.assert_array_equal(np.asarray(out[7]), hands)  # the plain view of the hands


def test_xland__bad_config_errors():
    """Too small grids, unknown room counts and mismatched benchmarks are named."""
    with pytest.raises(ValueError, match="rooms=3"):
        xland.XLand(rooms=3)
    with pytest.raises(ValueError, match="goal_kinds='hold'"):
        xland.XLandTrials(goal_kinds="hold")
    with pytest.raises(ValueError, match="objects need at least"):
        xland.XLand(height=5, width=5, num_distractor_objects=6)
    env = xland.XLandTrials(num_tasks=8)
    other = xland.make_benchmark(jax.random.key(0), 8, depth=3)
    with pytest.raises(ValueError, match="params.benchmark holds rules"):
        env.validate_params(env.default_params.replace(benchmark=other))
    # commit_pickup: only where holding a placed object is the goal
    with pytest.raises(ValueError, match="commit_pickup=True with goal_kinds='all'"):
        xland.XLandTrials(commit_pickup=True, depth=0)
    with pytest.raises(ValueError, match="depth=1"):
        xland.XLandTrials(commit_pickup=True, goal_kinds="agent_hold", depth=1)
    with pytest.raises(ValueError, match="episode_steps=0"):
        xland.XLandTrials(episode_steps=0)
    kw = dict(depth=0, num_distractor_rules=0, num_distractor_objects=2, num_tasks=8)
    env = xland.XLandTrials(commit_pickup=True, goal_kinds="agent_hold", **kw)
    mixed = xland.make_benchmark(jax.random.key(0), 64, 0, 0, 2, "all")
    with pytest.raises(ValueError, match="commit_pickup=True needs AgentHold"):
        env.validate_params(env.default_params.replace(benchmark=mixed))
    env.validate_params(env.default_params)


@pytest.mark.timeout(60)
def test_generator__refuses_more_objects_than_distinct_pairs():
    """Tasks use distinct (tile, colour) objects, and there are 66 (6 tiles x 11 colours):
    a generator setting that needs more is refused, naming the count. It was accepted and
    silently reused objects (72 placed, 66 distinct for 70 distractor objects: the
    distinct-objects guarantee, and with it the chain's, broken)."""
    assert len(xland.VOCAB) == 66
    with pytest.raises(ValueError, match=r"num_distractor_objects=70: .* 72 distinct .* 66"):
        xland.sample_ruleset(jax.random.key(0), 0, 0, 70)
    with pytest.raises(ValueError, match=r"depth=3, num_distractor_rules=30.* 70 distinct"):
        xland.XLand(height=30, width=30, depth=3, num_distractor_rules=30)
    rs = xland.sample_ruleset(jax.random.key(0), 0, 0, 64)  # 66 draws: the whole vocabulary
    tiles = np.asarray(rs.init_tiles)
    placed = tiles[tiles[:, 0] > 0]
    assert len(placed) >= 65 and len({tuple(t) for t in placed}) == len(placed)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("goal", [99, 3, 1, 0, 0], r"goals?=.* kind .* \[0, 15\)"),
        ("rules", 77, r"rules=.* kind .* \[0, 12\)"),
        ("init_tiles", 300, r"init_tiles=.* tile ids .* \[0, 14\)"),
        # AgentHold of tile 99: never met; a position off the 9 x 9 grid was clamped to its
        # border, so the goal held at a cell the task never named
        ("goal", [1, 99, 0, 0, 0], r"goals?=.* object tile id \(entry 1\) .* \[0, 14\)"),
        ("goal", [5, 3, 1, 9, 2], r"goals?=.* row \(entry 3\) in the 9 x 9 grid .* \[0, 9\)"),
        ("goal", [6, 4, -1, 0, 0], r"goals?=.* column \(entry 2\) in the 9 x 9 .* \[0, 9\)"),
    ],
)
def test_xland__params_task_values_are_checked(field, value, match):
    """A task given through params (``XLand``) or a benchmark given as params
    (``XLandTrials``) with an unknown goal or rule kind (never met / does nothing) or a
    tile id past the 14 tiles (300 wrapped to the uint8 44) is refused, naming the field,
    as ``load_benchmark`` refuses such a file. Both were accepted."""
    env = xland.XLand()
    params = env.default_params
    bad = np.broadcast_to(np.asarray(value, np.int32), np.shape(getattr(params, field)))
    with pytest.raises(ValueError, match=r"params\." + match):
        env.validate_params(params.replace(**{field: np.array(bad)}))
    trials = xland.XLandTrials(num_tasks=4)
    tp = trials.default_params
    name = "goals" if field == "goal" else field
    stack = np.array(np.broadcast_to(bad, np.shape(getattr(tp.benchmark, name))))
    with pytest.raises(ValueError, match=r"params\.benchmark\." + match):
        trials.validate_params(tp.replace(benchmark=tp.benchmark.replace(**{name: stack})))


def test_make_benchmark_command(tmp_path, capsys):
    """The documented command writes a loadable file with the requested task count."""
    from hordax.envs.grid import make_benchmark

    out = tmp_path / "tasks.npz"
    make_benchmark.main(["--num-tasks", "300", "--depth", "2", "--chunk", "128", "--out", str(out)])
    assert "wrote 300 tasks" in capsys.readouterr().out
    bench = xland.load_benchmark(out)
    assert bench.num_tasks == 300 and bench.rules.shape[1:] == (4, 7)


def test_room_layout__gaps_cover_their_whole_walls():
    """Two rooms: one gap anywhere along the inner wall (XLand-MiniGrid's R2 draws rows
    [1, h - 1)); it was drawn in the upper half only, so the lower half of the wall was never
    open. Four rooms: one gap in each half-wall, as before."""
    from hordax.envs.grid import layouts

    h = w = 9
    keys = jax.random.split(jax.random.key(0), 512)
    for rooms, want_rows in ((2, set(range(1, h - 1))), (4, set(range(1, h - 1)) - {h // 2})):
        grids = jax.vmap(lambda k, r=rooms: xland.room_layout(layouts.Draws(k, 4), h, w, r))(keys)
        column = np.asarray(grids[:, :, w // 2, 0])  # the vertical inner wall, [512, h]
        open_rows = column == world.FLOOR
        assert set(np.nonzero(open_rows.any(axis=0))[0].tolist()) == want_rows
        assert (open_rows.sum(axis=1) == rooms // 2).all()  # one gap per (half-)wall
