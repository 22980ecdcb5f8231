import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from placement.why_nobody import UNRECORDED, WHY_NOBODY
from records.models import REASONS, Board, Suggestion
from tests.conftest import T0, at
from tests.support.admin_pages import change_url
from tests.support.factories import make_decision, make_suggestion

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def test_create_operator_makes_a_staff_login():
    call_command("create_operator", "--username", "op", "--password", "pw-for-tests-1")
    user = get_user_model().objects.get(username="op")
    assert user.is_staff and user.check_password("pw-for-tests-1")


def test_a_decision_page_shows_its_three_candidates_readably(staff):
    d = make_decision(
        chosen="agt_ada",
        reserved_until=at(60),
        candidates=[
            {"agent": "agt_ada", "total": 2, "terms": {"successRate": 0.75}},
            {"agent": "agt_cyd", "failing": {"idle": "not-idle", "noShow": "recently-no-show"}},
            {"agent": "agt_eli", "off_roster": True},
        ],
    )
    page = staff.get(change_url(d)).content.decode()
    for text in (
        "agt_ada",
        "(chosen)",
        "#2",
        "successRate",
        "agt_cyd",
        "not-idle",
        "recently-no-show",
        "agt_eli",
        "not-on-roster",
        "winner (step 1)",
    ):
        assert text in page, text


def test_decision_list_filters_by_outcome_and_searches_card(staff):
    make_decision(card="card_7", outcome_status="expired")
    make_decision(card="card_8")
    page = staff.get("/admin/records/decision/?q=card_7").content.decode()
    assert "card_7" in page and "card_8" not in page
    assert staff.get("/admin/records/decision/?outcome_status=expired").status_code == 200


def test_decision_list_tells_an_empty_lane_from_a_lane_of_one(staff):
    make_decision(card="card_7", reason="empty-lane")
    make_decision(card="card_8", reason="one-candidate")
    page = staff.get("/admin/records/decision/").content.decode()
    assert "?reason__exact=empty-lane" in page and "?reason__exact=one-candidate" in page
    page = staff.get("/admin/records/decision/?reason=empty-lane").content.decode()
    assert "card_7" in page and "card_8" not in page


def test_the_store_lists_every_reason_placement_records():
    assert set(REASONS) == set(WHY_NOBODY) - UNRECORDED


def test_board_actions_opt_in_and_out(staff):
    Board.objects.create(board_id="brd_a", enabled=False, created_at=T0, updated_at=T0)
    staff.post("/admin/records/board/", {"action": "opt_in", "_selected_action": ["brd_a"]})
    assert Board.objects.get().enabled
    staff.post("/admin/records/board/", {"action": "opt_out", "_selected_action": ["brd_a"]})
    assert not Board.objects.get().enabled


def test_suggestions_are_dismissed_from_the_admin(staff):
    s = make_suggestion()
    staff.post("/admin/records/suggestion/", {"action": "dismiss", "_selected_action": [s.id]})
    s.refresh_from_db()
    assert s.dismissed_at is not None


def test_staff_session_opens_the_api_docs(staff):
    assert staff.get("/v1/docs").status_code == 200


def test_ids_the_admin_would_read_as_escapes_still_open_and_link(staff):
    """The admin reads "_23" in a key as "#": a page for pld_23… must be reached, and linked,
    with the key escaped as the admin escapes it."""
    d = make_decision(id="pld_2300000000000000000000aa", chosen="agt_ada", candidates=[{"agent": "agt_ada"}])
    page = staff.get(change_url(d))
    assert page.status_code == 200 and "agt_ada" in page.content.decode()
    s = make_suggestion(id="sug_2600000000000000000000bb", evidence=[d.id])
    page = staff.get(change_url(s)).content.decode()
    assert f'href="{change_url(d)}"' in page and "_5F23" in change_url(d)


def test_a_decision_page_opens_with_the_decision_in_words(staff):
    d = make_decision(
        chosen="agt_ada",
        reserved_until=at(60),
        candidates=[
            {"agent": "agt_ada", "total": 2, "terms": {"successRate": 0.75}},
            {"agent": "agt_bob", "total": 1, "terms": {"successRate": 0.5}},
            {"agent": "agt_cyd", "failing": {"idle": "not-idle"}},
        ],
    )
    page = staff.get(change_url(d)).content.decode()
    words = (
        "Held for agt_ada as the winner. Of 2 eligible, it ranked first on its success on "
        "this board: 0.75 against 0.50 for agt_bob."
    )
    assert words in page and "One filter short: agt_cyd (not idle)." in page
    assert page.index(words) < page.index("agt_cyd</strong>"), "the words come before the table"


