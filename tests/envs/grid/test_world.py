"""Hand-written transitions of the world core, the ASCII parser, errors and rendering."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.envs.grid import ascii as ascii_maps
from hordax.envs.grid import env as grid_env
from hordax.envs.grid import layouts, render, world

F, L, R, PICK, DROP, TOG = range(6)


def _world(text, colors=None):
    grid, pos, d = ascii_maps.parse_ascii(text, colors)
    return jnp.asarray(grid), jnp.asarray(pos), jnp.asarray(d), jnp.zeros(2, jnp.uint8)


_step = jax.jit(world.step_agent)
_view = jax.jit(world.egocentric_view, static_argnums=(4, 5))


def _run(text, actions, colors=None):
    grid, pos, d, carry = _world(text, colors)
    for a in actions:
        grid, pos, d, carry = _step(grid, pos, d, carry, a)
    return np.asarray(grid), tuple(np.asarray(pos)), int(d), tuple(np.asarray(carry))


def test_world__turns_and_moves():
    """Left/right turn by 90 degrees; forward moves onto floor, not into walls."""
    text = "#####\n#>..#\n#####"
    assert _run(text, [L])[2] == 3 and _run(text, [R])[2] == 1 and _run(text, [L, L, L, L])[2] == 0
    assert _run(text, [F])[1] == (1, 2)
    assert _run(text, [F, F, F, F])[1] == (1, 3)  # the wall stops the agent
    assert _run(text, [R, F])[1] == (1, 1)


def test_world__pick_up_put_down():
    """Pick up the front object into free hands; put down only onto plain floor."""
    text = "######\n#>B.G#\n######"
    grid, pos, _, carry = _run(text, [PICK])
    assert carry == (world.BALL, world.RED) and grid[1, 2, 0] == world.FLOOR
    grid, pos, _, carry = _run(text, [PICK, F, DROP])
    assert pos == (1, 2) and grid[1, 3].tolist() == [world.BALL, world.RED] and carry == (0, 0)
    # hands full: a second pick-up does nothing; put down onto the goal does nothing
    grid, pos, _, carry = _run("######\n#>BS.#\n######", [PICK, F, PICK])
    assert carry == (world.BALL, world.RED) and grid[1, 3, 0] == world.SQUARE
    grid, _, _, carry = _run(text, [PICK, F, F, DROP])
    assert carry == (world.BALL, world.RED) and grid[1, 4, 0] == world.GOAL


def test_world__doors_need_a_key_of_their_colour():
    """A locked door opens only with a same-colour key; closed/open doors toggle."""
    yellow = "#####\n#>KD#\n#####"
    grid, *_ = _run(yellow, [TOG])
    assert grid[1, 3, 0] == world.DOOR_LOCKED  # key on the floor: still locked
    grid, pos, _, carry = _run(yellow, [PICK, F, TOG])
    assert grid[1, 3].tolist() == [world.DOOR_OPEN, world.YELLOW] and carry[0] == world.KEY
    grid, pos, *_ = _run(yellow, [PICK, F, TOG, F])
    assert pos == (1, 3)  # through the open door
    grid, *_ = _run(yellow, [PICK, F, TOG], colors=".....\n..r..\n.....")  # red key
    assert grid[1, 3, 0] == world.DOOR_LOCKED
    grid, *_ = _run("####\n#>C#\n####", [TOG])
    assert grid[1, 2, 0] == world.DOOR_OPEN
    grid, *_ = _run("####\n#>C#\n####", [TOG, TOG])
    assert grid[1, 2, 0] == world.DOOR_CLOSED
    assert _run("####\n#>C#\n####", [F])[1] == (1, 1)  # closed doors block


def test_world__box_opens_and_vanishes():
    """Toggling a box removes it (MiniGrid's empty Box.toggle)."""
    grid, *_ = _run("####\n#>X#\n####", [TOG])
    assert grid[1, 2, 0] == world.FLOOR


def test_world__occlusion():
    """Cells behind a wall are hidden; the agent's cell shows the carried object."""
    text = "#######\n#.....#\n#######\n#.....#\n#..^..#\n#######"
    grid, pos, d, carry = _world(text)
    view = np.asarray(_view(grid, pos, d, carry, 5, False))
    # agent at view (4, 2) facing up; a wall row 2 cells ahead (view row 2)
    assert np.all(view[2, :, 0] == world.WALL)
    assert np.all(view[:2, :, 0] == world.EMPTY)  # the floor behind it is hidden
    assert view[4, 2, 0] == world.FLOOR
    grid, pos, d, carry = _world("####\n#>B#\n####")
    grid, pos, d, carry = _step(grid, pos, d, carry, PICK)
    view = np.asarray(_view(grid, pos, d, carry, 3, False))
    assert view[2, 1].tolist() == [world.BALL, world.RED]
    see_all = np.asarray(_view(*_world(text), 5, True))
    assert np.all(see_all[1, 1:4, 0] == world.FLOOR)


def test_world__actions_clipped():
    """Out-of-range actions are clipped to [0, 5] (99 acts as toggle, -3 as forward)."""
    a = _run("####\n#>C#\n####", [99])
    assert a[0][1, 2, 0] == world.DOOR_OPEN
    assert _run("#####\n#>..#\n#####", [-3])[1] == (1, 2)


def test_env__reward_and_termination():
    """Reaching the goal on step t gives 1 - 0.9 t / T and terminates; else 0."""
    env, params = hordax.make("Grid-Ascii-v0", ascii_map="#####\n#>.G#\n#####", max_steps=10)
    _, s = env.reset(jax.random.key(0), params)
    _, s, r, term, trunc, info = env.step(jax.random.key(1), s, F, params)
    assert float(r) == 0.0 and not bool(term)
    _, s, r, term, trunc, info = env.step(jax.random.key(2), s, F, params)
    assert bool(term) and not bool(trunc)
    np.testing.assert_allclose(float(r), 1 - 0.9 * 2 / 10, rtol=1e-6)
    assert float(info["metrics"]["success"]) == 1.0


def test_env__memory_failure_terminates_with_zero_reward():
    """Memory: stepping next to the non-matching object ends the episode with reward 0."""
    env = grid_env.Memory(size=8)
    params = env.default_params
    _, s = env.reset(jax.random.key(3), params)
    lose = np.asarray(s.fail[1:3])
    s = s.replace(
        agent_pos=jnp.asarray([3, int(lose[1])], jnp.int32),
        agent_dir=jnp.int32(3 if lose[0] < 3 else 1),
    )
    _, s2, r, term, _ = env.step_env(jax.random.key(0), s, F, params)
    assert tuple(np.asarray(s2.agent_pos)) == tuple(lose)
    assert bool(term) and float(r) == 0.0


def test_ascii__round_trip_and_errors():
    """render_text prints what parse_ascii reads; bad maps name the problem."""
    text = "######\n#>KDG#\n#BSPH#\n#*XCO#\n######"
    env, params = hordax.make("Grid-Ascii-v0", ascii_map=text)
    _, s = env.reset(jax.random.key(0), params)
    assert render.render_text(s).splitlines()[:5] == text.splitlines()
    with pytest.raises(ValueError, match=r"unknown tile '\?' at row 1, col 2"):
        ascii_maps.parse_ascii("####\n#.?#\n####")
    with pytest.raises(ValueError, match="row 1 has 3 characters"):
        ascii_maps.parse_ascii("####\n#.#\n####")
    with pytest.raises(ValueError, match="second agent"):
        ascii_maps.parse_ascii("####\n#><#\n####")
    with pytest.raises(ValueError, match="params.grid has shape"):
        env.validate_params(params.replace(grid=jnp.zeros((3, 3, 2), jnp.uint8)))


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("make", "match"),
    [
        # a 5x9 map: the agent stood outside the grid, or on the wall at (0, 0)
        ({"params": {"agent_pos": [10, 10]}}, r"params\.agent_pos=\[10, 10\]: .*inside"),
        ({"params": {"agent_pos": [0, 0]}}, r"params\.agent_pos=\[0, 0\]: .*wall"),
        ({"params": {"agent_dir": 7}}, r"params\.agent_dir=7: must be -1 .* or 0\.\.3"),
        ({"params": {"goal": [99, 0, 0, 0, 0]}}, r"params\.goal=\[99, 0, 0, 0, 0\]: .*kind"),
        # AgentOnPosition at row 20 of the 5x9 map: clamped to row 4 by check_goal
        ({"params": {"goal": [6, 20, 1, 0, 0]}}, r"params\.goal=\[6, 20, 1, 0, 0\]: .*row"),
        # no agent and no free cell: every reset put the agent on the wall at (0, 0)
        ({"ascii_map": "####\n#GB#\n####", "view_size": 3}, r"ascii_map: no agent .* free"),
    ],
)
def test_ascii__make_rejects_starts_off_the_floor_and_unknown_goals(make, match):
    """An agent start outside the map or on a wall, a direction outside 0..3, a goal kind
    ``check_goal`` does not know (never met) and a map with neither an agent nor a free cell
    to draw one on are refused at make, naming the field; they were accepted."""
    with pytest.raises(ValueError, match=match):
        hordax.make("Grid-Ascii-v0", **make)


