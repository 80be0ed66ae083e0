"""The architecture, held by a test: the packages of `qwengpu` form layers, and no module
imports another in a circle.

The import graph is grimp's (every import, those inside functions too, so a cycle cannot be
hidden by a function-local import).  A package may import the packages of the layers below
its own, never one above, and the packages that share a layer are independent of each other:

    cli
    commands
    splice                         the machine in front of a checkpoint's layers
    compiler                       the driver of the compile pipeline
    backend_torch | runtime        weights for the model | launches, runs, checks
    engine | ptx                   runs checkpoints | reads PTX
    trace                          the token vocabulary, prompts, decoding
    passes
    ir
    isa
    dsl
    errors

and every module stays short enough to read (at most `MAX_LINES`).
"""

from __future__ import annotations

import re
from pathlib import Path

import grimp
import networkx as nx
import pytest

LAYERS = [["cli"], ["commands"], ["splice"], ["compiler"], ["backend_torch", "runtime"], ["engine", "ptx"],
          ["trace"], ["passes"], ["ir"], ["isa"], ["dsl"], ["errors"]]
MAX_LINES = 600
PACKAGE = Path(__file__).resolve().parents[1] / "qwengpu"


@pytest.fixture(scope="module")
def imports() -> nx.DiGraph:
    graph = grimp.build_graph("qwengpu")
    edges = nx.DiGraph()
    for module in graph.modules:
        edges.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            edges.add_edge(module, imported)
    return edges


def part(module: str) -> str:
    """The top-level part of qwengpu a module belongs to ("" for the package itself)."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else ""


def test_no_import_cycles(imports):
    cycles = [sorted(component) for component in nx.strongly_connected_components(imports)
              if len(component) > 1]
    assert not cycles, f"modules that import each other in a circle: {cycles}"


def test_every_part_has_a_layer():
    parts = {path.stem if path.is_file() else path.name for path in PACKAGE.iterdir()
             if (path.suffix == ".py" and path.stem != "__init__")
             or (path.is_dir() and (path / "__init__.py").exists())}
    placed = {name for layer in LAYERS for name in layer}
    assert parts - placed == set(), f"parts of qwengpu with no layer: {parts - placed}"


def test_imports_go_down_the_layers(imports):
    rank = {name: len(LAYERS) - index for index, layer in enumerate(LAYERS) for name in layer}
    wrong = []
    for importer, imported in imports.edges:
        source, target = part(importer), part(imported)
        if not source or not target or source == target:
            continue
        if rank[target] >= rank[source]:
            kind = "a sibling" if rank[target] == rank[source] else "a layer above"
            wrong.append(f"{importer} -> {imported} ({kind})")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(wrong))


def test_modules_are_short():
    long = {str(path.relative_to(PACKAGE.parent)): length for path in PACKAGE.rglob("*.py")
            if (length := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


# The packages (and modules) the compile path runs through: each module has a sibling test
# file whose path mirrors it (qwengpu/passes/merge_common.py ->
# tests/passes/test_merge_common.py).  pytest imports test files by their base name, so where
# two packages have a module of one name (ir/verify.py, backend_torch/verify.py), one test
# file takes the package's name as a prefix (tests/ir/test_ir_verify.py).
COMPILE_PATH = ["dsl", "ir", "passes", "trace", "backend_torch", "compiler.py",
                "runtime/machine_file.py"]


def test_every_module_of_the_compile_path_has_a_sibling_test():
    tests = PACKAGE.parent / "tests"
    missing = []
    for part in COMPILE_PATH:
        root = PACKAGE / part
        modules = [root] if root.suffix == ".py" else sorted(root.rglob("*.py"))
        for module in modules:
            if module.name == "__init__.py":
                continue
            relative = module.relative_to(PACKAGE)
            folder = tests / relative.parent
            prefixed = folder / f"test_{relative.parts[0]}_{module.name}"
            sibling = folder / f"test_{module.name}"
            if not sibling.is_file() and not prefixed.is_file():
                missing.append(f"{relative} -> {sibling.relative_to(tests.parent)}")
    assert not missing, "modules of the compile path without a sibling test:\n" + \
        "\n".join(missing)


def test_the_package_docstring_names_every_part():
    """`qwengpu/__init__.py` lists the packages (and top modules) as they are."""
    import qwengpu

    parts = {path.stem if path.is_file() else path.name for path in PACKAGE.iterdir()
             if (path.suffix == ".py" and path.stem != "__init__")
             or (path.is_dir() and (path / "__init__.py").exists())}
    named = set(re.findall(r"^- `(\w+)`", qwengpu.__doc__, re.M)) | \
        set(re.findall(r"and `(\w+)` \(module\)", qwengpu.__doc__))
    assert named == parts, (named - parts, parts - named)


def test_the_docs_cite_no_document_outside_the_repository():
    """The design brief the project was started from is not in the repository: what the
    code and docs rest on is said in the project's own docs (docs/compiler.md, "How a result
    is judged"; docs/launch.md)."""
    root = PACKAGE.parent
    files = [*root.glob("docs/*.md"), root / "README.md", *PACKAGE.rglob("*.py"),
             *root.glob("tests/**/*.py"), *root.glob("bench/*.py"), *root.glob("examples/*.py")]
    citing = [str(path.relative_to(root)) for path in files
              if re.search(r"DESIGN\s*§", path.read_text(encoding="utf-8"))]
    assert not citing, citing
