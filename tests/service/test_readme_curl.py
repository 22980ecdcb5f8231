"""Every `curl` line of the README and of docs/api.md, run against the API as curl would send it.

Each line is read as curl reads its arguments (method, headers, `-d` body, URL) and sent
through the Django test client the way curl sends it: `-d` makes a POST with
`application/x-www-form-urlencoded` unless a header says otherwise, and no body means no
content type. The README's token (`$TOKEN`, `demo-operator-token`) becomes the test token,
and its placeholder ids (`brd_…`, `pld_…`, …) the ids of a seeded store. None may answer an
error.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from tests.support.routes import rows_behind_every_route

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", ROOT / "docs" / "api.md")
README_TOKENS = ("$TOKEN", "demo-operator-token")
FORM = "application/x-www-form-urlencoded"


def readme_curl_lines() -> list[str]:
    """Each curl command of the pages (one with a URL): a line of a code block, or an inline
    code span; a mention such as `curl -d` in prose is not a command."""
    return [
        line
        for page in PAGES
        for line in re.findall(r"(?<![\w-])curl [^`\n]*?https?://[^`\n]*", page.read_text())
    ]


@dataclass(frozen=True)
class Call:
    method: str
    url: str
    headers: dict[str, str]
    body: str | None

    @property
    def content_type(self) -> str | None:
        if self.body is None:
            return self.headers.get("content-type")
        return self.headers.get("content-type", FORM)  # what curl sends with -d


def as_curl_sends_it(line: str) -> Call:
    """The request curl makes for one command line (the options the README uses)."""
    words = iter(shlex.split(line, comments=True))
    assert next(words) == "curl"
    method, url, body, headers = None, None, None, {}
    for word in words:
        if word == ">":  # the shell's redirect of the answer to a file
            break
        if word in ("-X", "--request"):
            method = next(words)
        elif word in ("-H", "--header"):
            name, _, value = next(words).partition(":")
            headers[name.strip().lower()] = value.strip()
        elif word in ("-d", "--data", "--data-raw"):
            body = next(words)
        elif word.startswith("-"):
            raise AssertionError(f"this test does not know curl's {word}: teach it ({line})")
        else:
            assert url is None, f"two URLs in {line}"
            url = word
    assert url is not None, f"no URL in {line}"
    return Call(method or ("POST" if body is not None else "GET"), url, headers, body)


@pytest.fixture
def store():
    """A board, a decision on it, a suggestion, a model and rows enough to train: the ids the
    README leaves as placeholders."""
    rows = rows_behind_every_route()
    return {
        "brd_…": rows["board"],
        "card_…": rows["card"],
        "pld_…": rows["decision"],
        "sug_…": rows["suggestion"],
        "mdl_…": rows["model"],
    }


def _filled(text: str, ids: dict[str, str]) -> str:
    for token in README_TOKENS:
        text = text.replace(token, TEST_OPERATOR_TOKEN)
    for placeholder, real in ids.items():
        text = text.replace(placeholder, real)
    assert "…" not in text, f"a placeholder this test cannot fill: {text}"
    return text


def test_the_pages_have_the_operator_calls_including_training():
    lines = readme_curl_lines()
    assert len(lines) >= 10
    assert any("/v1/models/train" in line and " -d " in line for line in lines)


@pytest.mark.parametrize("line", readme_curl_lines())
def test_each_curl_line_of_the_pages_answers_without_an_error(client, store, line):
    call = as_curl_sends_it(_filled(line, store))
    url = urlsplit(call.url)
    extra = {
        f"HTTP_{name.upper().replace('-', '_')}": value
        for name, value in call.headers.items()
        if name != "content-type"
    }
    response = client.generic(
        call.method,
        f"{url.path}?{url.query}" if url.query else url.path,
        data=call.body or "",
        content_type=call.content_type or "",
        HTTP_HOST=url.netloc,
        **extra,
    )
    assert response.status_code < 400, (line, response.status_code, response.content[:300])
