"""The front-end and the benchmark harness (asv_bench/scatterx_bench): no import circle;
nothing changed at import of the harness.

The import graph is read from the source with :mod:`ast`, every import counted, those inside
functions too: an import moved into a function hides a circle from Python, not from a reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from _subprocess import run_python

PACKAGE = "scatterx_bench"
ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "asv_bench" / PACKAGE
FRONT_END = ROOT / "src" / "scatterx"
Graph = dict[str, set[str]]


def harness_imports(source: str, module: str, package: str = PACKAGE) -> set[str]:
    """The modules of ``package`` that the source of its module ``module`` imports, anywhere."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(_inside(alias.name, package) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level > 1:
                msg = f"{module}: an import from above the harness ({'.' * node.level})"
                raise ValueError(msg)
            base = node.module if node.level == 0 else f"{package}.{node.module or ''}"
            if base is None:
                continue
            base = base.rstrip(".")
            found.add(_inside(base, package))
            if base == package:  # from . import cases: the names are modules
                found.update(alias.name for alias in node.names)
    return found - {"", module}


def _inside(name: str, package: str) -> str:
    """``cases`` for ``scatterx_bench.cases``; ``""`` for a module outside the package."""
    first, _, rest = name.partition(".")
    return rest.partition(".")[0] if first == package else ""


def import_graph(folder: Path) -> Graph:
    """Module -> the modules of the package ``folder`` it imports, for each of its modules."""
    modules = {path.stem: path for path in sorted(folder.glob("*.py"))}
    graph = {
        name: harness_imports(path.read_text(), name, folder.name) for name, path in modules.items()
    }
    graph.pop("__init__", None)
    for targets in graph.values():
        targets.discard("__init__")
    return graph


def find_cycle(graph: Graph) -> list[str] | None:
    """One import circle of ``graph``, as ``[a, b, ..., a]``; None when there is none."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(graph.get(node, ())):
            cycle = visit(target, [*path, node])
            if cycle is not None:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle is not None:
            return cycle
    return None


def test_the_harness_has_no_import_circle() -> None:
    graph = import_graph(HARNESS)
    assert {"cases", "peers", "cli", "dask_bench", "libraries"} <= set(graph)
    assert "cases" in graph["cli"]  # the graph holds the harness's imports
    cycle = find_cycle(graph)
    assert cycle is None, f"import circle in {HARNESS}: {' -> '.join(cycle or [])}"


def test_nothing_installed_reaches_up_into_the_harness() -> None:
    # The harness imports scatterx, never the other way round: no module of src/ or
    # backends/ names it, not even as a string for importlib (python -m scatterx bench was
    # the last that did; the harness's command is python asv_bench/bench.py).
    sources = [*(ROOT / "src").rglob("*.py"), *(ROOT / "backends").rglob("*.py")]
    assert len(sources) > 20
    naming = sorted(str(p.relative_to(ROOT)) for p in sources if PACKAGE in p.read_text())
    assert not naming, naming


def front_end_graph(folder: Path = FRONT_END) -> Graph:
    """Room -> the rooms of the front-end it imports: a room is a module of the package, or
    one of its sub-packages as a whole (``libraries``, ``_check``, ``_torch``...)."""
    graph: Graph = {}
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        room = parts[0]
        package = [folder.name, *parts[:-1]]
        found = graph.setdefault(room, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - node.level + 1]
                names = [*base, *(node.module or "").split(".")] if node.module else base
                targets = [names] if node.module else [[*names, a.name] for a in node.names]
                found.update(t[1] for t in targets if len(t) > 1)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                modules = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                found.update(
                    m.split(".")[1] for m in modules if m.startswith(f"{folder.name}.") and "." in m
                )
        found.discard(room)
        found.discard("__init__")
    graph.pop("__init__", None)
    return graph


def test_the_front_end_has_no_import_circle() -> None:
    graph = front_end_graph()
    assert {"_api", "_pipeline", "_plan", "_check", "_adopt", "libraries", "_torch"} <= set(graph)
    assert "_pipeline" in graph["_api"]
    assert "_run" in graph["_torch"]  # a host enters below the pipeline
    assert "_pipeline" not in graph["_torch"] | graph["_jax"]
    cycle = find_cycle(graph)
    assert cycle is None, f"import circle in {FRONT_END}: {' -> '.join(cycle or [])}"


def test_the_front_ends_modules_are_under_400_lines() -> None:
    long = {
        str(path.relative_to(FRONT_END)): n
        for path in sorted(FRONT_END.rglob("*.py"))
        if (n := len(path.read_text().splitlines())) >= 400
    }
    assert not long, long


def test_an_import_inside_a_function_closes_a_circle() -> None:
    # The circles the harness had: cases imported the peers inside build_call, and the
    # libraries imported dask_bench inside to_library; both modules imported back at the top.
    cases = "from .peers import PEERS\n"
    peers = "from .cases import FLOOR\ndef later():\n    from scatterx_bench import cli\n"
    dask = "import numpy\nfrom .libraries import paired_ms\n"
    libraries = "def to_library():\n    from .dask_bench import to_dask\n"
    graph = {
        "cases": harness_imports(cases, "cases"),
        "peers": harness_imports(peers, "peers"),
        "dask_bench": harness_imports(dask, "dask_bench"),
        "libraries": harness_imports(libraries, "libraries"),
    }
    assert graph["peers"] == {"cases", "cli"}
    assert graph["dask_bench"] == {"libraries"}
    assert find_cycle(graph) == ["cases", "peers", "cases"]
    del graph["cases"]
    assert find_cycle(graph) == ["dask_bench", "libraries", "dask_bench"]
    del graph["libraries"]
    assert find_cycle(graph) is None


def test_an_import_from_above_the_harness_is_refused() -> None:
    with pytest.raises(ValueError, match="above the harness"):
        harness_imports("from ..scatterx import _registry\n", "cases")


def test_importing_the_harness_changes_no_environment_variable() -> None:
    modules = sorted(path.stem for path in HARNESS.glob("*.py") if path.stem != "__init__")
    code = (
        "import importlib, os, sys\n"
        "os.environ.pop('SCATTERX_NUMBA_COMPILE', None)\n"
        f"sys.path.insert(0, {str(HARNESS.parent)!r})\n"
        "before = dict(os.environ)\n"
        f"for name in {modules!r}:\n"
        f"    importlib.import_module('{PACKAGE}.' + name)\n"
        "names = {**before, **os.environ}\n"
        "changed = sorted(k for k in names if before.get(k) != os.environ.get(k))\n"
        f"print(all('{PACKAGE}.' + name in sys.modules for name in {modules!r}), changed)\n"
    )
    assert run_python(code).strip() == "True []"
