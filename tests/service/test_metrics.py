"""GET /metrics: the text format behind the operator token, every family with its labels, and
counts that move with what the loop, the relay and the store did."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from records.models import Board, LoopState, RelayOutcome, Suggestion
from records.store.actions.boards import do_note_read, do_opt_in
from records.store.actions.relay import do_note_delivery, do_note_relay_outcome
from sandbox.clock import rfc3339
from superdispatch import clients, metrics, scrape, tasks
from tests.conftest import T0
from tests.service.test_relay import READY, deliver
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

FAMILIES = {
    # name: (type, label names)
    "superdispatch_decisions": ("counter", {"board", "tier", "reason"}),
    "superdispatch_holds": ("counter", {"tier"}),
    "superdispatch_hold_refusals": ("counter", {"tier"}),
    "superdispatch_outcomes": ("counter", {"tier", "outcome"}),
    "superdispatch_hold_to_claim_seconds": ("histogram", {"tier"}),
    "superdispatch_no_shows": ("counter", {"agent"}),
    "superdispatch_sweep_duration_seconds": ("histogram", set()),
    "superdispatch_sweep_boards": ("counter", {"result"}),
    "superdispatch_relay_deliveries": ("counter", {"result"}),
    "superdispatch_relay_lag_seconds": ("histogram", set()),
    "superdispatch_suggestions_open": ("gauge", {"kind"}),
    "superdispatch_boards": ("gauge", {"state"}),
    "superdispatch_board_unread": ("gauge", {"board"}),
    "superdispatch_sweep_backoff_factor": ("gauge", set()),
    "superdispatch_outbox_events": ("gauge", {"channel", "state"}),
    "superdispatch_relay_unreported": ("gauge", set()),
    "superdispatch_relay_unreported_oldest_seconds": ("gauge", set()),
    "superdispatch_outbox_sends": ("counter", {"channel", "result"}),
    "superdispatch_product_call_failures": ("counter", {"product", "route", "cause"}),
    "superdispatch_queue_depth": ("gauge", {"queue"}),
    "superdispatch_sweep_lateness_seconds": ("gauge", set()),
    "superdispatch_api_requests": ("counter", {"route", "status"}),
    "superdispatch_api_request_duration_seconds": ("histogram", {"route"}),
}


class Scrape:
    def __init__(self, api):
        response = api.get("/metrics")
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/plain")
        self.families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}

    def value(self, sample: str, **labels) -> float:
        """The sum of a sample's values over every series carrying these labels."""
        return sum(
            s.value
            for f in self.families.values()
            for s in f.samples
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
        )


def test_metrics_need_the_operator_token_and_answer_a_bare_401_without(api):
    stranger = Client()
    refused = stranger.get("/metrics")
    assert refused.status_code == 401 and refused.content == b""
    assert stranger.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token").status_code == 401
    assert api.get("/metrics").status_code == 200


def test_every_family_is_named_typed_and_labelled_as_documented(api, monkeypatch):
    monkeypatch.setattr(tasks.place_card_task, "delay", lambda *a: None)
    world = make_world(lane())
    world.opt_in("brd_a")
    world.suite.pipeline.add_card("brd_a")
    world.sweep()
    world.advance(61)
    world.sweep()  # an expired winner, a runner-up held
    tasks._loop = world.loop
    try:
        tasks.place_card_task("brd_a", "card_missing", rfc3339(world.now))
    finally:
        tasks._loop = None
    deliver(api, READY)
    scrape = Scrape(api)
    for name, (kind, labels) in FAMILIES.items():
        assert name in scrape.families, name
        family = scrape.families[name]
        assert family.type == kind, name
        for sample in family.samples:
            assert set(sample.labels) - {"le"} == labels, (name, sample)