def test_ascii__no_agent_means_random_start():
    """Without an agent character every reset draws a free cell and a direction."""
    env, params = hordax.make("Grid-Ascii-v0", ascii_map="#######\n#.....#\n#.....#\n#######")
    assert env.random_reset
    _, states = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), 64), params
    )
    assert len({tuple(p) for p in np.asarray(states.agent_pos)}) > 5
    assert set(np.asarray(states.agent_dir).tolist()) == {0, 1, 2, 3}


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: grid_env.DoorKey(8, view_size=6), "view_size=6: must be an odd"),
        (lambda: grid_env.DoorKey(8, view_size=1), "view_size=1: must be an odd"),
        (lambda: grid_env.DoorKey(5, view_size=11), r"view_size=11: must be <= 2 \* max"),
        (lambda: grid_env.DoorKey(4), "height=4: door_key needs an integer >= 5"),
        (lambda: grid_env.LockedRoom(11), "height=11: locked_room needs"),
        (lambda: grid_env.Memory(size=16, height=8), "height=8: Memory needs an odd height"),
        (lambda: grid_env.Empty(3), "height=3: empty needs"),
        (lambda: hordax.make("Grid-Empty-8x8-v0", view_size=4), "view_size=4"),
    ],
)
def test_env__bad_config_errors(make, match):
    """Even/oversized views and grids too small for a layout raise a ValueError naming them."""
    with pytest.raises(ValueError, match=match):
        make()


