"""The operator's pages in a real browser: Debian's chromium driven by Playwright, against a live
server over a recorded sandbox run (the demo and a one-agent lane, placed by the in-process loop
on a virtual clock).

One walk, as a person would take it: sign in, open the dashboard (light and dark), a decision,
its chosen agent's page, and dismiss a suggestion; and a viewer's shorter one, offered no
change. Screenshots go to `.data/screenshots/`.
Without /usr/bin/chromium the walk is skipped, and pytest says so (`apt-get install chromium`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect, sync_playwright

from records.console import pages
from records.models import Decision, Suggestion
from records.store.actions.boards import do_opt_in
from tests.support.admin_pages import change_url
from tests.support.factories import make_decision
from tests.support.world import make_world

CHROMIUM = Path("/usr/bin/chromium")  # Debian's; Playwright's own download is not used
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / ".data" / "screenshots"
# axe-core from the npm registry, pinned by version and by the SHA-256 of its one file. It is
# fetched once into .data/ (`npm pack`) rather than kept in the repository: 650 KB of minified
# code from elsewhere would be review noise, and the pin holds it as fixed as a copy would.
AXE_VERSION = "4.14.1"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
AXE = ROOT / ".data" / "vendor" / f"axe-core-{AXE_VERSION}" / "axe.min.js"
USER, PASSWORD = "operator", "pw-for-browser-tests"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def recorded(monkeypatch):
    """A recorded sandbox run; the admin's pages read the clock at its end."""
    logging.getLogger("superdispatch").setLevel(logging.WARNING)
    ends = []
    for scenario, minutes, settings in (
        ("demo", 8, {"policy": "on", "candidates": "all"}),
        ("one-agent-lane", 6, {}),
    ):
        world = make_world(scenario, arrivals=True, sweep_seconds=10, **settings)
        world.opt_in(*(b.id for b in world.suite.scenario.boards))
        world.sweep()
        world.sim.run(minutes * 60, on_tick=world.drive(10))
        ends.append(world.now)
    monkeypatch.setattr(pages, "clock", lambda: max(ends))
    assert Decision.objects.filter(reserved_until__isnull=False).exists()
    assert Suggestion.objects.filter(dismissed_at__isnull=True).exists()


@pytest.fixture
def browser_page(monkeypatch):
    if not CHROMIUM.exists():
        pytest.skip(f"browser tests skipped: no browser at {CHROMIUM} (apt-get install chromium)")
    # Playwright's sync API runs an event loop in this thread; Django refuses database calls
    # from a thread with a running loop unless told the caller knows it is synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.set_default_timeout(15_000)
        yield page
        browser.close()


@pytest.fixture
def axe_source() -> str:
    """axe-core's script, fetched from the npm registry the first time; skipped without npm,
    except under CI (`CI=true`), where the check must run."""
    if not AXE.exists():
        npm = shutil.which("npm")
        if npm is None:
            if os.environ.get("CI") == "true":
                pytest.fail("the accessibility check needs npm under CI, to fetch axe-core")
            pytest.skip("accessibility check skipped: no npm to fetch axe-core with")
        AXE.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run(
                [npm, "pack", f"axe-core@{AXE_VERSION}", "--silent"],
                cwd=folder,
                check=True,
                capture_output=True,
                timeout=300,
            )
            with tarfile.open(Path(folder) / f"axe-core-{AXE_VERSION}.tgz") as packed:
                source = packed.extractfile("package/axe.min.js").read()
        AXE.write_bytes(source)
    source = AXE.read_bytes()
    assert hashlib.sha256(source).hexdigest() == AXE_SHA256, f"{AXE} is not axe-core {AXE_VERSION}"
    return source.decode()


