"""The shipped alert rules (deploy/prometheus/alerts.yml) and Grafana dashboard
(deploy/grafana/superdispatch.json): every rule passes `promtool check rules`, every dashboard
query is valid PromQL (checked by promtool as a recording rule), and every metric either names
is one `/metrics` exports from a fresh start.

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
ALERTS_NAMED = ("SuperDispatchSweepLate", "SuperDispatchBoardsUnread", "SuperDispatchProductFailing",
                "SuperDispatchRelayErroring", "SuperDispatchNoShowSpike",
                "SuperDispatchOutboxBackingUp")


def promtool() -> str:
    found = shutil.which("promtool")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("promtool is required under CI=true: apt-get install prometheus")
    pytest.skip("promtool checks skipped: no promtool on PATH (apt-get install prometheus)")


def check_rules(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True,
                          text=True, timeout=60)


def dashboard_queries() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    queries = [target["expr"] for panel in board["panels"] for target in panel.get("targets", [])]
    assert queries, "the dashboard has queries"
    return queries


def alert_rules() -> list[dict]:
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"]
            for rule in group["rules"]]


def filled(query: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        query = query.replace(variable, value)
    return query


@pytest.fixture
def exported(api) -> set[str]:
    """Every sample name `/metrics` answers with (`…_total`, `…_bucket`), before anything ran."""
    response = api.get("/metrics")
    assert response.status_code == 200
    return {sample.name for family in text_string_to_metric_families(response.content.decode())
            for sample in family.samples}


def test_the_alert_rules_pass_promtool():
    result = check_rules(ALERTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_alert_rules_cover_what_the_person_on_call_is_promised():
    rules = {rule["alert"]: rule for rule in alert_rules()}
    assert set(ALERTS_NAMED) <= set(rules)
    for name, rule in rules.items():
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name


def test_promtool_rejects_a_query_that_is_not_promql(tmp_path):
    """The check below would pass anything if promtool did not read the expressions."""
    broken = tmp_path / "broken.yml"
    broken.write_text(yaml.safe_dump({"groups": [{"name": "x", "rules": [
        {"record": "x:y", "expr": "sum(rate(superdispatch_holds_total[5m])"}]}]}))
    assert check_rules(broken).returncode != 0


def test_every_dashboard_query_is_valid_promql(tmp_path):
    rules = tmp_path / "dashboard.yml"
    rules.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [
        {"record": f"superdispatch:dashboard_query_{i}", "expr": filled(query)}
        for i, query in enumerate(dashboard_queries())]}]}))
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
    assert {"superdispatch_product_call_failures_total", "superdispatch_queue_depth",
            "superdispatch_sweep_lateness_seconds", "superdispatch_api_requests_total",
            "superdispatch_api_request_duration_seconds_bucket"} <= named
