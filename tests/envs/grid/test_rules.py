"""Hand-written expected transitions for every rule and goal kind (rules.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hordax.envs.grid import ascii as ascii_maps
from hordax.envs.grid import rules, world

BALL_R = (world.BALL, world.RED)
SQUARE_B = (world.SQUARE, world.BLUE)
STAR_O = (world.STAR, world.ORANGE)
HEX_G = (world.HEX, world.GREEN)

_apply = jax.jit(rules.apply_rules)
_check = jax.jit(rules.check_goal)

# agent '>' at (2, 2); ball (red) east of it at (2, 3); square (blue) at (1, 4) above (2, 4)
MAP = "#######\n#...S.#\n#.>B..#\n#.....#\n#######"


def _state(text=MAP, carry=(0, 0)):
    grid, pos, _ = ascii_maps.parse_ascii(text)
    return jnp.asarray(grid), jnp.asarray(pos), jnp.asarray(carry, jnp.uint8)


def _run_rule(rule, text=MAP, carry=(0, 0)):
    grid, pos, c = _state(text, carry)
    g, c = _apply(jnp.asarray(rule)[None], grid, pos, c)
    return np.asarray(g), tuple(np.asarray(c).tolist())


def test_rule__agent_hold():
    """AgentHold(ball) -> star: the carried ball turns into a star; anything else stays."""
    r = rules.rule(rules.R_AGENT_HOLD, *BALL_R, prod=STAR_O)
    assert _run_rule(r, carry=BALL_R)[1] == STAR_O
    assert _run_rule(r, carry=SQUARE_B)[1] == SQUARE_B
    assert _run_rule(r)[1] == (0, 0)


def test_rule__agent_near_any_and_directional():
    """AgentNear(ball) -> star fires for the ball east of the agent; Right too, Up does not."""
    grid, _ = _run_rule(rules.rule(rules.R_AGENT_NEAR, *BALL_R, prod=STAR_O))
    assert tuple(grid[2, 3]) == STAR_O
    grid, _ = _run_rule(rules.rule(rules.R_AGENT_NEAR_RIGHT, *BALL_R, prod=STAR_O))
    assert tuple(grid[2, 3]) == STAR_O
    for kind in (rules.R_AGENT_NEAR_UP, rules.R_AGENT_NEAR_DOWN, rules.R_AGENT_NEAR_LEFT):
        grid, _ = _run_rule(rules.rule(kind, *BALL_R, prod=STAR_O))
        assert tuple(grid[2, 3]) == BALL_R, kind
    # the square two cells away is not near
    grid, _ = _run_rule(rules.rule(rules.R_AGENT_NEAR, *SQUARE_B, prod=STAR_O))
    assert tuple(grid[1, 4]) == SQUARE_B


def test_rule__tile_near_any_and_directional():
    """TileNear(square, ball) -> hex: the square becomes a hex, the ball floor.

    Here the ball is at (2, 3) and the square at (1, 4): diagonal, so not near; after moving
    the ball to (2, 4) (below the square) TileNear and TileNearDown(square, ball) fire.
    """
    r_any = rules.rule(rules.R_TILE_NEAR, *SQUARE_B, *BALL_R, prod=HEX_G)
    grid, _ = _run_rule(r_any)
    assert tuple(grid[1, 4]) == SQUARE_B and tuple(grid[2, 3]) == BALL_R
    near = "#######\n#...S.#\n#.>.B.#\n#.....#\n#######"
    grid, _ = _run_rule(r_any, near)
    assert tuple(grid[1, 4]) == HEX_G and grid[2, 4, 0] == world.FLOOR
    grid, _ = _run_rule(rules.rule(rules.R_TILE_NEAR_DOWN, *SQUARE_B, *BALL_R, prod=HEX_G), near)
    assert tuple(grid[1, 4]) == HEX_G and grid[2, 4, 0] == world.FLOOR
    for kind in (rules.R_TILE_NEAR_UP, rules.R_TILE_NEAR_RIGHT, rules.R_TILE_NEAR_LEFT):
        grid, _ = _run_rule(rules.rule(kind, *SQUARE_B, *BALL_R, prod=HEX_G), near)
        assert tuple(grid[1, 4]) == SQUARE_B and tuple(grid[2, 4]) == BALL_R, kind
    # the mirrored rule TileNearUp(ball, square): the ball becomes the hex
    grid, _ = _run_rule(rules.rule(rules.R_TILE_NEAR_UP, *BALL_R, *SQUARE_B, prod=HEX_G), near)
    assert tuple(grid[2, 4]) == HEX_G and grid[1, 4, 0] == world.FLOOR


def test_rule__empty_rule_and_chain_order():
    """Kind 0 does nothing; rules apply in order (hold ball -> star, then star -> hex)."""
    grid0, pos, c = _state(carry=BALL_R)
    g, c2 = _apply(jnp.zeros((3, 7), jnp.int32), grid0, pos, c)
    np.testing.assert_array_equal(g, grid0)
    assert tuple(np.asarray(c2)) == BALL_R
    chain = np.stack(
        [
            rules.rule(rules.R_AGENT_HOLD, *BALL_R, prod=STAR_O),
            rules.rule(rules.R_AGENT_HOLD, *STAR_O, prod=HEX_G),
        ]
    )
    _, c3 = _apply(jnp.asarray(chain), grid0, pos, c)
    assert tuple(np.asarray(c3)) == HEX_G


GOALS = [
    # (goal, carry, expected) on MAP: agent (2, 2) east of nothing; ball at (2, 3); square (1, 4)
    (rules.goal(rules.G_AGENT_HOLD, *BALL_R), BALL_R, True),
    (rules.goal(rules.G_AGENT_HOLD, *BALL_R), SQUARE_B, False),
    (rules.goal(rules.G_AGENT_ON_TILE, world.FLOOR, 0), (0, 0), True),
    (rules.goal(rules.G_AGENT_ON_TILE, world.GOAL, world.GREEN), (0, 0), False),
    (rules.goal(rules.G_AGENT_NEAR, *BALL_R), (0, 0), True),
    (rules.goal(rules.G_AGENT_NEAR, *SQUARE_B), (0, 0), False),
    (rules.goal(rules.G_AGENT_NEAR_RIGHT, *BALL_R), (0, 0), True),
    (rules.goal(rules.G_AGENT_NEAR_UP, *BALL_R), (0, 0), False),
    (rules.goal(rules.G_AGENT_NEAR_DOWN, *BALL_R), (0, 0), False),
    (rules.goal(rules.G_AGENT_NEAR_LEFT, *BALL_R), (0, 0), False),
    (rules.goal(rules.G_TILE_NEAR, *SQUARE_B, *BALL_R), (0, 0), False),  # diagonal only
    (rules.goal(rules.G_TILE_ON_POSITION, *SQUARE_B, 1, 4), (0, 0), True),
    (rules.goal(rules.G_TILE_ON_POSITION, *SQUARE_B, 2, 4), (0, 0), False),
    (rules.goal(rules.G_AGENT_ON_POSITION, 2, 2), (0, 0), True),
    (rules.goal(rules.G_AGENT_ON_POSITION, 2, 3), (0, 0), False),
    (rules.goal(rules.G_EMPTY), BALL_R, False),
]

NEAR = "#######\n#...S.#\n#.>.B.#\n#.....#\n#######"  # square (1, 4) above ball (2, 4)
GOALS_NEAR = [
    (rules.goal(rules.G_TILE_NEAR, *SQUARE_B, *BALL_R), True),
    (rules.goal(rules.G_TILE_NEAR, *BALL_R, *SQUARE_B), True),
    (rules.goal(rules.G_TILE_NEAR_DOWN, *SQUARE_B, *BALL_R), True),
    (rules.goal(rules.G_TILE_NEAR_UP, *BALL_R, *SQUARE_B), True),
    (rules.goal(rules.G_TILE_NEAR_UP, *SQUARE_B, *BALL_R), False),
    (rules.goal(rules.G_TILE_NEAR_LEFT, *SQUARE_B, *BALL_R), False),
    (rules.goal(rules.G_TILE_NEAR_RIGHT, *SQUARE_B, *BALL_R), False),
    (rules.goal(rules.G_AGENT_NEAR, *BALL_R), False),  # two cells east
]


@pytest.mark.parametrize(("goal", "carry", "expected"), GOALS)
def test_goal__on_hand_built_state(goal, carry, expected):
    """Each goal kind is met exactly in the hand-built situations."""
    grid, pos, c = _state(carry=carry)
    assert bool(_check(jnp.asarray(goal), grid, pos, c)) is expected


@pytest.mark.parametrize(("goal", "expected"), GOALS_NEAR)
def test_goal__tile_near_kinds(goal, expected):
    """TileNear and its directions: (c, d) in that direction of (a, b)."""
    grid, pos, c = _state(NEAR)
    assert bool(_check(jnp.asarray(goal), grid, pos, c)) is expected
