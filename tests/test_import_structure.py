"""The import structure of ``hordax/``, read from the code (the AST of every module, every
import statement: top-level, function-local and ``TYPE_CHECKING`` ones alike):

- no import circle anywhere in ``hordax/``;
- imports run one way between the layers of :data:`LAYERS` (a module imports its own layer
  and the layers below it, never one above);
- an env family never imports another family.

``docs/training.md`` draws the layers of ``hordax/training``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hordax"

#: Module prefixes, lowest layer first; a module belongs to the longest prefix it starts with.
LAYERS = (
    ("hordax.validation", "hordax.strict_json"),
    ("hordax.envs", "hordax"),  # the root package only re-exports hordax.envs
    ("hordax.testing",),
    ("hordax.benchmarking",),
    ("hordax.agents",),
    ("hordax.training.core",),
    ("hordax.training.config",),
    ("hordax.training.trainers",),
    ("hordax.training.host",),
    ("hordax.training.ensemble",),
    ("hordax.training.evaluation",),
    ("hordax.training",),  # the command-line apps: cli, bench, backtest
)

#: Subpackages of hordax.envs that are shared by every family, not families themselves.
SHARED_ENV_PACKAGES = {"wrappers"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The hordax modules that ``name`` imports: ``from a.b import c`` names ``a.b.c`` if it
    is a module, else ``a.b``; relative imports resolved against the module's package."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # ``import a.b.c`` of a module attribute
                target = target.rpartition(".")[0]
            if target.startswith("hordax") and target != name:
                out.add(target)
    return out


def layer_of(name: str) -> int:
    best, level = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    assert level >= 0, f"{name} is in no layer of LAYERS"
    return level


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def test_imports__no_circle_anywhere(graph):
    """Depth-first search for a back edge; the message names the circle."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circle = [*stack[stack.index(nxt) :], nxt]
                pytest.fail("import circle: " + " -> ".join(circle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_imports__layers_import_downward_only(graph):
    upward = [
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
        for a, targets in graph.items()
        for b in sorted(targets)
        if layer_of(b) > layer_of(a)
    ]
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def _family(name: str) -> str | None:
    parts = name.split(".")
    if len(parts) >= 3 and parts[:2] == ["hordax", "envs"]:
        path = PACKAGE / "envs" / parts[2]
        if path.is_dir() and parts[2] not in SHARED_ENV_PACKAGES:
            return parts[2]
    return None


def test_imports__env_families_import_no_other_family(graph):
    crossing = [
        f"{a} imports {b}"
        for a, targets in graph.items()
        for b in sorted(targets)
        if _family(a) and _family(b) and _family(a) != _family(b)
    ]
    assert not crossing, "\n".join(crossing)


def test_imports__the_checks_can_fail():
    """The circle search and the layer rule see a planted circle and an upward import."""
    with pytest.raises(pytest.fail.Exception, match="hordax.a -> hordax.b -> hordax.a"):
        test_imports__no_circle_anywhere({"hordax.a": {"hordax.b"}, "hordax.b": {"hordax.a"}})
    upward = {"hordax.training.core.rollout": {"hordax.training.host.loop"}}
    with pytest.raises(AssertionError, match="core.rollout .* imports hordax.training.host"):
        test_imports__layers_import_downward_only({**upward, "hordax.training.host.loop": set()})
    assert _family("hordax.envs.grid.env") == "grid" and _family("hordax.envs.wrappers") is None