def test_render__frames_and_text():
    """render returns uint8[H*16, W*16, 3]; the agent's cell holds its red triangle."""
    env, params = hordax.make("Grid-DoorKey-8x8-v0")
    _, s = env.reset(jax.random.key(0), params)
    frame = env.render(s, params)
    assert frame.dtype == np.uint8 and frame.shape == (8 * 16, 8 * 16, 3)
    r, c = np.asarray(s.agent_pos)
    cell = frame[r * 16 : (r + 1) * 16, c * 16 : (c + 1) * 16]
    assert np.any(np.all(cell == render.PALETTE[world.RED], -1))
    text = render.render_text(s)
    assert text.count("K") == 1 and text.count("D") == 1 and text.count("G") == 1


@pytest.mark.timeout(120)
@pytest.mark.parametrize("v", [3, 5, 7, 9])
def test_visibility__table_equals_the_row_by_row_scan(v):
    """The lookup-table shadow casting gives the scan's mask on random and walled views."""
    key = jax.random.key(v)
    rand = jax.random.bernoulli(key, 0.35, (3000, v, v))
    # sparse views too, where light travels far before a wall stops it
    sparse = jax.random.bernoulli(jax.random.fold_in(key, 1), 0.08, (1000, v, v))
    opaque = jnp.concatenate([rand, sparse]).at[:, v - 1, v // 2].set(False)
    table = jax.jit(jax.vmap(world.visibility_table))(opaque)
    scan = jax.jit(jax.vmap(world.visibility_scan))(opaque)
    np.testing.assert_array_equal(np.asarray(table), np.asarray(scan))
    hidden = float(jnp.mean(~table))
    assert 0.01 < hidden < 0.8  # some cells hidden, most lit


@pytest.mark.timeout(120)
@pytest.mark.parametrize("n", [1, 2, 7, 64, 361, 1444])
def test_kth_true__equals_argmax_of_the_cumulative_sum(n):
    """The two-level prefix sum picks the same cell as one cumulative sum, empty masks too."""
    key = jax.random.key(n)
    masks = jax.random.bernoulli(key, 0.3, (500, n)).at[0].set(False).at[1].set(True)
    u = jax.random.uniform(jax.random.fold_in(key, 1), (500,)).at[2].set(0.0).at[3].set(0.9999)

    def reference(flat, u):
        counts = jnp.cumsum(flat.astype(jnp.int32))
        k = jnp.floor(u * counts[-1]).astype(jnp.int32)
        return jnp.argmax(counts > k)

    got = jax.jit(jax.vmap(layouts.kth_true))(masks, u)
    want = jax.jit(jax.vmap(reference))(masks, u)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("n, k", [(3, 3), (6, 6), (66, 10), (5, 0)])
def test_smallest__equals_a_stable_argsort(n, k):
    """top_k's order is argsort's, ties by index included (coarse values force ties)."""
    x = jax.random.uniform(jax.random.key(n), (400, n))
    for values in (x, jnp.round(x * 4) / 4):
        got = jax.vmap(lambda v: layouts.smallest(v, k))(values)
        want = jnp.argsort(values, axis=-1, stable=True)[:, :k]
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
