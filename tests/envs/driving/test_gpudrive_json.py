"""GPUDrive JSON scenes: the loader round-trips the shipped scene, the env replays its log,
and malformed scenes, maps without lanes and too many agents get one clear error naming the
file (or map) and the field."""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest

import hordax
from hordax.envs.driving import gpudrive_json as gj
from hordax.envs.driving.env import Drive, DriveLog
from hordax.envs.driving.roadgraph import Lanelet, build_map


def _raw() -> dict:
    with open(gj.EXAMPLE) as f:
        return json.load(f)


def test_json__round_trip_of_the_shipped_scene(tmp_path):
    scene = gj.load(gj.EXAMPLE)
    raw = _raw()
    assert len(scene.kind) == len(raw["objects"]) == 6 and len(scene.roads) == len(raw["roads"])
    o = raw["objects"][5]  # the cyclist, invalid for its first 10 steps
    assert scene.kind[5] == "cyclist" and not scene.valid[5, 9] and scene.valid[5, 10]
    assert scene.pos[5, 40].tolist() == [o["position"][40]["x"], o["position"][40]["y"]]
    assert scene.heading[2, 7] == raw["objects"][2]["heading"][7]
    assert scene.expert.tolist() == [False, False, False, True, False, False]
    path = tmp_path / "again.json"
    path.write_text(json.dumps(gj.dump(scene)))
    again = gj.load(str(path))
    for field in ("pos", "vel", "heading", "valid", "size", "goal", "expert"):
        a, b = getattr(scene, field), getattr(again, field)
        if field in ("pos", "vel", "heading"):  # placeholders of invalid steps are not kept
            a, b = a[scene.valid], b[scene.valid]
        np.testing.assert_array_equal(a, b)
    assert again.kind == scene.kind and again.ids == scene.ids
    for (p, t, i), (q, u, j) in zip(scene.roads, again.roads, strict=True):
        np.testing.assert_array_equal(p, q)
        assert (t, i) == (u, j)


def test_json__env_slots_and_log_replay():
    env = DriveLog(num_agents=4, max_objects=8, max_partners=4, max_road_points=16)
    params = env.default_params
    sc = jax.tree.map(lambda x: np.asarray(x[0]), params.scenes)
    # controlled: the three vehicles not marked expert; slot 3 padding; then expert, ped, cyclist
    assert sc.controlled.tolist() == [True, True, True] + [False] * 5
    assert sc.kind.tolist() == [1, 1, 1, 0, 1, 2, 3, 0]
    raw = _raw()
    scene = gj.load(gj.EXAMPLE)
    offset = scene.pos[scene.valid].mean(0)
    obs, state = env.reset(jax.random.key(0), params)
    assert np.asarray(state.active).tolist() == [True, True, True, False]
    step = jax.jit(env.step)
    action = np.full(4, 3 + 7 * 6, np.int32)  # accel 0, straight (index 6 * 7 + 3)
    for t in range(1, 15):
        obs, state, reward, term, trunc, info = step(jax.random.key(t), state, action, params)
        for slot, obj in ((4, 3), (5, 4), (6, 5)):
            o = raw["objects"][obj]
            assert bool(state.exists[slot]) == o["valid"][t]
            if o["valid"][t]:
                want = np.array([o["position"][t]["x"], o["position"][t]["y"]]) - offset
                np.testing.assert_allclose(np.asarray(state.pos[slot]), want, atol=1e-4)
        assert float(reward[3]) == 0.0 and not bool(info["agent_mask"][3])  # padding slot


