"""The package's layers, checked from the source: every module's imports (TYPE_CHECKING ones and
imports inside functions included) may only reach its own layer or one below it, and no two
modules import each other in a circle.

Layers, bottom first (README, "Architecture"):

* ``core``    — errors.py, index.py and the compiled _core: the retrieval core's Python face and
  the error hierarchy every layer raises from.
* ``domain``  — domain/: namespace settings and state, vocabulary, text, partitioners, score
  models, evidence, recall planning and query values. Pure: no storage, no encoder, no I/O.
* ``storage`` — storage/: the backend seam (storage/backend.py) and its backends (storage/local).
* ``scoring`` — scoring/: scoring engines, the text encoder and the verification port.
* ``library`` — library/: the library facade (Memory, memory.py) over the seam, recall planning
  and answer mode, the write primitive and the background daemons.
* ``api``     — api/: gRPC servicer, server, interceptor, status table, metrics, config.
* ``faces``   — faces/: CLI, client, quickstart, evaluation.

Generated protobuf packages: ``polarmem.common.v1`` and ``polarmem.storage.v1`` may be imported
from any layer; the public API ``polarmem.v1`` only from ``api`` and ``faces``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LAYERS = ("core", "domain", "storage", "scoring", "library", "api", "faces")
TOP_LEVEL = {
    "errors": "core",
    "index": "core",
    "_core": "core",
    "__init__": "core",
    "data": "core",
}
PACKAGES = {
    "domain": "domain",
    "storage": "storage",
    "scoring": "scoring",
    "library": "library",
    "api": "api",
    "faces": "faces",
}
PUBLIC_API = "polarmem.v1"
# The source tree (what a change edits), not the installed copy.
PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "polarmem_server"


def layer_of(module: str) -> str:
    parts = module.split(".")
    assert parts[0] == "polarmem_server", module
    if len(parts) == 1:
        return TOP_LEVEL["__init__"]
    if parts[1] in PACKAGES:
        return PACKAGES[parts[1]]
    if parts[1] not in TOP_LEVEL:
        raise AssertionError(f"{module} belongs to no declared layer; add it to tests/unit/test_layers.py")
    return TOP_LEVEL[parts[1]]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        relative = path.relative_to(PACKAGE_ROOT.parent).with_suffix("")
        name = ".".join(relative.parts)
        found[name.removesuffix(".__init__")] = path
    return found


def imports_of(path: Path, module: str) -> set[str]:
    """Every module `path` imports, absolute, wherever the import statement stands."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            # "from polarmem_server.domain import text" imports the module domain.text
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def internal_edges() -> dict[str, set[str]]:
    known = modules()
    edges = {}
    for module, path in known.items():
        targets = set()
        for imported in imports_of(path, module):
            if imported in known and imported != module:
                targets.add(imported)
        edges[module] = targets
    return edges


def test_every_module_belongs_to_a_layer():
    for module in modules():
        assert layer_of(module) in LAYERS


def test_no_module_imports_a_layer_above_it():
    upward = []
    for module, targets in internal_edges().items():
        rank = LAYERS.index(layer_of(module))
        for target in targets:
            # a package's __init__ re-exporting its own modules is not a layer crossing
            if LAYERS.index(layer_of(target)) > rank:
                upward.append(f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})")
    assert not upward, "upward imports:\n" + "\n".join(sorted(upward))


# The core's Recall entry reads a serialised RecallRequest and writes a RecallResponse (the
# compiled front's own messages), so the library's side of it speaks them: the entry's wrapper
# and the module that turns Memory.recall's arguments into a request and the answer into objects.
SPEAKS_THE_CORES_RECALL = {"polarmem_server.library.core_recall", "polarmem_server.library.recall"}


def test_public_api_protos_only_in_api_and_faces():
    offenders = []
    for module, path in modules().items():
        if layer_of(module) in ("api", "faces") or module in SPEAKS_THE_CORES_RECALL:
            continue
        if any(name == PUBLIC_API or name.startswith(PUBLIC_API + ".") for name in imports_of(path, module)):
            offenders.append(module)
    assert not offenders, f"these modules import the public API protos ({PUBLIC_API}): {offenders}"


def test_no_import_circle():
    edges = internal_edges()
    # a package's __init__ and its own submodules are one unit for this check
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(edges[module]):
            if module.startswith(target + ".") or target.startswith(module + "."):
                continue
            if state.get(target) == 1:
                cycle = stack[stack.index(target) :] + [target]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)


BACKENDS = ("polarmem_server.storage.local", "polarmem_server.storage.milvus")


def backend_imports(path: Path, module: str) -> set[str]:
    """The concrete backends' modules `module` imports, relative to polarmem_server."""
    return {
        name.removeprefix("polarmem_server.")
        for name in imports_of(path, module)
        if name.startswith(BACKENDS) and name.removeprefix("polarmem_server.").count(".") == 2
    }


def test_the_api_imports_no_backend_internals():
    """The API layer reaches storage through the seam only: storage/backend.py, storage/errors.py,
    storage/opening.py (which names the backends) and the library (issue 51 item 4)."""
    found = {
        module: sorted(names)
        for module, path in modules().items()
        if layer_of(module) == "api" and (names := backend_imports(path, module))
    }
    assert not found, f"the API layer imports a concrete backend's internals (use the seam, storage/): {found}"


