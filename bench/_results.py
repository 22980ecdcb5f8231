"""Each bench's last line, kept in one place.

A bench prints its figures and ends with one `name=value …` line; `last_line` prints that line
and appends it, dated and with the machine's load, to `bench/results/NAME.txt`. The "latest
result" column of bench/README.md is rendered from those files (`python bench/_results.py`),
never typed by hand, so a figure is written once and a second copy cannot drift from it;
tests/service/test_bench_results.py fails when the table and the files disagree.

Only the standard library: the benches import this with nothing but bench/ on their path.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

RESULTS = Path(__file__).resolve().parent / "results"
README = Path(__file__).resolve().parent / "README.md"
LATEST = "Latest result (date)"


class Result(NamedTuple):
    date: str  # YYYY-MM-DD, UTC
    line: str  # the bench's last line, as it printed it
    context: tuple[tuple[str, str], ...]  # what the run was, beside the line (scenario, load)


def last_line(line: str, variant: str = "", **context: object) -> None:
    """Print a bench's last line and keep it in its results file.

    `variant` names a mode whose figures are another row of the table (`faults.py --soak`);
    `context` is what the line does not say itself, such as the scenario it ran.
    """
    print(line, flush=True)
    if "PYTEST_CURRENT_TEST" in os.environ:
        return  # a bench a test runs in small is no result: keep the committed files as measured
    name = Path(sys.argv[0]).stem + (f"--{variant}" if variant else "")
    fields = [datetime.now(timezone.utc).date().isoformat(), f"load={os.getloadavg()[0]:.2f}"]
    fields += [f"{key}={value}" for key, value in context.items()]
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / f"{name}.txt", "a") as out:
        out.write(" ".join(fields) + " " + line.strip() + "\n")


def read(name: str) -> list[Result]:
    """The results kept for one row, oldest first; none when the bench has not recorded any."""
    path = RESULTS / f"{name}.txt"
    if not path.exists():
        return []
    found = []
    for text in path.read_text().splitlines():
        if not text.strip():
            continue
        date, *words = text.split()
        context = []
        while words and re.fullmatch(r"(load|scenario)=\S+", words[0]):
            key, _, value = words.pop(0).partition("=")
            context.append((key, value))
        found.append(Result(date, " ".join(words), tuple(context)))
    return found


def row_name(first_cell: str) -> str:
    """The results file a table row reads: `faults.py --soak 600` reads faults--soak.txt."""
    script, *args = first_cell.strip().strip("`").split()
    return Path(script).stem + "".join(f"--{arg.lstrip('-')}" for arg in args if arg.startswith("--"))


def cell(name: str) -> str:
    """The table's latest-result cell for one row: the newest line kept, with its date."""
    results = read(name)
    if not results:
        return f"none kept yet (`bench/results/{name}.txt`)"
    newest = results[-1]
    said = [newest.date] + [f"{key} {value}" for key, value in newest.context]
    return f"`{newest.line}` ({', '.join(said)})"


def rendered(readme: str) -> str:
    """bench/README.md with every table's latest-result column rendered from the results files."""
    out, column = [], None
    for line in readme.splitlines():
        cells = re.split(r"(?<!\\)\|", line.strip()[1:-1]) if line.startswith("|") else None
        if cells is None:
            column = None
        elif column is None:
            names = [c.strip() for c in cells]
            column = names.index(LATEST) if LATEST in names else -1
        elif column >= 0 and not set(line) <= set("|- "):
            cells[column] = f" {cell(row_name(cells[0]))} "
            line = "|" + "|".join(cells) + "|"
        out.append(line)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    README.write_text(rendered(README.read_text()))
    print(f"rendered {README} from {RESULTS}")