def test_json__unset_and_other_objects_load_and_are_not_simulated(tmp_path):
    """GPUDrive's Waymo converter writes WOMD's TYPE_UNSET / TYPE_OTHER tracks as objects
    typed 'unset' / 'other'; GPUDrive reads them as invalid objects. Such a file loads (it
    was refused: "objects[6].type = 'other': must be one of ...") and those objects take no
    slot, so the env's arrays are those of the file without them."""
    data = _raw()
    for name in ("other", "unset"):
        extra = json.loads(json.dumps(data["objects"][4]))  # the pedestrian, retyped
        extra.update(type=name, id=100 + len(data["objects"]))
        data["objects"].append(extra)
    path = tmp_path / "womd.json"
    path.write_text(json.dumps(data))
    assert gj.load(str(path)).kind[6:] == ["other", "unset"]
    env = DriveLog(files=str(path), num_agents=4, max_objects=8, max_partners=4)
    plain = DriveLog(num_agents=4, max_objects=8, max_partners=4)
    got, want = env.default_params.scenes, plain.default_params.scenes
    assert np.asarray(got.kind[0]).tolist() == [1, 1, 1, 0, 1, 2, 3, 0]
    for field in ("valid", "kind", "controlled", "size", "goal"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))


def test_json__log_replay_refuses_another_time_step():
    """The logs advance one 0.1 s step per env step whatever params.dt is, so another dt
    would move the controlled agents at another rate than the replayed objects around them
    (dt=0.05: half as far per logged step); it is refused where params are checked
    (make's overrides included), naming the field."""
    env = DriveLog(max_partners=4, max_road_points=16)
    env.validate_params(env.default_params)
    for dt in (0.05, 0.2):
        with pytest.raises(ValueError, match=rf"params\.dt={dt}: must be 0\.1 s"):
            env.validate_params(env.default_params.replace(dt=dt))
    with pytest.raises(ValueError, match=r"params\.dt=0\.2: must be 0\.1 s"):
        hordax.make("Drive-GPUDriveJSON-v0", dt=0.2, max_partners=4, max_road_points=16)


def test_json__an_agent_starting_within_the_goal_radius_is_not_spawned():
    """The controlled agents are picked at construction with the default 2 m radius; with a
    larger params.goal_radius an agent may start within it. It was spawned and "reached"
    its goal on its first step without driving (reward 1, goal_rate 1/3 here); now it is not
    spawned: masked, reward 0, out of the metrics, left at its start as an obstacle."""
    env = DriveLog(num_agents=4, max_objects=8, max_partners=4, max_road_points=16)
    params = env.default_params.replace(goal_radius=50.0)  # agent 2 starts 45 m from its goal
    obs, state = env.reset(jax.random.key(0), params)
    dist = np.asarray(state.goal_dist)
    assert dist[0] > 50.0 and dist[1] > 50.0 and dist[2] < 50.0
    assert np.asarray(state.active).tolist() == [True, True, False, False]
    assert bool(state.exists[2])  # still in the scene, where the log starts it, standing
    np.testing.assert_array_equal(np.asarray(state.vel[2]), 0.0)
    coast = np.full(4, 3 + 7 * 6, np.int32)
    obs, nxt, reward, term, trunc, info = jax.jit(env.step)(jax.random.key(1), state, coast, params)
    assert np.asarray(reward).tolist() == [0.0, 0.0, 0.0, 0.0]
    assert not np.asarray(info["agent_terminated"]).any()
    assert float(info["metrics"]["goal_rate"]) == 0.0
    np.testing.assert_array_equal(np.asarray(nxt.pos[2]), np.asarray(state.pos[2]))


def test_json__an_agent_logged_faster_than_max_speed_is_not_snapped_down():
    """The bicycle models cap the speed at params.max_speed by limiting the acceleration;
    an agent whose log starts faster (agent 0 at 8 m/s, max_speed 5) was forced down to the
    cap in one step: a -30 m/s^2 step that the env itself then flagged kinematically
    infeasible. Now it cannot speed up past the cap but keeps its speed unless it brakes."""
    env = DriveLog(num_agents=4, max_objects=8, max_partners=4, max_road_points=16)
    params = env.default_params.replace(max_speed=5.0, init_speed_max=5.0)
    grid = np.asarray(env.action_grid(params))
    coast, full = (int(np.argmin(np.hypot(grid[:, 0] - a, grid[:, 1]))) for a in (0.0, 4.0))
    _, state = env.reset(jax.random.key(0), params)
    step = jax.jit(env.step)
    for a, want in ((coast, 8.0), (full, 8.0)):
        action = np.array([a, coast, coast, coast], np.int32)
        _, nxt, _, _, _, info = step(jax.random.key(1), state, action, params)
        assert abs(float(np.hypot(*np.asarray(nxt.vel[0]))) - want) < 1e-4
        assert not np.asarray(info["reward_terms"]["infeasible"]).any()


