"""The README's settings table lists every setting the code reads, with its default."""
import re
from pathlib import Path

from common import config

README = Path(__file__).resolve().parents[2] / "README.md"


def _table() -> dict[str, str]:
    rows = {}
    section = README.read_text().split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        m = re.match(r"\|\s*`([A-Z_0-9]+)`\s*\|.*\|\s*(.*?)\s*\|\s*$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_readme_lists_every_setting_with_its_default():
    table = _table()
    for name, default, _rule in config.declared():
        assert name in table, f"{name} is missing from the README's settings table"
        if default is None:
            assert table[name] == "required", name
        elif default:
            assert f"`{default}`" in table[name], f"{name}: README default differs from code"
    names = {n for n, _, _ in config.declared()}
    assert set(table) <= names, f"README lists settings the code does not read: {set(table) - names}"
