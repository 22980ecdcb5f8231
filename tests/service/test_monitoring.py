"""The shipped alert rules (deploy/prometheus/alerts.yml) and Grafana dashboard
(deploy/grafana/superdispatch.json): every rule passes `promtool check rules`, every dashboard
query is valid PromQL (checked by promtool as a recording rule), and every metric either names
is one `/metrics` exports from a fresh start.

Each promised alert is also run by `promtool test rules` on series that should make it fire
and on healthy ones.

promtool comes from Debian's `prometheus` package, which .ci/run installs. Without it the
promtool checks are skipped, and say so, except under CI=true, where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "superdispatch.json"
METRIC = re.compile(r"\bsuperdispatch_[a-z0-9_]+\b")
# Grafana's own variables, as it fills them in before a query is sent.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}
ALERTS_NAMED = (
    "SuperDispatchSweepLate",
    "SuperDispatchBoardsUnread",
    "SuperDispatchProductFailing",
    "SuperDispatchRelayErroring",
    "SuperDispatchNoShowSpike",
    "SuperDispatchOutboxBackingUp",
)


def promtool() -> str:
    found = shutil.which("promtool")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("promtool is required under CI=true: apt-get install prometheus")
    pytest.skip("promtool checks skipped: no promtool on PATH (apt-get install prometheus)")


def check_rules(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )


def dashboard_queries() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    queries = [target["expr"] for panel in board["panels"] for target in panel.get("targets", [])]
    assert queries, "the dashboard has queries"
    return queries


def alert_rules() -> list[dict]:
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]


def filled(query: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        query = query.replace(variable, value)
    return query


@pytest.fixture
def exported(api) -> set[str]:
    """Every sample name `/metrics` answers with (`…_total`, `…_bucket`), before anything ran."""
    response = api.get("/metrics")
    assert response.status_code == 200
    return {
        sample.name
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def test_the_alert_rules_pass_promtool():
    result = check_rules(ALERTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_alert_rules_cover_what_the_person_on_call_is_promised():
    rules = {rule["alert"]: rule for rule in alert_rules()}
    assert set(ALERTS_NAMED) <= set(rules)
    for name, rule in rules.items():
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name


# Each promised alert: the series that should make it fire, when it fires (its `for` included)
# and the labels it then carries, and the healthy series under which it stays quiet.
FIRING = {
    "SuperDispatchSweepLate": (
        {"superdispatch_sweep_lateness_seconds": "0 0 120x10"},
        {"superdispatch_sweep_lateness_seconds": "0x12"},
        "6m",
        {"severity": "page"},
    ),
    "SuperDispatchBoardsUnread": (
        {'superdispatch_boards{state="unread"}': "1x10"},
        {'superdispatch_boards{state="unread"}': "0x10"},
        "6m",
        {"severity": "warn"},
    ),
    "SuperDispatchProductFailing": (
        {
            'superdispatch_product_call_failures_total{product="agentpod",cause="timeout",'
            'route="GET /api/bridge/boards/{boardId}/roster"}': "0+60x20"
        },
        {
            'superdispatch_product_call_failures_total{product="agentpod",cause="timeout",'
            'route="GET /api/bridge/boards/{boardId}/roster"}': "0+1x20"
        },
        "15m",
        {"severity": "warn", "product": "agentpod"},
    ),
    "SuperDispatchRelayErroring": (
        {'superdispatch_relay_deliveries_total{result="error"}': "0+5x20"},
        {'superdispatch_relay_deliveries_total{result="error"}': "0x20"},
        "15m",
        {"severity": "warn"},
    ),
    "SuperDispatchNoShowSpike": (
        {
            'superdispatch_no_shows_total{agent="agt_a"}': "0+2x40",
            'superdispatch_holds_total{tier="winner"}': "0+4x40",
        },
        {
            'superdispatch_no_shows_total{agent="agt_a"}': "0x40",
            'superdispatch_holds_total{tier="winner"}': "0+4x40",
        },
        "30m",
        {"severity": "warn"},
    ),
    "SuperDispatchOutboxBackingUp": (
        {'superdispatch_outbox_events{channel="events",state="pending"}': "500x20"},
        {'superdispatch_outbox_events{channel="events",state="pending"}': "3x20"},
        "15m",
        {"severity": "warn"},
    ),
}


@pytest.mark.parametrize("alert", ALERTS_NAMED)
def test_each_promised_alert_fires_on_its_trouble_and_stays_quiet_without(alert, tmp_path):
    """`promtool test rules` on the shipped expressions and `for` durations (the annotations,
    prose for a person, are left out of the comparison)."""
    rules = yaml.safe_load(ALERTS.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "alerts.yml").write_text(yaml.safe_dump(rules))
    trouble, healthy, at, labels = FIRING[alert]

    def case(series: dict[str, str], fires: bool) -> dict:
        return {
            "interval": "1m",
            "input_series": [{"series": name, "values": values} for name, values in series.items()],
            "alert_rule_test": [
                {"eval_time": at, "alertname": alert, "exp_alerts": [{"exp_labels": labels}] if fires else []}
            ],
        }

    tests = tmp_path / "alerts_test.yml"
    tests.write_text(
        yaml.safe_dump(
            {
                "rule_files": ["alerts.yml"],
                "evaluation_interval": "1m",
                "tests": [case(trouble, True), case(healthy, False)],
            }
        )
    )
    result = subprocess.run(
        [promtool(), "test", "rules", str(tests)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_rejects_a_query_that_is_not_promql(tmp_path):
    """The check below would pass anything if promtool did not read the expressions."""
    broken = tmp_path / "broken.yml"
    broken.write_text(
        yaml.safe_dump(
            {
                "groups": [
                    {
                        "name": "x",
                        "rules": [{"record": "x:y", "expr": "sum(rate(superdispatch_holds_total[5m])"}],
                    }
                ]
            }
        )
    )
    assert check_rules(broken).returncode != 0


def test_every_dashboard_query_is_valid_promql(tmp_path):
    rules = tmp_path / "dashboard.yml"
    rules.write_text(
        yaml.safe_dump(
            {
                "groups": [
                    {
                        "name": "dashboard",
                        "rules": [
                            {"record": f"superdispatch:dashboard_query_{i}", "expr": filled(query)}
                            for i, query in enumerate(dashboard_queries())
                        ],
                    }
                ]
            }
        )
    )
    result = check_rules(rules)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.django_db
def test_every_metric_the_dashboard_and_the_alerts_name_is_exported_from_a_fresh_start(exported):
    named = set()
    for query in dashboard_queries() + [rule["expr"] for rule in alert_rules()]:
        named |= set(METRIC.findall(query))
    assert named, "the queries name metrics"
    assert named - exported == set()
    # The dashboard shows each product's failures, the queues, the lateness and the API.
    assert {
        "superdispatch_product_call_failures_total",
        "superdispatch_queue_depth",
        "superdispatch_sweep_lateness_seconds",
        "superdispatch_api_requests_total",
        "superdispatch_api_request_duration_seconds_bucket",
    } <= named
