"""bench/value.py says, for any scenario it is given, which of the lab's goals apply and whether
each is met: the figures it judges by are read from the scenario and the runs, not assumed."""

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

from bench import value
from bench._arms import arm_named, with_former_keys
from sandbox.metrics import ClaimRecord, RunRecord
from sandbox.scenario import load_scenario, parse_scenario
from tests.support.world import lane

T0 = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)


def test_skill_spread_is_the_widest_gap_at_one_stage_among_agents_who_may_work_it():
    assert round(value.skill_spread(load_scenario("skill-gradient")), 2) == 0.45
    assert value.skill_spread(load_scenario("skill-flat")) == 0.0
    scenario = lane(agents=("agt_a", "agt_b"))
    scenario["agents"][0]["successRate"] = 0.9
    scenario["agents"][1]["successRate"] = 0.5
    assert round(value.skill_spread(parse_scenario(scenario)), 2) == 0.4
    scenario["agents"][1]["successByStage"] = {"review": 0.8}  # its own rate where it works
    assert round(value.skill_spread(parse_scenario(scenario)), 2) == 0.1
    scenario["agents"][1]["capabilities"] = ["shipping"]  # cannot work the review stage
    assert value.skill_spread(parse_scenario(scenario)) == 0.0


def _claim(agent_id, at):
    return ClaimRecord(T0 + timedelta(seconds=at), "brd_a", f"card_{at}", "review", agent_id, 0.0, False, 0)


def _run(agent_id, at):
    return RunRecord(T0 + timedelta(seconds=at), "brd_a", "card", "review", agent_id, "succeeded", None)


def test_busy_share_counts_each_claim_to_its_run_and_a_claim_in_hand_to_the_end():
    scenario = parse_scenario(lane(agents=("agt_a", "agt_b")))
    metrics = SimpleNamespace(
        claims=[_claim("agt_a", 0), _claim("agt_a", 50), _claim("agt_b", 80)], runs=[_run("agt_a", 30)]
    )
    run = SimpleNamespace(
        suite=SimpleNamespace(scenario=scenario, clock=lambda: T0 + timedelta(seconds=100)), metrics=metrics
    )
    # agt_a: 0-30 and 50-100 (still working); agt_b: 80-100; over two agents x 100 s
    assert value.busy_share(run, 100) == (30 + 50 + 20) / 200


def _means(**arms):
    return {
        arm: {"success": s, "lead_mean_s": lead, "wait_p95_s": wait} for arm, (s, lead, wait) in arms.items()
    }


def test_each_goal_reads_met_or_missed_from_the_means():
    means = _means(pull=(0.70, 100.0, 20.0), documented=(0.80, 106.0, 30.0), waiting=(0.78, 104.0, 85.0))
    lines = value.goal_lines(means, spread=0.45, load=0.4)
    assert lines[0].endswith("+0.100, met")
    assert lines[1].endswith("1.060x, MISSED")
    assert lines[2].endswith("waiting +65.0 s, MISSED")
    # the waiting arm's p95 wait puts it out of `best`: the formula is best, and over the bound
    assert "documented +0.100 at 1.060x, MISSED" in lines[3]


def test_the_best_arms_goal_applies_only_where_skill_differs_at_under_the_load():
    means = _means(pull=(0.70, 100.0, 20.0), documented=(0.76, 104.0, 30.0))
    assert value.goal_lines(means, spread=0.45, load=0.4)[-1].endswith("documented +0.060 at 1.040x, met")
    assert value.goal_lines(means, spread=0.2, load=0.4)[-1].endswith("it does not apply")
    assert value.goal_lines(means, spread=0.45, load=0.7)[-1].endswith("it does not apply")


def _seeds(*rows):
    """Per-seed figures: (success, lead) for each seed."""
    return [{"success": s, "lead_mean_s": lead, "wait_p95_s": 20.0} for s, lead in rows]