def test_decisions_holds_outcomes_claim_times_and_no_shows_count_what_the_loop_did(api):
    before = Scrape(api)
    world = make_world(lane())
    world.opt_in("brd_a")
    first = world.suite.pipeline.add_card("brd_a")
    world.suite.pipeline.add_card("brd_a")
    world.sweep()  # agt_a and agt_b each hold one
    world.advance(4)
    world.suite.pipeline.claim("agt_a", first.id)
    world.advance(57)  # agt_b's hold lapses unclaimed: a no-show
    world.sweep()
    world.suite.toggles.reservation_verb = False
    world.advance(300)
    world.suite.pipeline.add_card("brd_a")
    world.sweep()  # holds refused
    after = Scrape(api)

    def delta(sample, **labels):
        return after.value(sample, **labels) - before.value(sample, **labels)

    assert delta("superdispatch_decisions_total", board="brd_a", tier="winner", reason="none") >= 2
    assert delta("superdispatch_holds_total", tier="winner") == 2
    assert delta("superdispatch_holds_total", tier="runner-up") == 1  # second card, next step
    assert delta("superdispatch_outcomes_total", tier="winner", outcome="claimed") == 1
    assert delta("superdispatch_outcomes_total", tier="winner", outcome="expired") == 1
    assert delta("superdispatch_no_shows_total", agent="agt_b") == 1
    assert delta("superdispatch_no_shows_total", agent="agt_a") == 0
    assert delta("superdispatch_hold_refusals_total") >= 1
    assert delta("superdispatch_outcomes_total", outcome="not-reserved") == delta(
        "superdispatch_hold_refusals_total"
    )
    # The claim came 4 s after the hold: in the 5 s bucket, not the 2 s one.
    assert delta("superdispatch_hold_to_claim_seconds_bucket", tier="winner", le="5.0") == 1
    assert delta("superdispatch_hold_to_claim_seconds_bucket", tier="winner", le="2.0") == 0
    assert delta("superdispatch_sweep_duration_seconds_count") == 3
    assert delta("superdispatch_sweep_boards_total", result="read") == 3


def test_a_board_read_without_its_roster_counts_as_unrostered_and_shows_unread(api):
    before = Scrape(api)
    world = make_world(lane())
    world.opt_in("brd_a")
    world.suite.toggles.faults["agentpod"] = "down"
    world.sweep()
    after = Scrape(api)

    def delta(sample, **labels):
        return after.value(sample, **labels) - before.value(sample, **labels)

    assert delta("superdispatch_sweep_boards_total", result="unrostered") == 1
    assert delta("superdispatch_sweep_boards_total", result="read") == 0
    assert delta("superdispatch_sweep_boards_total", result="unread") == 0
    assert after.value("superdispatch_board_unread", board="brd_a") == 1  # nothing placed
    assert after.value("superdispatch_sweep_backoff_factor") == 1


def test_relay_deliveries_count_by_result_and_the_lag_to_the_hold(api, monkeypatch):
    monkeypatch.setattr(tasks.place_card_task, "delay", lambda *a: None)
    do_opt_in("brd_a", T0)
    before = Scrape(api)
    deliver(api, READY, delivery="dlv_m1")
    deliver(api, READY, delivery="dlv_m1")
    deliver(api, {**READY, "boardId": "brd_elsewhere"}, delivery="dlv_m2")
    deliver(api, READY, delivery="dlv_m3", secret="some-other-secret-entirely")
    world = make_world(lane())
    world.opt_in("brd_a")
    card = world.suite.pipeline.add_card("brd_a")
    tasks._loop = world.loop
    try:
        tasks.place_card_task("brd_a", card.id, rfc3339(world.now - timedelta(seconds=3)))
    finally:
        tasks._loop = None
    after = Scrape(api)
    for result in ("accepted", "duplicate", "ignored", "refused"):
        grew = after.value("superdispatch_relay_deliveries_total", result=result) - before.value(
            "superdispatch_relay_deliveries_total", result=result
        )
        assert grew == 1, result
    lag = after.value("superdispatch_relay_lag_seconds_sum") - before.value(
        "superdispatch_relay_lag_seconds_sum"
    )
    assert lag == pytest.approx(3.0, abs=0.01)


def test_store_gauges_read_suggestions_boards_and_backoff_at_scrape_time(api):
    do_opt_in("brd_a", T0)
    do_opt_in("brd_b", T0)
    do_opt_in("brd_c", T0)
    do_note_read("brd_a", T0)
    do_note_read("brd_b", T0, "http-503")
    for kind, stage, dismissed in (
        ("lane-single-point", "review", None),
        ("add-station", "review", None),
        ("add-station", "ship", T0),
    ):
        Suggestion.objects.create(
            kind=kind,
            board_id="brd_a",
            stage_key=stage,
            first_seen_at=T0,
            last_seen_at=T0,
            dismissed_at=dismissed,
        )
    LoopState.objects.update_or_create(pk="loop", defaults={"failed_sweeps": 2})
    scrape = Scrape(api)
    assert scrape.value("superdispatch_suggestions_open", kind="add-station") == 1
    assert scrape.value("superdispatch_suggestions_open", kind="lane-single-point") == 1
    assert scrape.value("superdispatch_suggestions_open", kind="raise-capacity") == 0
    assert scrape.value("superdispatch_board_unread", board="brd_b") == 1
    assert scrape.value("superdispatch_board_unread", board="brd_a") == 0
    assert (
        scrape.value("superdispatch_boards", state="read"),
        scrape.value("superdispatch_boards", state="unread"),
        scrape.value("superdispatch_boards", state="never-read"),
    ) == (1, 1, 1)
    assert scrape.value("superdispatch_sweep_backoff_factor") == 4
    Board.objects.filter(board_id="brd_b").update(enabled=False)
    LoopState.objects.filter(pk="loop").update(failed_sweeps=0)
    scrape = Scrape(api)
    assert "brd_b" not in {
        s.labels.get("board") for s in scrape.families["superdispatch_board_unread"].samples
    }
    assert scrape.value("superdispatch_sweep_backoff_factor") == 1


