#!/usr/bin/env python3
"""Write the monitor replay cases `NAME.json` from the compact definitions below.

Run `python3 snapshots/monitor/gen.py`; then `SPLICE_BLESS=1 cargo test --test monitor_replay`
writes each `NAME.expected.json` from the built monitor. Review the diff before committing:
the README line of each case says what it must decide.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def st(n, passed=1, failed=1, h=None, conf=None, tokens=100, cost=0.01, **kw):
    """One iteration: `passed`/`failed` tests; hash `h` (default unique per iteration)."""
    s = {
        "iteration": n,
        "tests": {"passed": passed, "failed": failed, "errored": 0},
        "tokens": tokens,
        "cost_usd": cost,
        "changed_paths": 1,
        "lines_added": 10,
        "lines_removed": 2,
        "code_size_bytes": 400,
        "change_hash": h if h is not None else f"h{n}",
    }
    if conf is not None:
        s["confidence"] = conf
    for k, v in kw.items():
        s[k] = v
    return s


def failed_stage(n, tokens=50):
    return {"iteration": n, "stage_failed": True, "tokens": tokens}


def scores(values, **kw):
    """States whose scores are exactly `values` (10 per passed test, -8 per failed)."""
    out = []
    for i, v in enumerate(values):
        # v = 10p - 8f with f = 1: p = (v + 8) / 10
        assert (v + 8) % 10 == 0 and v + 8 >= 0, v
        out.append(st(i + 1, passed=(v + 8) // 10, failed=1, **kw))
    return out


def with_conf(states, confs):
    for s, c in zip(states, confs):
        if c is not None:
            s["confidence"] = c
    return states


def hashes(hs, values=None):
    values = values or [2] * len(hs)
    states = scores(values)
    for s, h in zip(states, hs):
        s["change_hash"] = h
    return states


SUCCESS = dict(passed=4, failed=0)

CASES = {
    "continue-first-failure": ({}, {}, [st(1)]),
    "success-first-iteration": ({}, {}, [st(1, **SUCCESS)]),
    "success-on-last-iteration": ({}, {}, [st(1, h="a"), st(2, h="a"), st(3, h="a"), st(4, h="a"), st(5, h="a", **SUCCESS)]),
    "success-over-budget": ({"token_budget": 100}, {"tokens": 5000}, [st(1), st(2, **SUCCESS)]),
    "success-despite-incomplete": ({}, {}, [st(1, passed=2, failed=0, incomplete_verifications=2,
                                          lint={"medium": 3, "low": 1}, security={"medium": 1, "low": 2})]),
    "blocked-by-lint-critical": ({}, {}, [st(1, passed=2, failed=0, lint={"critical": 1})]),
    "blocked-by-security-high": ({}, {}, [st(1, passed=2, failed=0, security={"high": 1})]),
    "blocked-by-acceptance-errored": ({}, {}, [st(1, passed=2, failed=0, acceptance={"passed": 1, "errored": 1})]),
    "limit-reached": ({}, {}, scores([2, 12, 22, 32, 42])),
    "limit-one-below": ({}, {}, scores([2, 12, 22, 32])),
    "limit-counts-stage-failures": ({"max_iterations": 3}, {}, [st(1), failed_stage(2), st(3, passed=3)]),
    "limit-before-budget": ({"max_iterations": 2, "token_budget": 10}, {}, [st(1), st(2, passed=2)]),
    "budget-tokens-equal": ({"token_budget": 300}, {}, scores([2, 12, 22])),
    "budget-tokens-one-short": ({"token_budget": 301}, {}, scores([2, 12, 22])),
    "budget-cost-with-spent": ({"cost_budget_usd": 0.5}, {"tokens": 0, "cost_usd": 0.49}, scores([2, 12])),
    "budget-cost-decimal-boundary": ({"cost_budget_usd": 0.8}, {"cost_usd": 0.7}, scores([2], cost=0.1)),
    "budget-counts-stage-failures": ({"token_budget": 250}, {}, [st(1), failed_stage(2, tokens=50), st(3, passed=2)]),
    "budget-before-oscillation": ({"token_budget": 400}, {}, hashes(["a", "b", "a", "b"])),
    "oscillation-abab": ({}, {}, hashes(["a", "b", "a", "b"])),
    "oscillation-after-others": ({"max_iterations": 8}, {}, hashes(["x", "y", "a", "b", "a", "b"], [2, 12, 22, 32, 42, 52])),
    "oscillation-needs-four": ({}, {}, hashes(["a", "b", "a"])),
    "oscillation-same-hash-is-repeated": ({}, {}, hashes(["a", "a", "a", "a"])),
    "oscillation-before-rollback": ({}, {}, hashes(["a", "b", "a", "b"], [32, 22, 12, 2])),
    "repeated-two-iterations": ({}, {}, hashes(["a", "a"])),
    "repeated-earlier-hash": ({}, {}, hashes(["a", "b", "c", "a"], [2, 12, 22, 32])),
    "repeated-before-rollback": ({}, {}, hashes(["a", "b", "a"], [22, 32, 2])),
    "repeated-skips-stage-failure": ({}, {}, [st(1, h="a"), failed_stage(2), st(3, h="a", passed=3)]),
    "rollback-latest-below-first": ({}, {}, scores([22, 32, 2])),
    "rollback-needs-three": ({}, {}, scores([22, 2])),
    "rollback-equal-to-first": ({}, {}, scores([22, 32, 22])),
    "rollback-tie-restores-later": ({}, {}, scores([32, 32, 2])),
    "rollback-before-step-back": ({}, {}, scores([22, 12, 2])),
    "step-back-flat": ({}, {}, scores([12, 12, 12])),
    "step-back-needs-three": ({}, {}, scores([12, 12])),
    "step-back-last-rise": ({}, {}, scores([12, 12, 22])),
    "step-back-last-three-only": ({}, {}, scores([2, 22, 22, 22])),
    "step-back-before-ask-user": ({}, {}, with_conf(scores([12, 12, 12]), [0.9, 0.7, 0.5])),
    "step-back-custom-weights": ({"weights": {"tests_passed": 0, "tests_failed": 0}}, {}, scores([2, 12, 22])),
    "ask-user-confidence-falls": ({}, {}, with_conf(scores([2, 12, 22]), [0.9, 0.7, 0.5])),
    "ask-user-equal-confidence": ({}, {}, with_conf(scores([2, 12, 22]), [0.9, 0.7, 0.7])),
    "ask-user-missing-confidence": ({}, {}, with_conf(scores([2, 12, 22]), [0.9, None, 0.5])),
    "continue-after-stage-failure": ({}, {}, [st(1, h="a"), st(2, h="b", passed=2), failed_stage(3)]),
}


def main():
    for name, (settings, budget, trajectory) in CASES.items():
        doc = {"schema_version": 1, "settings": settings, "budget": budget, "trajectory": trajectory}
        with open(os.path.join(HERE, f"{name}.json"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