def test_the_checker_sees_a_backend_import(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text("def f():\n    from polarmem_server.storage.local.store import Store\n")
    assert backend_imports(source, "polarmem_server.api.bad") == {"storage.local.store"}


def test_the_checker_sees_an_upward_import(tmp_path):
    """The rules would catch a violation: a domain module importing the API."""
    source = tmp_path / "bad.py"
    source.write_text("if False:\n    from polarmem_server.api import service\n")
    found = imports_of(source, "polarmem_server.domain.bad")
    assert "polarmem_server.api.service" in found
    assert LAYERS.index(layer_of("polarmem_server.api.service")) > LAYERS.index(layer_of("polarmem_server.domain.text"))


def test_hit_explanations_and_the_context_are_written_by_the_core_alone():
    """A hit's reasons ("HAS(dog) p=0.91 τ=0.50 δ=0.10", "NOT_HAS(leash) source=text"), the
    model's context entries ("[Fact Check: VERIFIED] ..."), answer mode's labels ("VERIFIED: leo,
    snack", "ANSWERS NO: NOT_HAS coffee", "SUPERSEDED by m-2 ...") and the context's heading
    ("(no verified evidence for: ...)") are written by the core (cpp/src/hit_explanation.cpp,
    fact_check_context.cpp, answer_labels.cpp, answer_recall.cpp), whose one Recall entry every
    door calls (issue 51: one implementation of Recall's semantics). A Python
    module that formats them again is a second implementation to keep equal: this fails."""
    import re

    writing = re.compile(
        r"""f["'][^"'\n]*(\) p=\{|\) source=\{|\[Fact Check: \{|no verified evidence for: \{|"""
        r"""VERIFIED: \{|ANSWERS NO: \{|CONSTRAINT: \{|SUPERSEDED by \{|summary\}\))"""
    )
    offenders = [
        f"{path.relative_to(PACKAGE_ROOT.parent)}:{number}"
        for path in sorted(PACKAGE_ROOT.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if writing.search(line)
    ]
    assert offenders == [], f"reasons or context entries formatted in Python: {offenders}"


def string_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal in a module but its docstrings (f-strings' parts
    included)."""
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


# What the core's Recall run (cpp/src/recall_run.cpp, mode_rules.cpp, recency.cpp) writes into
# mode_reason: adaptive's choice, the recency term, an empty filter, the namespace rule's words.
RUN_WORDS = (
    "no mode requested",
    "no item matches the metadata filter",
    "constraints uncertain (",
    "compatible items",
    "compatible evidence is weak",
    "no constraints to enforce",
    "within tiers: s_sem +",
    "not proven exact:",
)


def run_words_in(path: Path) -> list[str]:
    return [
        f"{path.relative_to(PACKAGE_ROOT.parent)}:{line}"
        for line, text in string_literals(path)
        if any(words in text for words in RUN_WORDS)
    ]


def test_the_modes_are_run_by_the_core_alone():
    """Which searches a mode makes, adaptive's choice, strict's merge, the recency term, the
    suppressed hits and mode_reason are the core's Recall run (recall_run.hpp), which the
    library calls with any backend's searches and the compiled front with the index (issue 51).
    A Python module that writes the run's words again is running a mode itself: this fails."""
    offenders = [where for path in sorted(PACKAGE_ROOT.rglob("*.py")) for where in run_words_in(path)]
    assert offenders == [], f"mode_reason written in Python: {offenders}"


def test_the_checker_sees_the_runs_words(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text('"""no mode requested (a docstring may say it)"""\nreason = f"only {n} compatible items"\n')
    assert [text for _, text in string_literals(source) if "compatible items" in text] == [" compatible items"]
    assert not [text for _, text in string_literals(source) if "no mode requested" in text]


def polling_loops(path: Path) -> list[str]:
    """The functions of `path` holding a ``while`` loop that waits on an event each round: a
    background upkeep loop (or the main thread's wait for a signal)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, f"{where}.{child.name}" if where else child.name)
                continue
            if isinstance(child, ast.While) and any(
                isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "wait"
                for call in ast.walk(child.test)
            ):
                found.append(where)
            visit(child, where)

    visit(tree, "")
    return found


# The process's main thread waiting for SIGTERM: not a daemon.
POLLING_LOOPS_ALLOWED = {"polarmem_server.api.server": ["PolarMemServer.serve_forever"]}


def test_background_daemons_live_in_one_place():
    """Every loop that repeats some upkeep every few seconds is a daemon of library/daemons.py
    (issue 51: background daemons in one place), started and stopped with its owner's group."""
    found = {
        module: loops
        for module, path in modules().items()
        if module != "polarmem_server.library.daemons" and (loops := polling_loops(path))
    }
    assert found == POLLING_LOOPS_ALLOWED, f"a polling loop outside library/daemons.py: {found}"


def test_the_checker_sees_a_polling_loop(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text("class Scrub:\n    def run(self):\n        while not self.stop.wait(5):\n            pass\n")
    assert polling_loops(source) == ["Scrub.run"]


def library_internals(path: Path, module: str) -> set[str]:
    """The library's modules (not its package facade) that `module` imports."""
    known = modules()
    return {name for name in imports_of(path, module) if name.startswith("polarmem_server.library.") and name in known}


def test_the_api_and_the_faces_use_the_library_through_its_facade():
    """The layers above the library import its package (polarmem_server/library/__init__.py:
    Memory and the names it exports), never one of its modules (issue 51 item 4: the library as
    one package with a typed facade), so its modules can be split, merged or moved into the core
    without touching the API."""
    found = {
        module: sorted(names)
        for module, path in modules().items()
        if layer_of(module) in ("api", "faces") and (names := library_internals(path, module))
    }
    assert not found, f"import these from polarmem_server.library (export them there if needed): {found}"


def test_the_checker_sees_a_library_module_import(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text(
        "from polarmem_server.library.recall import render_context\nfrom polarmem_server.library import Memory\n"
    )
    assert library_internals(source, "polarmem_server.api.bad") == {"polarmem_server.library.recall"}