def test_relay_gauges_count_the_taken_cards_whose_pass_never_reported(api):
    """A card.ready's task lost (or no worker serving its queue) shows as an unreported
    delivery growing old; one reported, and any other event's row, are not counted."""
    now = timezone.now()
    do_note_delivery("dlv_lost", now - timedelta(seconds=300), "card_1", "brd_a")
    do_note_delivery("dlv_in_flight", now - timedelta(seconds=1), "card_2", "brd_a")
    do_note_delivery("dlv_placed", now - timedelta(seconds=900), "card_3", "brd_a")
    do_note_relay_outcome("dlv_placed", RelayOutcome.PLACED)
    do_note_delivery("dlv_claimed_event", now - timedelta(seconds=900))  # not a card.ready
    scrape = Scrape(api)
    assert scrape.value("superdispatch_relay_unreported") == 2
    assert 300 <= scrape.value("superdispatch_relay_unreported_oldest_seconds") < 360
    do_note_relay_outcome("dlv_lost", RelayOutcome.LEFT)
    do_note_relay_outcome("dlv_in_flight", RelayOutcome.WAITING)
    scrape = Scrape(api)
    assert scrape.value("superdispatch_relay_unreported") == 0
    assert scrape.value("superdispatch_relay_unreported_oldest_seconds") == 0


def test_failure_series_are_exported_at_zero_from_the_start(api):
    """Every product call, outbox result and outcome a failure can land on is a series before
    anything failed, so a rate over it reads 0, not nothing."""
    scrape = Scrape(api)
    failures = {
        (s.labels["product"], s.labels["route"], s.labels["cause"])
        for s in scrape.families["superdispatch_product_call_failures"].samples
    }
    for product, routes in clients.PRODUCT_ROUTES.items():
        for route in routes:
            assert {(product, route, cause) for cause in clients.CAUSES} <= failures
    assert {p for p, _, _ in failures} == {"superpipeline", "agentpod", "accounts", "superwitness"}
    sends = {
        (s.labels["channel"], s.labels["result"])
        for s in scrape.families["superdispatch_outbox_sends"].samples
    }
    assert {("events", "failed"), ("events", "dead"), ("chat", "failed")} <= sends
    outcomes = {s.labels["outcome"] for s in scrape.families["superdispatch_outcomes"].samples}
    assert {"claimed", "claimed-by-other", "expired", "not-reserved"} <= outcomes
    queues = {s.labels["queue"] for s in scrape.families["superdispatch_queue_depth"].samples}
    assert queues == {"celery", "placement"}


def test_a_failed_product_call_is_counted_by_its_route_template_and_cause(api):
    world = make_world(lane())
    world.opt_in("brd_a")
    before = Scrape(api)
    with pytest.raises(clients.ClientError):
        world.loop.clients.superpipeline.board("brd_nowhere")
    world.suite.toggles.faults["agentpod"] = "down"
    world.sweep()
    after = Scrape(api)

    def delta(**labels):
        return after.value("superdispatch_product_call_failures_total", **labels) - before.value(
            "superdispatch_product_call_failures_total", **labels
        )

    assert delta(product="superpipeline", route="GET /v1/boards/{boardId}", cause="refused") == 1
    assert delta(product="agentpod", route="GET /api/bridge/boards/{boardId}/roster") >= 1
    raw = {s.labels["route"] for s in after.families["superdispatch_product_call_failures"].samples}
    assert not any("brd_" in route for route in raw), "never a path with its ids"


def test_a_registry_that_is_not_there_is_no_failure(api):
    world = make_world(lane())
    world.suite.toggles.station_registry = False
    before = Scrape(api)
    world.loop.clients.agentpod.stations()
    after = Scrape(api)
    assert after.value("superdispatch_product_call_failures_total", product="agentpod") == before.value(
        "superdispatch_product_call_failures_total", product="agentpod"
    )


