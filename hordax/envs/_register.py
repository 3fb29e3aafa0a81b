"""Registration of hordax's own environments (lazy entry points: no family is imported)."""

from hordax.envs.registry import register

register("Debug-PointMass-v0", "hordax.envs.debug.point_mass:PointMass")
register("Debug-MultiPointMass-v0", "hordax.envs.debug.multi_point_mass:MultiPointMass")
# trading family (hordax/envs/trading): FinRL contest tasks on shipped market data
register("StockTrading-v0", "hordax.envs.trading.stock:StockTrading")
register("StockPortfolio-v0", "hordax.envs.trading.portfolio:StockPortfolio")
register("CryptoTrading-v0", "hordax.envs.trading.crypto:CryptoTrading")

# grid-world family (hordax/envs/grid): MiniGrid layouts, ASCII maps, XLand-style tasks
_GRID = "hordax.envs.grid.env"
for _size in (5, 6, 8, 16):
    register(f"Grid-Empty-{_size}x{_size}-v0", f"{_GRID}:Empty", size=_size)
    register(
        f"Grid-Empty-Random-{_size}x{_size}-v0", f"{_GRID}:Empty", size=_size, random_start=True
    )
    register(f"Grid-DoorKey-{_size}x{_size}-v0", f"{_GRID}:DoorKey", size=_size)
register("Grid-FourRooms-v0", f"{_GRID}:FourRooms")
register("Grid-Unlock-v0", f"{_GRID}:Unlock")
register("Grid-UnlockPickUp-v0", f"{_GRID}:UnlockPickUp")
register("Grid-BlockedUnlockPickUp-v0", f"{_GRID}:BlockedUnlockPickUp")
register("Grid-LockedRoom-v0", f"{_GRID}:LockedRoom")
for _size in (8, 16, 32, 64):
    register(f"Grid-Memory-S{_size}-v0", f"{_GRID}:Memory", size=_size)
register("Grid-Playground-v0", f"{_GRID}:Playground")
register("Grid-Ascii-v0", "hordax.envs.grid.ascii:AsciiGrid")
_XLAND = "hordax.envs.grid.xland"
register("Grid-XLand-R1-9x9-v0", f"{_XLAND}:XLand", generate=True)
register("Grid-XLand-R4-13x13-v0", f"{_XLAND}:XLand", height=13, width=13, rooms=4, generate=True)
register("Grid-XLand-Trials-R1-9x9-v0", f"{_XLAND}:XLandTrials")
register(  # Harlow-style meta-RL: the first pick-up commits (docs/grid.md)
    "Grid-XLand-Trials-Harlow-R1-7x7-v0",
    f"{_XLAND}:XLandTrials",
    height=7,
    width=7,
    depth=0,
    num_distractor_rules=0,
    num_distractor_objects=1,
    goal_kinds="agent_hold",
    num_tasks=1000,
    observe_outcome=True,
    commit_pickup=True,
    episode_steps=20,
)

# aerial family (hordax/envs/aerial): quadrotors, Lee controllers, depth camera
register("Aerial-Hover-v0", "hordax.envs.aerial.hover:Hover")
register("Aerial-Track-v0", "hordax.envs.aerial.track:Track")
register("Aerial-Navigate-v0", "hordax.envs.aerial.navigate:Navigate")
register("Aerial-MultiHover-v0", "hordax.envs.aerial.multi_hover:MultiHover")

# multi-agent particle worlds (hordax/envs/mpe): PettingZoo MPE's nine scenarios, one factory
# (hordax.envs.mpe's __init__ imports nothing: the scenarios load lazily)
from hordax.envs.mpe import SCENARIOS as _MPE  # noqa: E402

for _continuous in (False, True):
    for _name in _MPE:
        _suffix = "-Continuous" if _continuous else ""
        register(
            f"MPE-{_name}{_suffix}-v0",
            "hordax.envs.mpe.scenarios:make_scenario",
            scenario=_name,
            continuous_actions=_continuous,
        )

# driving family (hordax/envs/driving): real road maps and procedural layouts with generated
# traffic, GPUDrive JSON scenes with log replay. The small id comes first: the contract suite
# runs its full checks on the first id of each class (docs/driving.md).
_DRIVE = "hordax.envs.driving.env"
register(
    "Drive-IntersectionSmall-v0",
    f"{_DRIVE}:Drive",
    scenes=("procedural-intersection",),
    num_agents=4,
    num_background=4,
    max_partners=8,
    max_road_points=32,
    num_variants=4,
)
register("Drive-Intersection-v0", f"{_DRIVE}:Drive", scenes=("procedural-intersection",))
register("Drive-Merge-v0", f"{_DRIVE}:Drive", scenes=("procedural-merge",))
register("Drive-Roundabout-v0", f"{_DRIVE}:Drive", scenes=("procedural-roundabout",))
for _id, _map, _agents in (
    ("USAIntersection", "USA_Intersection-1", 8),
    ("USARoundabout", "USA_Roundabout-1", 8),
    ("DEUMerging", "DEU_Merging-1", 4),
    ("Kackertstrasse", "DEU_Kackertstrasse-1", 8),
    ("Bendplatz", "DEU_AachenBendplatz-1", 8),
    ("AachenBrand", "DEU_AachenBrand-1", 8),
    ("Thiergarten", "DEU_Thiergarten-1", 8),
    ("Neuweiler", "DEU_Neuweiler-1", 8),
    ("DEURoundabout", "DEU_Roundabout-1", 8),
):
    register(
        f"Drive-{_id}-v0",
        f"{_DRIVE}:Drive",
        scenes=(_map,),
        num_agents=_agents,
        num_background=_agents,
    )
register(  # split="train" / "test": four maps to train on, two held out (docs/driving.md)
    "Drive-Maps-v0",
    f"{_DRIVE}:Drive",
    scenes=("USA_Intersection-1", "USA_Roundabout-1", "DEU_Merging-1", "DEU_AachenBrand-1"),
    test_scenes=("DEU_Kackertstrasse-1", "DEU_AachenBendplatz-1"),
    num_agents=4,
    num_background=4,
)
register("Drive-GPUDriveJSON-v0", f"{_DRIVE}:DriveLog")

# manipulation family (hordax/envs/manipulation): MuJoCo MJX arms (docs/manipulation.md)
register("Manip-Reach-v0", "hordax.envs.manipulation.reach:Reach")
register("Manip-HandSphereRotate-v0", "hordax.envs.manipulation.hand:SphereRotate")
register("Manip-HandCubeRotateZ-v0", "hordax.envs.manipulation.hand:CubeRotateZ")
register("Manip-Push-v0", "hordax.envs.manipulation.push:Push")
