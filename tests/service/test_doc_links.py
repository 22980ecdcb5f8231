"""Every link between the project's own pages leads somewhere: the file exists, and so does the
heading an anchor names (as GitHub makes a heading's anchor). A page moved or a heading renamed
breaks a newcomer's path through the docs, so it fails here first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "bench" / "README.md",
    ROOT / "sandbox" / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {anchor(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def links(page: Path) -> list[str]:
    return [link for link in LINK.findall(FENCE.sub("", page.read_text())) if not re.match(r"[a-z]+:", link)]


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists()], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_between_our_pages_leads_somewhere(page):
    broken = []
    for link in links(page):
        path, _, fragment = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif fragment and target.suffix == ".md" and fragment not in anchors(target):
            broken.append(f"{link}: no such heading")
    assert not broken, broken


def test_an_anchor_is_made_as_github_makes_it():
    assert anchor("Backlogs, bursts and the sweep's budget") == "backlogs-bursts-and-the-sweeps-budget"
    assert anchor("Learned routing, target `succeeded`") == "learned-routing-target-succeeded"
    assert anchor("Events out: the wire format") == "events-out-the-wire-format"