def _write(tmp_path, data, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def _edit(fn):
    data = _raw()
    fn(data)
    return data


BAD = [
    (lambda d: d["objects"][0].pop("heading"), r"bad\.json: objects\[0\]\.heading: missing"),
    (lambda d: d.pop("roads"), r"bad\.json: roads: missing"),
    (
        lambda d: d["objects"][1]["velocity"].pop(),
        r"objects\[1\]\.velocity: has 90 entries, expected 91",
    ),
    (
        lambda d: d["objects"][2]["position"].pop(),
        r"objects\[2\]\.position: has 90 entries, expected 91",
    ),
    (
        lambda d: d["objects"][2]["position"][5].update(x=math.nan),
        r"objects\[2\]\.position\[5\]\.x: = nan: must be a finite number",
    ),
    (lambda d: d["objects"][0]["heading"].__setitem__(3, "north"), r"objects\[0\]\.heading\[3\]"),
    (lambda d: d["objects"][4].update(type="tram"), r"objects\[4\]\.type: = 'tram'"),
    (lambda d: d["roads"][2].update(type="rail"), r"roads\[2\]\.type: = 'rail'"),
    (lambda d: d["roads"][1]["geometry"][0].pop("y"), r"roads\[1\]\.geometry\[0\]\.y: missing"),
    (lambda d: d["objects"][3].update(length=-1), r"objects\[3\]\.length/width"),
    (
        lambda d: [o.update(mark_as_expert=True) for o in d["objects"]],
        r"bad\.json: objects: no controllable vehicle",
    ),
]


@pytest.mark.parametrize(("edit", "match"), BAD)
def test_json__malformed_scenes_name_the_file_and_field(tmp_path, edit, match):
    path = _write(tmp_path, _edit(edit))
    with pytest.raises(ValueError, match=match):
        DriveLog(files=path, max_partners=4, max_road_points=16)


def test_json__not_json_and_too_many_objects(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"objects": [')
    with pytest.raises(ValueError, match=r"broken\.json: <file>: not valid JSON"):
        DriveLog(files=str(path))
    with pytest.raises(
        ValueError,
        match=r"example_scene\.json: objects: 3 objects besides the 4 "
        r"agent slots, but max_objects=6",
    ):
        DriveLog(max_objects=6)


def test_maps__zero_lanes_and_more_agents_than_slots():
    sidewalk = Lanelet(
        left=np.array([[0.0, 1.0], [10.0, 1.0]]),
        right=np.array([[0.0, -1.0], [10.0, -1.0]]),
        drivable=False,
    )
    with pytest.raises(ValueError, match=r"map 'empty': no drivable lanelets \(lanes: 0\)"):
        build_map("empty", [sidewalk])
    with pytest.raises(
        ValueError,
        match=r"params\.scenes\.lanes\.spawn_valid=<9 slots>: more "
        r"agents than spawn slots: num_agents=12",
    ):
        Drive(scenes="DEU_Merging-1", num_agents=12, num_background=0)
    with pytest.raises(ValueError, match=r"scenes: 'Atlantis' is not a shipped map"):
        Drive(scenes="Atlantis")
    with pytest.raises(ValueError, match=r"discrete actions need dynamics 'classic' or 'bicycle'"):
        Drive(dynamics="delta_local")


def test_maps__a_goal_radius_that_reaches_the_nearest_goals_is_refused():
    """Goals are drawn 15-45 m along the route: a radius of 20 m would credit an agent whose
    goal was drawn within it with its goal on the first step, without driving."""
    with pytest.raises(
        ValueError, match=r"params\.goal_radius=20\.0: must be < params\.goal_min_distance=15\.0"
    ):
        hordax.make("Drive-IntersectionSmall-v0", goal_radius=20.0)