def serious_violations(page) -> list[str]:
    """What axe-core finds on the page as it stands, of impact serious or critical."""
    found = page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ["violations"]});
        return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 3).map(n => n.target.join(" "))}));
    }""")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {v['nodes']}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


def shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_an_operator_walks_the_console(recorded, live_server, browser_page):
    page = browser_page
    call_command("create_operator", "--username", USER, "--password", PASSWORD)
    # What the Content-Security-Policy blocked, were it to block anything the pages need:
    # Chromium reports each refusal on the console.
    refused = []
    page.on(
        "console",
        lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None,
    )

    # Sign in through the admin's own form.
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", USER)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.get_by_role("link", name="Dashboard")).to_be_visible()

    # The dashboard, from the index.
    page.get_by_role("link", name="Dashboard").click()
    expect(page).to_have_url(re.compile(r"/admin/dashboard/$"))
    expect(page.locator("#sd-dashboard h2").first).to_have_text("Decisions over time, by tier")
    expect(page.get_by_role("img", name="decisions over time by tier")).to_be_visible()
    expect(page.locator("#sd-boards")).to_contain_text("brd_review")
    expect(page.locator("#sd-helping")).to_contain_text("claimed under our hold")
    page.get_by_role("link", name="hour", exact=True).click()
    expect(page).to_have_url(re.compile(r"range=hour$"))
    expect(page.locator(".sd-ranges a.sd-on")).to_have_text("hour")
    expect(page.locator("#sd-boards")).to_contain_text("brd_review")
    shot(page, "dashboard")

    # Dark mode: the charts' text takes the admin's light foreground on its dark background.
    page.emulate_media(color_scheme="dark")
    page.goto(f"{live_server.url}/admin/dashboard/")
    body_bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    label = page.evaluate("getComputedStyle(document.querySelector('.sd-chart text')).fill")
    assert body_bg == "rgb(18, 18, 18)" and label == "rgb(238, 238, 238)", (body_bg, label)
    shot(page, "dashboard-dark")
    page.emulate_media(color_scheme="light")

    # A decision that held a card: its words first, then its candidates.
    held = Decision.objects.filter(reserved_until__isnull=False, chosen__isnull=False).first()
    page.goto(live_server.url + change_url(held))
    expect(page.locator(".sd-explanation")).to_contain_text(f"Held for {held.chosen}")
    expect(page.locator(".sd-cands")).to_contain_text("(chosen)")
    expect(page.locator(".field-candidates_table label")).to_be_hidden()  # no lone ":"
    shot(page, "decision")
    page.emulate_media(color_scheme="dark")
    chosen_bg = page.evaluate("getComputedStyle(document.querySelector('.sd-chosen td')).backgroundColor")
    passed = page.evaluate("getComputedStyle(document.querySelector('.sd-chosen .sd-pass')).color")
    # The admin's dark row highlight, and a light green on it: no light colour left behind.
    assert (chosen_bg, passed) == ("rgb(0, 54, 58)", "rgb(123, 216, 123)"), (chosen_bg, passed)
    shot(page, "decision-dark")
    page.emulate_media(color_scheme="light")

    # Its chosen agent, through the candidate row's link.
    page.locator(".sd-cands").get_by_role("link", name=held.chosen, exact=True).click()
    expect(page).to_have_url(re.compile(rf"/admin/agents/{held.chosen}/$"))
    expect(page.locator("#sd-tallies")).to_contain_text("considered")
    chosen = page.locator("#sd-tallies div").filter(has_text="chosen").locator("strong")
    assert int(chosen.inner_text()) >= 1
    expect(page.locator("#sd-recent")).to_contain_text(held.id)
    shot(page, "agent")

    # Dismiss a suggestion from the list with the admin's action.
    suggestion = Suggestion.objects.filter(dismissed_at__isnull=True, resolved_at__isnull=True).first()
    page.goto(f"{live_server.url}/admin/records/suggestion/?state=open")
    # At 1366 px, beside both sidebars, every column shows and each kind keeps to one line.
    scroll, width = page.evaluate(
        "() => { const r = document.querySelector('.results'); return [r.scrollWidth, r.clientWidth]; }"
    )
    assert scroll <= width, (scroll, width)
    heights = page.locator("#result_list .sd-nowrap").evaluate_all("spans => spans.map(s => s.offsetHeight)")
    assert heights and max(heights) < 24, heights
    page.locator(f"input.action-select[value='{suggestion.id}']").check()
    page.select_option("select[name=action]", "dismiss")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("1 suggestion(s) dismissed.")
    shot(page, "suggestion-dismissed")
    suggestion.refresh_from_db()
    assert suggestion.dismissed_at is not None

    # The browsable API, signed in as the same operator: a /v1 route in HTML, its JSON inside.
    page.goto(f"{live_server.url}/v1/decisions?limit=1")
    expect(page.locator(".page-header h1")).to_have_text("Decisions")
    expect(page.locator(".response-info")).to_contain_text("HTTP 200 OK")
    newest = Decision.objects.order_by("-created_at", "-id").first()
    expect(page.locator(".response-info")).to_contain_text(newest.id)
    shot(page, "browsable-decisions")

    # Dismiss another suggestion with the browsable API's POST (its CSRF token sent by the page).
    other = Suggestion.objects.filter(dismissed_at__isnull=True, resolved_at__isnull=True).first()
    page.goto(f"{live_server.url}/v1/suggestions/{other.id}/dismiss")
    expect(page.locator(".response-info")).to_contain_text("405")
    page.locator("#post-generic-content-form button", has_text="POST").click()
    expect(page.locator(".response-info")).to_contain_text("HTTP 200 OK")
    expect(page.locator(".response-info")).to_contain_text('"dismissedAt"')
    shot(page, "browsable-dismissed")
    other.refresh_from_db()
    assert other.dismissed_at is not None

    # The API's docs: Swagger UI, its script a file of its own, over the schema it fetches.
    page.goto(f"{live_server.url}/v1/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("SuperDispatch operator API")
    expect(page.locator(".opblock-summary-path").filter(has_text="/v1/decisions").first).to_be_visible()
    page.locator(".opblock-summary-path", has_text="/v1/boards").first.click()
    page.get_by_role("button", name="Try it out").first.click()
    page.get_by_role("button", name="Execute").first.click()  # as the signed-in operator
    expect(page.locator(".live-responses-table tbody .response-col_status").first).to_have_text("200")
    shot(page, "docs")

    assert refused == [], refused  # the admin, the browsable API and the docs all within the policy


def test_the_console_has_no_serious_accessibility_violation(recorded, live_server, browser_page, axe_source):
    """axe-core over each page a person reads: sign-in, the dashboard, a decision, an agent,
    the suggestions list and the browsable API, in the light theme and the dark. The script is
    added by the browser itself (an init script), so the pages keep their own
    Content-Security-Policy, which allows no injected script."""
    call_command("create_operator", "--username", USER, "--password", PASSWORD)
    context = browser_page.context.browser.new_context(viewport={"width": 1366, "height": 900})
    context.add_init_script(script=axe_source)
    page = context.new_page()
    page.set_default_timeout(15_000)
    held = Decision.objects.filter(reserved_until__isnull=False, chosen__isnull=False).first()
    pages = {
        "dashboard": "/admin/dashboard/",
        "a decision": change_url(held),
        "an agent": f"/admin/agents/{held.chosen}/",
        "the suggestions list": "/admin/records/suggestion/",
        "the browsable API": "/v1/decisions?limit=1",
    }
    found = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        context.clear_cookies()
        page.goto(f"{live_server.url}/admin/login/")
        found[f"sign-in ({scheme})"] = serious_violations(page)
        page.fill("#id_username", USER)
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        expect(page.get_by_role("link", name="Dashboard")).to_be_visible()
        for name, path in pages.items():
            page.goto(live_server.url + path)
            found[f"{name} ({scheme})"] = serious_violations(page)
            shot(page, f"axe-{name.replace(' ', '-')}-{scheme}")
    context.close()
    found = {name: violations for name, violations in found.items() if violations}
    assert found == {}, "\n".join(f"{name}: {v}" for name, vs in found.items() for v in vs)


def test_a_viewer_reads_the_dashboard_and_is_offered_no_opt_out(live_server, browser_page):
    """A viewer signs in, reads the dashboard and the boards, and is offered none of the
    boards list's actions (opting out is an operator's); the operator is."""
    page = browser_page
    for role in ("viewer", "operator"):
        call_command("create_operator", "--username", role, "--password", PASSWORD, "--role", role)
    do_opt_in("brd_review", pages.clock())
    make_decision(
        board="brd_review",
        card="card_1",
        chosen="agt_ada",
        created_at=pages.clock(),
        candidates=[{"agent": "agt_ada", "total": 1.0}],
    )

    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "viewer")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.get_by_role("link", name="Dashboard").click()
    expect(page).to_have_url(re.compile(r"/admin/dashboard/$"))
    expect(page.locator("#sd-boards")).to_contain_text("brd_review")
    shot(page, "viewer-dashboard")

    page.goto(f"{live_server.url}/admin/records/board/")
    expect(page.locator("#result_list")).to_contain_text("brd_review")
    expect(page.locator("select[name=action]")).to_have_count(0)
    expect(page.locator("option[value=opt_out]")).to_have_count(0)
    shot(page, "viewer-boards")

    page.context.clear_cookies()  # signed out; the operator, for contrast
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.goto(f"{live_server.url}/admin/records/board/")
    expect(page.locator("option[value=opt_out]")).to_have_count(1)
