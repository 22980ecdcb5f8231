"""The shape of the code, pinned where import-linter cannot see it.

import-linter (`.importlinter`, run by `make test`) holds the layers. These hold two rules it
does not check: no import of a project package hides inside a function, and every write to
SuperDispatch's tables goes through a named action (`records/store/actions/`,
`learning/actions.py`, `access/actions.py`).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ("common", "placement", "records", "learning", "superdispatch", "access")
OURS = {*SERVICE, "sandbox", "tests", "bench"}

# Functions that import a project package on purpose, and why.
FUNCTION_IMPORTS_ALLOWED = {
    # Django imports an app's config while it loads the apps, before any model can be
    # imported; `ready` is where an app wires what needs models.
    ("records/apps.py", "ready"),
    ("superdispatch/apps.py", "ready"),
    # The logging configuration builds the refusals' filter before the apps are ready, and the
    # metrics module reads the store's models: the counter is imported on the first refusal.
    ("superdispatch/refusals.py", "_count"),
}

WRITE_VERBS = {
    "save",
    "delete",
    "create",
    "get_or_create",
    "update_or_create",
    "bulk_create",
    "bulk_update",
    "update",
}
# Writes to tables that are not ours (django-celery-beat's schedule, Django's groups of the
# roles), and the outbox's own: its
# rows are written inside the actions' transactions (an event goes out with the decision that it
# tells of, or not at all), and its worker's marks are named do_ functions.
WRITES_ALLOWED = {"superdispatch/schedule.py", "records/store/outbox.py", "access/roles.py"}


def _service_files():
    for package in SERVICE:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


def _function_imports(tree: ast.AST):
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else ["(relative)"]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name == "(relative)" or name.split(".")[0] in OURS:
                    yield function.name, node.lineno, name


def test_no_import_of_a_project_package_hides_inside_a_function():
    found = [
        f"{path}:{line} {function}() imports {name}"
        for path, tree in _service_files()
        for function, line, name in _function_imports(tree)
        if (path, function) not in FUNCTION_IMPORTS_ALLOWED
    ]
    assert found == []


def _receiver_chain(node: ast.AST) -> str:
    """`Decision.objects.filter(...).update` -> "Decision.objects.filter.update"."""
    parts = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        else:
            return ".".join(reversed(parts))


def _writes(tree: ast.AST):
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        verb = node.func.attr
        chain = _receiver_chain(node.func)
        if verb not in WRITE_VERBS:
            continue
        # `update` is also a dict's and a set's: only a query set's counts.
        if verb == "update" and ".objects" not in chain:
            continue
        if verb in ("save", "delete") or ".objects" in chain:
            yield node.lineno, chain


def _named_actions(path: str) -> bool:
    """An app's named actions: its `actions.py`, or each module of its `actions/` package."""
    return path.endswith("/actions.py") or "/actions/" in path


def test_every_write_to_our_tables_goes_through_a_named_action():
    found = [
        f"{path}:{line} {chain}"
        for path, tree in _service_files()
        if not _named_actions(path) and path not in WRITES_ALLOWED
        for line, chain in _writes(tree)
    ]
    assert found == []


def test_the_shape_checks_see_what_they_look_for():
    """The checks above would find a write and a hidden import if there were one."""
    tree = ast.parse(
        "def f():\n    from records.models import Board\n"
        "    Board.objects.filter(pk=1).update(enabled=False)\n    row.save()\n"
        "    seen.update({1})\n"
    )
    assert [name for _, _, name in _function_imports(tree)] == ["records.models"]
    assert [chain for _, chain in _writes(tree)] == ["Board.objects.filter.update", "row.save"]


def _imports_of_the_actions_package(tree: ast.AST):
    """`from records.store import actions` or `from records.store.actions import do_x`: a name
    taken from the package rather than from the domain module that defines it."""
    domains = {path.stem for path in (ROOT / "records" / "store" / "actions").glob("*.py")}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "records.store":
            yield from (node.lineno for alias in node.names if alias.name == "actions")
        elif isinstance(node, ast.ImportFrom) and node.module == "records.store.actions":
            yield from (node.lineno for alias in node.names if alias.name not in domains)


def test_each_action_is_imported_from_its_domains_module():
    """As Zulip's zerver/actions/: the package lists nothing, so there is no list to keep."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in (*SERVICE, "tests", "bench")
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        for line in _imports_of_the_actions_package(ast.parse(path.read_text()))
    ]
    assert found == []
    package = ast.parse((ROOT / "records" / "store" / "actions" / "__init__.py").read_text())
    assert [type(node).__name__ for node in package.body] == ["Expr"]  # its docstring alone