def test_the_new_formulas_goals_read_met_or_missed_from_the_means_and_the_paired_seeds():
    results = {
        "pull": _seeds((0.70, 100.0), (0.72, 104.0)),
        "pull-aware": _seeds((0.78, 102.0), (0.80, 106.0)),
        "documented": _seeds((0.79, 104.0), (0.81, 108.0)),
    }
    means = {
        **_means(pull=(0.71, 102.0, 20.0), documented=(0.80, 106.0, 20.0)),
        "pull-aware": _means(it=(0.79, 104.0, 45.0))["it"],
    }
    never, better, frontier = value.new_goal_lines(results, means, spread=0.45, load=0.4)
    assert never.startswith("never worse") and "(+0.080)" in never and "(1.020x)" in never
    assert never.endswith("(+25.0 s): met")
    assert better.endswith("+0.080 at 1.020x, met")
    assert frontier.endswith(": met")  # the formula is more successful but slower
    results["documented"] = _seeds((0.80, 100.0), (0.82, 104.0))
    assert value.new_goal_lines(results, means, spread=0.2, load=0.4)[1].endswith("it does not apply")
    assert value.new_goal_lines(results, means, spread=0.45, load=0.4)[2].endswith(
        "beaten by documented, MISSED"
    )
    means["pull-aware"]["lead_mean_s"] = 106.0
    assert value.new_goal_lines(results, means, spread=0.45, load=0.4)[0].endswith(": MISSED")
    assert value.new_goal_lines({"pull": results["pull"]}, {"pull": means["pull"]}, 0.45, 0.4) == []


def test_the_labels_of_before_still_name_their_arms():
    assert [arm_named(a) for a in "pull,formula,new,waiting,tuned".split(",")] == [
        "pull",
        "documented",
        "pull-aware",
        "waiting",
        "tuned",
    ]


def test_the_last_line_gives_each_formulas_figures_again_under_its_label_of_before():
    line = (
        "success_pull=0.813 success_documented=0.882 best_arm=documented lead_mean_pull_s=90.1 "
        "lead_mean_documented_s=84.0 success_pull_aware=0.872 lead_mean_pull_aware_s=80.5 "
        "wait_p95_pull_aware_s=31.0 whatif_coverage=1.00"
    )
    assert with_former_keys(line) == line + (
        " success_formula=0.882 lead_mean_formula_s=84.0"
        " success_new=0.872 lead_mean_new_s=80.5 wait_p95_new_s=31.0"
    )
    assert with_former_keys("success_pull=0.813") == "success_pull=0.813"  # pull's keys are its own


def test_each_arm_alone_is_read_block_by_block_so_its_difference_has_an_interval():
    # Each arm alone is cut into blocks laid one after another; each block must keep its own
    # cards (its own index), or every block of an arm reads all of them, the blocks do not
    # spread, and the measured difference's interval is a point.
    from bench._switchback import Alone, read_alone
    from placement.switchback import Card

    start = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)

    def run(successes_by_block):
        cards = [
            Card(start + timedelta(seconds=600 * b + i), ok, 60.0 + 10 * b, 1.0)
            for b, oks in enumerate(successes_by_block)
            for i, ok in enumerate(oks)
        ]
        return Alone(cards, start, 600 * len(successes_by_block))

    read = read_alone(
        {
            "pull": run([[True, False], [False, False], [True, True], [True, False]]),
            "documented": run([[True, True], [True, False], [True, True], [False, True]]),
        },
        600,
    )
    [documented] = [c for c in read.against_pull if c.arm == "documented"]
    assert [a.cards for a in read.arms] == [8, 8]
    assert documented.success.estimate == 0.25
    assert documented.success.low < 0.25 < documented.success.high


def test_the_guardrails_first_third_is_of_the_schedule_as_planned_not_as_the_review_ended_it():
    # The service's review decides for pull once the guardrail drops the worst-first arm, and the
    # lab then keeps the run only up to that look: a drop at 2 h of a 12-hour schedule is within
    # its first third, whatever the kept schedule's own length.
    from bench._switchback import GUARD_ARM, Alone, Experiment, Kept, guardrail_lines
    from placement.switchback import Block, Card

    hour = timedelta(hours=1)
    kept_blocks = tuple(
        Block(i, ("pull", GUARD_ARM)[i % 2], T0 + i * hour, T0 + (i + 1) * hour) for i in range(2)
    )
    experiment = Experiment(kept_blocks, [], {GUARD_ARM: T0 + 2 * hour}, {GUARD_ARM: "why"}, {}, 12 * 3600)
    cards = [Card(T0, True, 60.0, 1.0)]
    kept = Kept("worst-hurts", ["pull", GUARD_ARM], 12 * 3600, 3600, 3600)
    kept.experiments[1] = experiment
    kept.alone[1] = {"pull": Alone(cards, T0, 3600), GUARD_ARM: Alone([Card(T0, False, None, 1.0)], T0, 3600)}
    _, early, seeds, wrong = guardrail_lines(kept)
    assert (early, seeds, wrong) == (1, 1, [])