def test_requests_are_counted_and_timed_by_route_pattern_and_status_class(api):
    before = Scrape(api)
    api.get("/v1/boards")
    api.get("/v1/boards")
    api.get("/v1/decisions/dec_00000000000000000000000")
    api.get("/no/such/page")
    after = Scrape(api)

    def delta(sample, **labels):
        return after.value(sample, **labels) - before.value(sample, **labels)

    assert delta("superdispatch_api_requests_total", route="v1/boards", status="2xx") == 2
    assert (
        delta("superdispatch_api_requests_total", route="v1/decisions/<str:decision_id>", status="4xx") == 1
    )
    assert delta("superdispatch_api_requests_total", route="unrouted", status="4xx") == 1
    assert delta("superdispatch_api_request_duration_seconds_count", route="v1/boards") == 2
    routes = {s.labels["route"] for s in after.families["superdispatch_api_requests"].samples}
    assert "v1/audit" in routes and not any("dec_" in r for r in routes)


def test_each_queue_depth_is_read_from_the_embedded_broker_at_scrape_time(api, settings):
    if settings.CELERY_BROKER_URL.startswith("redis"):
        pytest.skip("reads the embedded broker's folder: REDIS_URL names a Redis broker")
    folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]
    names = [f"{folder}/1_t{i}.placement.msg" for i in range(2)] + [
        f"{folder}/1_t.celery.msg",
        f"{folder}/2_t.placement.msg.part",
    ]
    for name in names:
        open(name, "w").close()
    try:
        depths = scrape.queue_depths()
    finally:
        for name in names:
            os.remove(name)
    assert depths["placement"] >= 2 and depths["celery"] >= 1
    assert scrape.queue_depths()["placement"] == depths["placement"] - 2


@pytest.mark.celery
def test_each_queue_depth_is_read_from_redis_at_scrape_time():
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("needs a Redis: set REDIS_URL")
    from kombu import Queue
    from redis import Redis

    client = Redis.from_url(url)
    queue = "sd-depth-test"
    client.delete(queue, f"{queue}{scrape._PRIORITY_SEP}3")
    client.lpush(queue, "a", "b")
    client.lpush(f"{queue}{scrape._PRIORITY_SEP}3", "c")
    try:
        with override_settings(CELERY_BROKER_URL=url, CELERY_TASK_QUEUES=(Queue(queue),)):
            assert scrape.queue_depths() == {queue: 3}
        with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0", CELERY_TASK_QUEUES=(Queue(queue),)):
            assert scrape.queue_depths() == {}  # unreadable: no sample, not a made-up 0
    finally:
        client.delete(queue, f"{queue}{scrape._PRIORITY_SEP}3")


def test_the_sweep_is_late_only_once_past_its_interval_or_its_backoff(settings):
    interval = settings.SUPERDISPATCH.sweep_seconds
    now = T0 + timedelta(hours=1)
    assert scrape.sweep_lateness(None, now) == 0
    assert scrape.sweep_lateness(LoopState(last_sweep_at=now - timedelta(seconds=interval)), now) == 0
    late = LoopState(last_sweep_at=now - timedelta(seconds=interval + 45))
    assert scrape.sweep_lateness(late, now) == 45
    backing_off = LoopState(
        last_sweep_at=now - timedelta(seconds=interval + 45), next_sweep_at=now + timedelta(seconds=10)
    )
    assert scrape.sweep_lateness(backing_off, now) == 0


def test_the_sweep_lateness_is_read_from_the_store_at_scrape_time(api, settings):
    interval = settings.SUPERDISPATCH.sweep_seconds
    LoopState.objects.update_or_create(
        pk="loop", defaults={"last_sweep_at": timezone.now() - timedelta(seconds=interval + 600)}
    )
    assert Scrape(api).value("superdispatch_sweep_lateness_seconds") >= 600


def test_series_per_agent_and_per_board_are_bounded_per_process(monkeypatch, api):
    bounded = metrics.Bounded(2)
    assert [bounded(v) for v in ("agt_a", "agt_b", "agt_c", "agt_a", "agt_d")] == [
        "agt_a",
        "agt_b",
        "other",
        "agt_a",
        "other",
    ]
    monkeypatch.setattr(metrics, "_boards", metrics.Bounded(0))
    monkeypatch.setattr(metrics, "_agents", metrics.Bounded(0))
    before = Scrape(api)
    metrics.decision_recorded("brd_unbounded", "winner", None)
    metrics.settled("winner", "expired", "agt_unbounded", None, no_show=True)
    after = Scrape(api)
    assert (
        after.value("superdispatch_decisions_total", board="other")
        - before.value("superdispatch_decisions_total", board="other")
        == 1
    )
    assert (
        after.value("superdispatch_no_shows_total", agent="other")
        - before.value("superdispatch_no_shows_total", agent="other")
        == 1
    )
    assert "brd_unbounded" not in {
        s.labels.get("board") for s in after.families["superdispatch_decisions"].samples
    }
