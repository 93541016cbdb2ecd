"""The package's import graph: every import of one st_static module by another (at module level or inside a
function; and with the imports made for annotations, under ``TYPE_CHECKING``, as well) points one way, so the layers
can be read bottom-up."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "st_static"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: set[str], type_checking: bool = False) -> set[str]:
    """The st_static modules ``path`` imports (the longest known prefix of each imported name); with
    ``type_checking``, those imported for annotations only (under ``if TYPE_CHECKING:``) too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_checking = (
        set()
        if type_checking
        else {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for statement in block.body
            for node in ast.walk(statement)
        }
    )
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_checking:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif is_import_call(node):  # importlib.import_module("st_static.x"): an import made on first use
            names = [node.args[0].value]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name.startswith("st_static"):
                found.add(name)
    return found


def is_import_call(node: ast.AST) -> bool:
    """Whether ``node`` is ``importlib.import_module("...")`` (or ``import_module("...")``) with a constant name."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
        return False
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    return name in ("import_module", "__import__") and isinstance(node.args[0].value, str)


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    known = set(paths)
    graph = {}
    for name, path in paths.items():
        # "st_static" itself imports nothing at import time (its names load lazily), so every module may use it.
        imported = imported_modules(path, known, type_checking)
        graph[name] = {other for other in imported if other not in (name, "st_static")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if state.get(other) == 1:
                return [*stack[stack.index(other) :], other]
            if other not in state and (cycle := visit(other)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_module_imports_its_way_back_to_itself():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def test_no_circle_even_through_imports_made_for_annotations():
    # An import under TYPE_CHECKING never runs, but a reader (and a type checker) follows it all the same: the stages'
    # base once named ExtractionStage through stages/extraction.py, which imports the base.
    cycle = find_cycle(import_graph(type_checking=True))
    assert cycle is None, " -> ".join(cycle)


def test_imports_for_annotations_are_edges_only_when_asked_for(tmp_path):
    module = tmp_path / "typed.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from st_static.stages.extraction import Extraction\n"
    )
    known = {"st_static", "st_static.stages", "st_static.stages.extraction"}
    assert imported_modules(module, known) == set()
    assert imported_modules(module, known, type_checking=True) == {"st_static.stages.extraction"}


def test_the_graph_search_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_imports_made_on_first_use_are_edges_of_the_graph(tmp_path):
    module = tmp_path / "lazy.py"
    module.write_text(
        "import importlib\n\ndef __getattr__(name):\n"
        "    return getattr(importlib.import_module('st_static.extraction.teacher_model'), name)\n"
    )
    known = {"st_static", "st_static.extraction", "st_static.extraction.teacher_model"}
    assert imported_modules(module, known) == {"st_static.extraction.teacher_model"}


@pytest.mark.parametrize("order", ["forward", "backward"])
def test_every_module_imports_in_a_fresh_interpreter(order):
    names = sorted(name for name in import_graph() if not name.endswith("__main__"))  # __main__ runs the CLI
    names = names if order == "forward" else names[::-1]
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    subprocess.run([sys.executable, "-c", script, *names], check=True, timeout=600)


OLD_BUILD_PATHS = {
    "st_static.build.pipeline": "st_static.pipeline.run",
    "st_static.build.publish": "st_static.pipeline.publish",
    "st_static.build.distill_api": "st_static.pipeline.distill_api",
}


def test_the_old_build_paths_are_the_new_modules_with_a_deprecation_warning():
    script = """
import importlib, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import st_static.build
    import st_static.build.publish
    from st_static.build.pipeline import run_pipeline, stage_key
    from st_static.build.distill_api import distill
assert [w.category for w in caught] == [DeprecationWarning], [str(w.message) for w in caught]
assert "st_static.pipeline" in str(caught[0].message)
import st_static.pipeline
import st_static.pipeline.distill_api, st_static.pipeline.publish, st_static.pipeline.run
assert st_static.build.build is st_static.pipeline.publish.build is st_static.pipeline.build
assert st_static.build.distill is distill is st_static.pipeline.distill_api.distill is st_static.distill
assert run_pipeline is st_static.pipeline.run.run_pipeline and stage_key is st_static.pipeline.run.stage_key
for old, new in dict(sys.argv[1:][i : i + 2] for i in range(0, len(sys.argv) - 1, 2)).items():
    assert importlib.import_module(old) is importlib.import_module(new) is sys.modules[old], old
assert st_static.build.publish is st_static.pipeline.publish  # monkeypatching the old module patches the new one
"""
    pairs = [name for pair in OLD_BUILD_PATHS.items() for name in pair]
    subprocess.run([sys.executable, "-c", script, *pairs], check=True, timeout=600)


def test_the_library_and_its_scripts_use_only_the_new_paths():
    modules = sorted(name for name in import_graph() if not name.startswith("st_static.build"))
    modules = [name for name in modules if not name.endswith("__main__")]
    script = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
import st_static
st_static.distill, st_static.encode
assert "st_static.build" not in sys.modules, "a module imported the deprecated st_static.build"
"""
    subprocess.run([sys.executable, "-c", script, *modules], check=True, timeout=600)
    root = PACKAGE.parent
    users = [root / "README.md", root / "DEVELOPING.md", *(root / "scripts").rglob("*")]
    users += [*(root / "benchmarks").rglob("*.py"), *(root / "tests").rglob("*.py")]
    old_path = re.compile(r"""(\bfrom |\bimport |["'])st_static\.build\b""")
    old = [
        str(path.relative_to(root))
        for path in users
        if path.is_file() and path.name != "test_imports.py" and old_path.search(path.read_text(errors="ignore"))
    ]
    assert not old, f"still importing st_static.build (now st_static.pipeline): {old}"
