"""docs/architecture.md's glossary holds the code's names to one meaning each: every name it
gives exists, and a class it names is the only public class of that name in placement, records
and learning (two `Outlook` classes once meant two things)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGES = ("placement", "records", "learning")


def glossary() -> dict[str, str]:
    """term -> the dotted name the glossary gives for it in the code."""
    table = ARCHITECTURE.read_text().split("| Term | What it means, and only this | In the code |", 1)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        term, _, code = (cell.strip() for cell in line.strip("|").split("|"))
        rows[term] = re.fullmatch(r"`([\w.]+)`", code).group(1)
    return rows


def resolve(dotted: str) -> object:
    """The module, or the module's attribute (and its attribute), a dotted name names."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            found = (
                getattr(found, name)
                if not inspect.isclass(found) or name not in getattr(found, "__dataclass_fields__", {})
                else found.__dataclass_fields__[name]
            )
        return found
    raise AssertionError(f"{dotted}: no such module")


def public_classes() -> dict[str, list[str]]:
    """Each public class name defined at the top of a module of the packages, and where."""
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    found.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    return found


def test_the_glossary_has_about_fifteen_terms():
    assert 14 <= len(glossary()) <= 20


@pytest.mark.parametrize("term, dotted", sorted(glossary().items()))
def test_each_glossary_terms_name_in_the_code_exists(term, dotted):
    resolve(dotted)


def test_a_class_the_glossary_names_is_the_only_public_class_of_that_name():
    classes = public_classes()
    named = {dotted.rsplit(".", 1)[1] for dotted in glossary().values() if inspect.isclass(resolve(dotted))}
    assert named, "the glossary names no class"
    twice = {name: classes[name] for name in named if len(classes.get(name, ())) > 1}
    assert twice == {}
