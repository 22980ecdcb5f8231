"""SUPERDISPATCH_LOG_FORMAT: the loop's lines as text (as always) or as JSON objects that carry
the board, card, decision and agent each line names."""

import json
import logging
import os
import re
import subprocess
import sys

import pytest

from records.models import Decision
from tests.conftest import log_formatter
from tests.service.test_config import GOOD, ROOT
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]
IDS = {"board": r"\bbrd_\w+", "card": r"\bcard_\w+", "decision": r"\bpld_\w+", "agent": r"\bagt_\w+"}


def loop_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "superdispatch.loop"]


def busy_world(caplog):
    """A world whose sweeps write every kind of loop line that names ids: windows set, a hold,
    a claim settled, a hold refused, a board unread."""
    world = make_world(lane(boards=("brd_a", "brd_b", "brd_c")))
    world.opt_in("brd_a", "brd_b", "brd_c")
    caplog.set_level("INFO", logger="superdispatch.loop")
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    world.advance(5)
    world.suite.pipeline.claim("agt_a", card.id)
    world.suite.toggles.board_failures["brd_c"] = "404"  # refused: no retries
    world.advance(25)
    world.sweep()
    world.suite.toggles.reservation_verb = False
    world.suite.pipeline.add_card("brd_b")
    world.sweep()
    return world


def test_every_json_loop_line_carries_the_ids_its_text_names(caplog):
    busy_world(caplog)
    as_json = log_formatter("json")
    kinds = set()
    for record in loop_lines(caplog):
        line = json.loads(as_json.format(record))
        text = line["message"]
        assert text == record.getMessage() and line["level"] == record.levelname
        assert line["logger"] == "superdispatch.loop" and line["time"]
        for field, pattern in IDS.items():
            named = re.findall(pattern, text)
            if named:
                assert line.get(field) == named[0], (field, text)
            elif field in line:  # known to the line without its text naming it
                assert re.fullmatch(pattern.removeprefix(r"\b"), line[field]), (field, text)
        if "hold refused" in text:
            # the agent it was to be held for
            assert line["agent"] == Decision.objects.get(id=line["decision"]).chosen
        kinds |= {
            k
            for k in ("held for", "settled claimed", "hold refused", "unread, nothing", "placement window")
            if k in text
        }
    assert kinds == {"held for", "settled claimed", "hold refused", "unread, nothing", "placement window"}


def test_the_text_format_is_the_lines_as_they_always_were(caplog):
    world = busy_world(caplog)
    as_text = log_formatter("plain")
    [decision] = world.decisions(board_id="brd_a")
    lines = [as_text.format(r).split(" ", 3)[3] for r in loop_lines(caplog)]
    assert f"loop: brd_a {decision.card_id} {decision.id} settled claimed by agt_a" in lines
    assert "loop: brd_c unread, nothing settled: board_not_found" in lines
    assert not any("{" in line for line in lines)


def _log_one_line(log_format: str | None, tmp_path) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUPER", "ORG_", "AGENTPOD", "TREATY", "DJANGO"))
    }
    env.update(GOOD, SUPERDISPATCH_DATA_DIR=str(tmp_path))
    if log_format is not None:
        env["SUPERDISPATCH_LOG_FORMAT"] = log_format
    code = (
        "import logging, django; django.setup(); "
        "logging.getLogger('superdispatch.loop').info('loop: brd_x card_1 pld_1 settled', "
        "extra={'board': 'brd_x', 'card': 'card_1', 'decision': 'pld_1'})"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "DJANGO_SETTINGS_MODULE": "superdispatch.settings"},
    )


def test_the_setting_picks_the_format_a_process_writes(tmp_path):
    text = _log_one_line(None, tmp_path).stderr.strip()
    assert text.endswith(" INFO loop: brd_x card_1 pld_1 settled")
    line = json.loads(_log_one_line("json", tmp_path).stderr)
    assert (line["message"], line["board"], line["card"], line["decision"]) == (
        "loop: brd_x card_1 pld_1 settled",
        "brd_x",
        "card_1",
        "pld_1",
    )


def test_a_bad_log_format_stops_start_up_naming_the_setting(tmp_path):
    result = _log_one_line("yaml", tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == ("superdispatch: setting SUPERDISPATCH_LOG_FORMAT must be text or json")


def test_a_hold_for_a_busy_agent_says_so_with_the_ids_as_fields(caplog, monkeypatch):
    """`wait-for-better@3`'s line names the busy agent it waits for; as JSON it carries it, with
    the board, card and decision, as every other loop line does."""
    from types import SimpleNamespace

    from placement.waiting import Waiting
    from superdispatch.loop import placing
    from superdispatch.loop.sweeps import SweepSummary

    waiting = Waiting("agt_busy", 12.0, 0.9, 40.0, "agt_idle", 0.6, 55.0, 0.15)
    card = SimpleNamespace(board_id="brd_a", card_id="card_1")
    decision = SimpleNamespace(card=card, waiting=waiting, reason=None, tier=SimpleNamespace(name="winner"))
    row = SimpleNamespace(id="pld_waits")
    monkeypatch.setattr(placing, "do_record_decision", lambda *args, **kwargs: row)
    reads = SimpleNamespace(now=None, rolls=None)
    work = SimpleNamespace(read=SimpleNamespace(card=lambda card_id: None), running=None)
    caplog.set_level("INFO", logger="superdispatch.loop")

    placing._record(reads, work, placing.Decided(decision, None), SweepSummary())

    (record,) = [r for r in loop_lines(caplog) if "waits for busy" in r.getMessage()]
    assert record.getMessage() == (
        "loop: brd_a card_1 pld_waits waits for busy agt_busy (~12 s), passing over idle agt_idle"
    )
    line = json.loads(log_formatter("json").format(record))
    assert {k: line[k] for k in ("board", "card", "decision", "agent")} == {
        "board": "brd_a",
        "card": "card_1",
        "decision": "pld_waits",
        "agent": "agt_busy",
    }
