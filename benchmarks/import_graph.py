"""The import graph of our own packages: which modules import each other in a circle, and who imports the trainer.

Reads every ``.py`` file under ``metra_gym/`` and ``pretrain/`` with :mod:`ast` (nothing is imported) and records
one edge per import statement (absolute or relative) that names one of our modules, by where it stands:

- *module level*: runs when the importing module is imported (including imports inside ``try`` or ``if`` blocks
  at the top level);
- *function level*: inside a function or method, run when it is first called (a lazy import), including an import
  of the module's own ancestor package (``import metra_gym`` in ``metra_gym.skill_checkpoint.hub``);
- *type checking*: under ``if TYPE_CHECKING:``, read by type checkers only.

Every statement counts as a tie, wherever it stands: a lazy import still makes the two modules depend on each other,
and a type-checking import says that one module's meaning depends on the other's. A circle is a strongly connected
component of more than one module; it is reported for the module-level edges alone and for every import statement,
each with its edges. Modules loaded by name (``importlib.import_module``) are not statements and are not counted.
An edge that runs up the layers (:data:`LAYERS`: metra_gym, then pretrain's config, algorithms, run,
export/evaluation, entry points) is listed as well.
Beside it: for every name that ``pretrain.run.trainer`` is imported for, how many files (also ``tests/``,
``benchmarks/`` and ``examples/``) import it.

    python benchmarks/import_graph.py --label before
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("metra_gym", "pretrain")
READERS = ("metra_gym", "pretrain", "tests", "benchmarks", "examples")  # where importers of the trainer are counted
TRAINER = "pretrain.run.trainer"
# The layers, lowest first: a module may import only modules of its own layer or below (longest prefix wins; the
# package ``pretrain`` itself is the public face, on top). metra_gym, the runtime, is below all of pretrain.
LAYERS = [("metra_gym",), ("pretrain.config",), ("pretrain.algorithms",), ("pretrain.run",),
          ("pretrain.export", "pretrain.evaluation", "pretrain.project_paths"),
          ("pretrain.cli", "pretrain.__main__", "pretrain.sweep", "pretrain.downstream", "pretrain")]


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of a module (of its longest matching prefix)."""
    matches = [(len(prefix), i) for i, prefixes in enumerate(LAYERS) for prefix in prefixes
               if module == prefix or module.startswith(prefix + ".")]
    return max(matches)[1]


def module_name(path: Path) -> str:
    """``pretrain/run/trainer.py`` -> ``pretrain.run.trainer``; a package's ``__init__.py`` -> the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def our_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(tree: ast.Module, package: str = "") -> list[tuple[str, list[str], str]]:
    """``(module, names, level)`` for each import statement; level is "module", "function" or "type_checking".
    A relative import (``from . import x``) is resolved against ``package``, the importing module's package."""
    found: list[tuple[str, list[str], str]] = []

    def absolute(node: ast.ImportFrom) -> str | None:
        if not node.level:
            return node.module
        parts = package.split(".") if package else []
        if node.level - 1 > len(parts):
            return None
        base = parts[: len(parts) - (node.level - 1)]
        return ".".join([*base, *([node.module] if node.module else [])]) or None

    def visit(node: ast.AST, level: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, "function" if level == "module" else level)
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), "type_checking")
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]), level)
            elif isinstance(child, ast.Import):
                found.extend((alias.name, [], level) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and (module := absolute(child)):
                found.append((module, [alias.name for alias in child.names], level))
            else:
                visit(child, level)

    visit(tree, "module")
    return found


def targets(module: str, names: list[str], known: dict[str, Path]) -> list[str]:
    """Our modules an import statement loads: ``from a.b import c`` is ``a.b.c`` where that is a module."""
    if module not in known:
        return []
    submodules = [f"{module}.{name}" for name in names if f"{module}.{name}" in known]
    return submodules if submodules and len(submodules) == len(names) else [module, *submodules]


def strongly_connected(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(edges.get(node, ())):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in nodes:
        if node not in index:
            connect(node)
    return sorted(components)


def shortest_circles(component: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The shortest circle through each module of a component (breadth first), each once: ``[a, b, ..., a]``."""
    found: dict[frozenset[str], list[str]] = {}
    for start in component:
        paths = {start: [start]}
        queue = [start]
        while queue:
            node = queue.pop(0)
            for successor in sorted(edges.get(node, ())):
                if successor == start:
                    circle = [*paths[node], start]
                    found.setdefault(frozenset(circle), circle)
                    queue = []
                    break
                if successor in component and successor not in paths:
                    paths[successor] = [*paths[node], successor]
                    queue.append(successor)
    return sorted(found.values(), key=lambda circle: (len(circle), circle))


def package_of(name: str, path: Path) -> str:
    """The package a relative import in ``name`` (defined in ``path``) is resolved against."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def measure() -> dict:
    known = our_modules()
    levels = ("module", "function", "type_checking")
    edges: dict[str, dict[str, set[str]]] = {level: defaultdict(set) for level in levels}
    counts = dict.fromkeys(levels, 0)
    for name, path in known.items():
        for module, names, level in imports(ast.parse(path.read_text(), str(path)), package_of(name, path)):
            for target in targets(module, names, known):
                if target != name:
                    counts[level] += 1
                    edges[level][name].add(target)
    every = {m: set().union(*(edges[level][m] for level in levels)) for m in known}
    circles = {}
    for label, graph in (("module_level", edges["module"]), ("every_import_statement", every)):
        circles[label] = [
            {"modules": component,
             "shortest_circles": [" -> ".join(circle) for circle in shortest_circles(component, graph)],
             "edges": sorted(f"{a} -> {b}" + next((f" ({level.replace('_', ' ')})" for level in levels[1:]
                                                    if b in edges[level][a] and b not in edges["module"][a]), "")
                             for a in component for b in graph.get(a, ()) if b in component)}
            for component in strongly_connected(sorted(known), graph)]
    upward = sorted(f"{a} -> {b}" for a in known for b in every[a] if layer_of(b) > layer_of(a))
    trainer_names: dict[str, set[str]] = defaultdict(set)
    trainer_files: set[str] = set()
    for reader in READERS:
        for path in sorted((ROOT / reader).rglob("*.py")):
            for module, names, _ in imports(ast.parse(path.read_text(), str(path)), package_of("", path)):
                if module == TRAINER:
                    trainer_files.add(str(path.relative_to(ROOT)))
                    for imported in names:
                        trainer_names[imported].add(str(path.relative_to(ROOT)))
    return {
        "modules": len(known),
        "import_edges": counts,
        "circles": {label: len(found) for label, found in circles.items()},
        "circle_details": circles,
        "upward_edges": upward,
        "trainer_importers": {"files": len(trainer_files), "names": len(trainer_names),
                              "files_per_name": {n: len(f) for n, f in sorted(trainer_names.items())}},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="name of this measurement (e.g. before, after)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/import_graph/summary.json")
    args = parser.parse_args()
    result = measure()
    runs = json.loads(args.out.read_text())["runs"] if args.out.is_file() else {}
    runs[args.label] = result
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"what": __doc__.splitlines()[0], "command": "python benchmarks/import_graph.py "
                                    "--label LABEL", "runs": runs}, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("circle_details", "upward_edges")}, indent=1))
    print(f"edges up the layers: {len(result['upward_edges'])}", *result["upward_edges"], sep="\n  ")
    for label, found in result["circle_details"].items():
        for circle in found:
            print(label, *circle["shortest_circles"], sep="\n  ")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
