"""docs/settings.md's table lists every setting the code reads, with its default."""

import re
from pathlib import Path

from common import config

SETTINGS_DOC = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def _table() -> dict[str, str]:
    rows = {}
    for line in SETTINGS_DOC.read_text().splitlines():
        m = re.match(r"\|\s*`([A-Z_0-9]+)`\s*\|.*\|\s*(.*?)\s*\|\s*$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_the_settings_page_lists_every_setting_with_its_default():
    table = _table()
    for name, default, _rule in config.declared():
        assert name in table, f"{name} is missing from docs/settings.md"
        if default is None:
            assert table[name] == "required", name
        elif default:
            assert f"`{default}`" in table[name], f"{name}: docs/settings.md's default differs from code"
    names = {n for n, _, _ in config.declared()}
    assert set(table) <= names, (
        f"docs/settings.md lists settings the code does not read: {set(table) - names}"
    )