# --- The console as a person reads it (issue 48) --------------------------------------------


def test_a_decision_page_shows_score_terms_to_three_significant_figures(staff):
    d = make_decision(
        chosen="agt_ada",
        reserved_until=at(60),
        candidates=[
            {
                "agent": "agt_ada",
                "total": 2,
                "terms": {
                    "stageRecord": 0.6874953439426286,
                    "successRate": 1.0,
                    "sinceLastDispatchS": 3456.0,
                },
            },
            {"agent": "agt_bob", "total": 1, "terms": {"successRate": 0.5, "sinceLastDispatchS": None}},
        ],
    )
    page = staff.get(change_url(d)).content.decode()
    assert "stageRecord: 0.687<" in page and "0.6874953" not in page
    assert "successRate: 1.00<" in page and "sinceLastDispatchS: 3460<" in page
    assert "sinceLastDispatchS: —<" in page  # never took work


def test_a_decision_page_shows_its_times_to_the_second_with_their_zone(staff):
    d = make_decision(
        chosen="agt_ada",
        created_at=at(7),
        reserved_until=at(67),
        candidates=[{"agent": "agt_ada", "total": 1}],
    )
    page = staff.get(change_url(d)).content.decode()
    assert "2026-11-13 10:01:07 UTC" in page  # reserved until, as the agent page shows times
    assert "2026-11-13 10:00:07 UTC" in page  # created
    assert "noon" not in page and "a.m." not in page


def test_the_candidates_table_is_not_labelled_with_a_lone_colon(staff):
    d = make_decision(chosen="agt_ada", candidates=[{"agent": "agt_ada", "total": 1}])
    page = staff.get(change_url(d)).content.decode()
    assert ".field-candidates_table .flex-container > label { display: none; }" in page


def _suggestion(stage, **times):
    return Suggestion.objects.create(
        kind="add-agent-to-board",
        board_id="brd_a",
        stage_key=stage,
        first_seen_at=T0,
        last_seen_at=T0,
        **times,
    )


def test_the_suggestions_list_shows_open_ones_unless_asked_as_the_api_does(staff):
    _suggestion("review")
    _suggestion("triage", dismissed_at=T0)
    _suggestion("build", resolved_at=T0)
    page = staff.get("/admin/records/suggestion/").content.decode()
    assert "brd_a / review" in page and "brd_a / triage" not in page and "brd_a / build" not in page
    assert "<h1>Suggestions: open</h1>" in page
    assert '<li class="selected">\n    <a href="?state=open">open</a></li>' in page
    every = staff.get("/admin/records/suggestion/", {"state": "all"}).content.decode()
    assert all(f"brd_a / {stage}" in every for stage in ("review", "triage", "build"))
    assert "<h1>Suggestions</h1>" in every


def test_the_suggestions_list_keeps_each_kind_on_one_line(staff):
    _suggestion("review")
    page = staff.get("/admin/records/suggestion/").content.decode()
    assert '<span class="sd-nowrap">add-agent-to-board</span>' in page
    assert ".sd-nowrap { white-space: nowrap; }" in page


def test_an_empty_suggestions_list_says_so_in_words(staff):
    _suggestion("triage", dismissed_at=T0)
    page = staff.get("/admin/records/suggestion/").content.decode()
    assert "No open suggestions." in page and "After each sweep SuperDispatch looks" in page
    assert "0 suggestions" not in page and "Select suggestion to change" not in page


def test_the_sign_in_page_has_a_heading_of_its_own(client):
    page = client.get("/admin/login/").content.decode()
    assert "<h1>Log in</h1>" in page


def test_the_browsable_api_names_its_language_has_one_main_and_focusable_answers(staff):
    page = staff.get("/v1/boards", HTTP_ACCEPT="text/html").content.decode()
    assert page.count("<html") == 1 and '<html lang="en-us">' in page
    assert page.count('role="main"') == 1
    assert '<pre class="prettyprint">' not in page and '<pre class="prettyprint" tabindex="0">' in page
    assert "ul.breadcrumb li.active, ul.breadcrumb li.active a { color: #555; }" in page
