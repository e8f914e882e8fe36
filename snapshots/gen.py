#!/usr/bin/env python3
"""Write the replay corpus's snapshot files (NAME.json) from the compact cases below.

`python3 snapshots/gen.py NAME...` writes only the cases named.

The expected decisions (NAME.expected.json) are NOT generated here: produce a candidate with
`splice decide --snapshot NAME.json`, read it against the case's line in README.md, and only
then save it. Run from the repository root: python3 snapshots/gen.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = json.load(open(os.path.join(HERE, "..", "manifest", "coding-pipeline.json")))
AT = "2025-01-01T00:00:00Z"
HOLDER = "runner-1"
RUN = "run-1"


def bead(id, step, route="leaf", kind=None, parent=None, status="open", priority=2,
         seq=10, entered=5, deps=(), **pipeline):
    p = {"seq": seq, "kind": kind or route, "route": route, "step": step, "entered": entered}
    p.update(pipeline)
    b = {"id": id, "title": f"{id} title", "status": status, "priority": priority,
         "issue_type": "task", "labels": []}
    if parent:
        b["parent"] = parent
    b["dependencies"] = [{"depends_on_id": d, "type": "blocks"} for d in deps]
    b.update({"created_at": AT, "updated_at": AT, "closed_at": AT if status == "closed" else None,
              "close_reason": None, "metadata": {}, "pipeline": p})
    return b


def proposal(step, seq, pr_url=None):
    p = {"step": step, "seq": seq, "artifact": f"artifact-{step}", "at": AT}
    if pr_url:
        p["pr_url"] = pr_url
    return p


def check(step, seq, verdict, reason="", run=None, awaiting_merge=False, recheck=False):
    c = {"step": step, "seq": seq, "verdict": verdict, "reason": reason or verdict, "evidence": {},
         "at": AT}
    if run:
        c["run"] = run
    if awaiting_merge:
        c["awaiting_merge"] = True
    if recheck:
        c["recheck"] = True
    return c


def dispatch(step, seq, attempt=1, holder=HOLDER):
    return {"step": step, "attempt": attempt, "seq": seq, "holder": holder, "at": AT}


def exit_(step, seq, proposed, attempt=1, kind="ok", at=AT, code=None, cause=None,
          retry_after_s=None):
    e = {"step": step, "attempt": attempt, "seq": seq, "exit": kind, "proposed": proposed,
         "at": at}
    if code is not None:
        e["code"] = code
    if cause:
        e["cause"] = cause
    if retry_after_s is not None:
        e["retry_after_s"] = retry_after_s
    return e


def gate(step, seq=9, state="pending"):
    return {"step": step, "state": state, "seq": seq, "at": AT}


def lease(holder, since=AT):
    return {"holder": holder, "since": since}


def split(*children, seq=4):
    return {"children": list(children), "seq": seq}


def snapshot(beads, scope=None, jobs=1, max_passes=None, token_budget=None, wall_time_s=None,
             passes=0, tokens=0, wall_s=0, idle_passes=0, autonomy_default=None, worktrees=(),
             branch="main", delivery_target=None, ancestors=(), unreadable=(), backoff_s=None,
             missing_targets=(), unavailable=None, manifest=None, max_turns=None,
             no_person=False, dead_holders=None):
    snap = {
        "version": 1, "now": AT, "holder": HOLDER, "run": RUN, "scope": scope,
        "limits": {"max_passes": max_passes, "token_budget": token_budget,
                   "wall_time_s": wall_time_s, "jobs": jobs},
        "counters": {"passes": passes, "tokens": tokens, "wall_s": wall_s},
        "autonomy_default": autonomy_default,
    }
    if backoff_s is not None:
        snap["limits"]["backoff_s"] = backoff_s
    if max_turns is not None:
        snap["limits"]["max_turns"] = max_turns
    if no_person:
        snap["limits"]["no_person"] = True
    if idle_passes:
        snap["counters"]["idle_passes"] = idle_passes
    if delivery_target:
        snap["delivery_target"] = delivery_target
    if branch:
        snap["branch"] = branch
    if ancestors:
        snap["ancestors"] = list(ancestors)
    snap["worktrees"] = sorted(worktrees)
    if missing_targets:
        snap["missing_targets"] = sorted(missing_targets)
    if unavailable:
        snap["unavailable"] = dict(sorted(unavailable.items()))
    if dead_holders:
        snap["dead_holders"] = dict(sorted(dead_holders.items()))
    snap.update({"manifest": manifest or MANIFEST, "beads": beads})
    if unreadable:
        snap["unreadable"] = list(unreadable)
    return snap


def unreadable(id, error="not a valid bead: EOF while parsing an object at line 1 column 7"):
    return {"id": id, "file": f".splice/beads/{id}.json", "error": error}


def cancelled(reason="created by mistake", seq=11):
    return {"reason": reason, "seq": seq, "at": AT}


def campaign_root(id="sp-root", step="delegate", **kw):
    return bead(id, step, route="root", **kw)


CASES = {}


def case(name):
    def register(f):
        CASES[name] = f()
        return f
    return register


# --- rules 1-2: closed ----------------------------------------------------------------------
@case("closed-cleanup-fanout")
def _():
    return snapshot([
        campaign_root(split=split("sp-root.1")),
        bead("sp-root.1", "integrate", route="compound", parent="sp-root", status="closed",
             split=split("sp-root.1.1", "sp-root.1.2")),
        bead("sp-root.1.1", "deliver", parent="sp-root.1", status="closed"),
        bead("sp-root.1.2", "deliver", parent="sp-root.1", status="closed"),
    ], worktrees=["sp-root.1.1", "sp-root.1.2"])


@case("closed-done")
def _():
    return snapshot([bead("sp-a", "deliver", status="closed")])


@case("scope-done")
def _():
    return snapshot([
        campaign_root(step="integrate", status="closed", split=split("sp-root.1")),
        bead("sp-root.1", "deliver", parent="sp-root", status="closed"),
    ], scope="sp-root", worktrees=["sp-root.1"])


@case("closed-finished-cleans-own")
def _():
    # Issue 10: a node that finished its route (closed at its last step after a passing check)
    # has its own checkouts cleaned up; one a person closed mid-route keeps its worktree.
    return snapshot([
        bead("sp-task", "deliver", status="closed", last_check=check("deliver", 9, "pass")),
        bead("sp-halted", "implement", status="closed", last_check=check("implement", 9, "pass")),
        campaign_root(step="integrate", status="closed", split=split("sp-root.1"),
                      last_check=check("integrate", 9, "pass")),
        bead("sp-root.1", "review", parent="sp-root", status="closed"),
    ], worktrees=["sp-task", "sp-halted", "sp-root", "sp-root.1"])


# --- rules 3-4: leases ----------------------------------------------------------------------
@case("running-other-holder")
def _():
    return snapshot([
        bead("sp-a", "implement", lease=lease("alice@laptop"), dead_letter=None,
             attempts={"implement": 1}, last_dispatch=dispatch("implement", 8, holder="alice@laptop")),
    ])


@case("running-dead-holder")
def _():
    # Issue 33: the snapshot found one claim's runner dead (its pid gone), the other's alive.
    dead = "run:host-a:41:20250101T000000Z-41-0"
    return snapshot([
        bead("sp-a", "implement", lease=lease(dead), attempts={"implement": 1},
             last_dispatch=dispatch("implement", 8, holder=dead)),
        bead("sp-b", "implement", lease=lease("alice@laptop"), attempts={"implement": 1},
             last_dispatch=dispatch("implement", 8, holder="alice@laptop")),
    ], dead_holders={dead: {"pid": 41, "cause": "gone"}})


@case("in-flight-own-lease")
def _():
    return snapshot([
        bead("sp-a", "implement", lease=lease(HOLDER), attempts={"implement": 1},
             last_dispatch=dispatch("implement", 8)),
    ])


@case("lease-before-dead-letter")
def _():
    # A foreign claim wins over a dead letter and a pending gate (rule 4 comes first).
    return snapshot([
        bead("sp-a", "implement", lease=lease("bob"),
             dead_letter={"step": "implement", "reason": "x", "seq": 9, "at": AT},
             gate=gate("implement")),
    ])


# --- rules 5-7 ------------------------------------------------------------------------------
@case("parked")
def _():
    return snapshot([
        bead("sp-a", "review", deps=["sp-missing"],
             dead_letter={"step": "review", "reason": "attempts exhausted on review: 3 of 3",
                          "seq": 9, "at": AT}),
    ])


@case("blocked-open-and-absent")
def _():
    return snapshot([
        bead("sp-a", "implement", deps=["sp-b", "sp-gone"]),
        bead("sp-b", "implement"),
    ])


@case("blocked-dependency-closed")
def _():
    return snapshot([
        bead("sp-a", "implement", deps=["sp-b"]),
        bead("sp-b", "deliver", status="closed"),
    ])


@case("cancelled-blocks-dependents")
def _():
    # A cancelled blocker satisfies nothing (sp-a rests blocked by it); a blocker closed as done
    # does (sp-c dispatches).
    return snapshot([
        bead("sp-a", "implement", deps=["sp-b"]),
        bead("sp-b", "implement", status="closed", cancelled=cancelled()),
        bead("sp-c", "implement", deps=["sp-d"]),
        bead("sp-d", "deliver", status="closed"),
    ], jobs=2)


@case("idle-all-blocked")
def _():
    return snapshot([bead("sp-a", "implement", deps=["sp-elsewhere"])])


@case("waiting-parent")
def _():
    return snapshot([
        campaign_root(step="to-issues", proposal=proposal("to-issues", 8),
                      last_check=check("to-issues", 9, "pass"), gate=gate("to-issues")),
        bead("sp-root.1", "generate-spec", parent="sp-root"),
        bead("sp-root.2", "generate-spec", parent="sp-root", status="closed"),
    ])


@case("scope-subtree")
def _():
    # The scope root's parent is outside the snapshot: it does not wait for it.
    return snapshot([
        bead("sp-root.1", "to-issues", route="compound", parent="sp-root",
             proposal=proposal("to-issues", 8)),
        bead("sp-root.1.1", "generate-spec", parent="sp-root.1"),
    ], scope="sp-root.1")


# --- rule 11 and autonomy --------------------------------------------------------------------
@case("gate-hitl-default")
def _():
    return snapshot([
        bead("sp-a", "generate-spec", verdict="leaf", proposal=proposal("generate-spec", 7),
             last_check=check("generate-spec", 8, "pass"), gate=gate("generate-spec")),
    ])


@case("autonomy-wave-inherited")
def _():
    return snapshot([
        campaign_root(autonomy="wave", split=split("sp-root.1", "sp-root.2", "sp-root.3")),
        bead("sp-root.1", "implement", parent="sp-root", gate=gate("implement"),
             proposal=proposal("implement", 7), last_check=check("implement", 8, "pass")),
        bead("sp-root.2", "generate-spec", parent="sp-root", verdict="leaf",
             gate=gate("generate-spec"), proposal=proposal("generate-spec", 7),
             last_check=check("generate-spec", 8, "pass")),
        # The verdict-less spec: no level relaxes it.
        bead("sp-root.3", "generate-spec", parent="sp-root", gate=gate("generate-spec"),
             proposal=proposal("generate-spec", 7), last_check=check("generate-spec", 8, "pass")),
    ])


@case("autonomy-deep-planning")
def _():
    return snapshot([
        campaign_root(step="create-prp", autonomy="deep", gate=gate("create-prp"),
                      proposal=proposal("create-prp", 7), last_check=check("create-prp", 8, "pass")),
        bead("sp-root2", "to-issues", route="compound", autonomy="deep", gate=gate("to-issues"),
             proposal=proposal("to-issues", 7), last_check=check("to-issues", 8, "pass")),
    ])


@case("autonomy-nearest-ancestor")
def _():
    return snapshot([
        campaign_root(autonomy="deep", split=split("sp-root.1")),
        bead("sp-root.1", "delegate", route="compound", parent="sp-root", autonomy="hitl",
             split=split("sp-root.1.1")),
        bead("sp-root.1.1", "implement", parent="sp-root.1", gate=gate("implement"),
             proposal=proposal("implement", 7), last_check=check("implement", 8, "pass")),
    ])


@case("autonomy-config-default")
def _():
    return snapshot([
        bead("sp-a", "implement", gate=gate("implement"), proposal=proposal("implement", 7),
             last_check=check("implement", 8, "pass")),
    ], autonomy_default="wave")


@case("autonomy-deep-integrate-target")
def _():
    return snapshot([
        campaign_root("sp-branch", step="integrate", autonomy="deep", target="campaign/x",
                      gate=gate("integrate"), proposal=proposal("integrate", 7),
                      last_check=check("integrate", 8, "pass")),
        campaign_root("sp-main", step="integrate", autonomy="deep", target="main",
                      gate=gate("integrate"), proposal=proposal("integrate", 7),
                      last_check=check("integrate", 8, "pass")),
    ])


@case("gate-stale-previous-step")
def _():
    # A gate and check left from the previous step do not count on the new one.
    return snapshot([
        bead("sp-a", "review", gate=gate("implement", seq=4, state="approved"),
             last_check=check("implement", 4, "pass")),
    ])


# --- rule 12 ---------------------------------------------------------------------------------
@case("waiting-children")
def _():
    return snapshot([
        bead("sp-c", "delegate", route="compound", split=split("sp-c.1", "sp-c.2", "sp-c.3")),
        bead("sp-c.1", "deliver", parent="sp-c", status="closed"),
        bead("sp-c.2", "implement", parent="sp-c"),
    ], jobs=1)


@case("delegate-children-finished")
def _():
    return snapshot([
        bead("sp-c", "delegate", route="compound", split=split("sp-c.1")),
        bead("sp-c.1", "deliver", parent="sp-c", status="closed"),
    ])


# --- rules 10-12 ----------------------------------------------------------------------------
@case("reconcile-evidence-before-dispatch")
def _():
    return snapshot([
        # A person wrote the spec and proposed before any dispatch.
        bead("sp-a", "generate-spec", proposal=proposal("generate-spec", 7)),
        # Floors on the step and never checked since entry: check first, even with no proposal.
        bead("sp-b", "review"),
    ])


@case("proposal-newer-than-check")
def _():
    return snapshot([
        bead("sp-a", "review", attempts={"review": 1}, last_dispatch=dispatch("review", 6),
             last_check=check("review", 7, "refuse", "no review file"),
             proposal=proposal("review", 8)),
    ])


@case("empty-check-list")
def _():
    return snapshot([
        # implement declares no floors: a fresh entry dispatches, a proposal is checked.
        bead("sp-a", "implement"),
        bead("sp-b", "implement", attempts={"implement": 1}, last_dispatch=dispatch("implement", 6),
             proposal=proposal("implement", 7), exits=[exit_("implement", 8, True)]),
    ], jobs=2)


@case("escalated-check")
def _():
    return snapshot([
        campaign_root(step="integrate",
                      last_check=check("integrate", 8, "escalate", "suite_cmd is not set")),
    ])


@case("awaiting-merge-this-run")
def _():
    return snapshot([
        bead("sp-a", "deliver", pr_url="https://forge/pr/7", proposal=proposal("deliver", 7),
             last_check=check("deliver", 8, "refuse", "PR open, not merged", run=RUN,
                              awaiting_merge=True)),
    ])


@case("awaiting-merge-earlier-run")
def _():
    return snapshot([
        bead("sp-a", "deliver", proposal=proposal("deliver", 7, pr_url="https://forge/pr/7"),
             last_check=check("deliver", 8, "refuse", "PR open, not merged", run="run-0",
                              awaiting_merge=True)),
    ])


# --- rules 14-16 ----------------------------------------------------------------------------
@case("dispatch-fresh")
def _():
    return snapshot([bead("sp-a", "implement")])


@case("dispatch-after-refusal")
def _():
    return snapshot([
        bead("sp-a", "review", attempts={"review": 1}, last_dispatch=dispatch("review", 6),
             proposal=proposal("review", 7), exits=[exit_("review", 7, True)],
             last_check=check("review", 8, "refuse", "review verdict FAIL")),
    ])


@case("dispatch-exit-without-proposal")
def _():
    return snapshot([
        bead("sp-a", "implement", attempts={"implement": 2},
             last_dispatch=dispatch("implement", 8, attempt=2),
             exits=[exit_("implement", 9, False, attempt=2, kind="timeout")]),
    ])


@case("attempts-exhausted-park")
def _():
    return snapshot([
        bead("sp-a", "review", attempts={"review": 3}, last_dispatch=dispatch("review", 6, 3),
             proposal=proposal("review", 7), last_check=check("review", 8, "refuse", "no file")),
    ])


@case("attempts-exhausted-exit-cause")
def _():
    # The last dispatch failed after the refusal: the park reason says how, and why.
    return snapshot([
        bead("sp-a", "implement", attempts={"implement": 3},
             last_dispatch=dispatch("implement", 8, attempt=3),
             exits=[exit_("implement", 9, False, attempt=3, kind="failed", code=2,
                          cause="last output: rate limit reached")],
             last_check=check("implement", 7, "refuse", "tests fail")),
    ])


# --- rule 27: backoff -----------------------------------------------------------------------
BEFORE = "2024-12-31T23:59:45Z"  # 15 s before AT


@case("backoff-waits-before-the-next-attempt")
def _():
    # Attempt 1 failed at AT: attempt 2 waits backoff_s (10 s). Nothing else to do: the run is
    # `ready`, with nothing to carry out, and wakes at the earliest `until`.
    return snapshot([
        bead("sp-a", "implement", attempts={"implement": 1},
             last_dispatch=dispatch("implement", 8),
             exits=[exit_("implement", 9, False, kind="failed", code=1)]),
    ], backoff_s=10)


@case("backoff-doubles-and-comes-due")
def _():
    return snapshot([
        # Attempt 2 ended 15 s ago: attempt 3 waits 20 s, 5 s more.
        bead("sp-a", "implement", attempts={"implement": 2},
             last_dispatch=dispatch("implement", 8, attempt=2),
             exits=[exit_("implement", 9, False, attempt=2, kind="timeout", at=BEFORE)]),
        # Attempt 1 ended 15 s ago: attempt 2's 10 s are over.
        bead("sp-b", "review", attempts={"review": 1}, last_dispatch=dispatch("review", 6),
             proposal=proposal("review", 7), exits=[exit_("review", 7, True, at=BEFORE)],
             last_check=check("review", 8, "refuse", "review verdict FAIL")),
        # The runner cancelled its dispatch (its attempt given back): no wait.
        bead("sp-c", "implement", attempts={"implement": 1},
             last_dispatch=dispatch("implement", 8, attempt=2),
             exits=[exit_("implement", 9, False, attempt=2, kind="cancelled")]),
        # Unparked (attempts reset): a first attempt never waits.
        bead("sp-d", "implement", last_dispatch=dispatch("implement", 8, attempt=3),
             exits=[exit_("implement", 9, False, attempt=3, kind="failed", code=1)]),
    ], backoff_s=10, jobs=4)


@case("backoff-beside-other-work")
def _():
    # One node backs off while another is checked and a third waits for a person: the run is
    # `ready` with the check to carry out, and wakes at the backing-off node's `until`.
    return snapshot([
        bead("sp-a", "implement", attempts={"implement": 1},
             last_dispatch=dispatch("implement", 8),
             exits=[exit_("implement", 9, False, kind="failed", code=1)]),
        bead("sp-b", "review", proposal=proposal("review", 7)),
        bead("sp-c", "implement", gate=gate("implement"), proposal=proposal("implement", 7),
             last_check=check("implement", 8, "pass")),
    ], backoff_s=30)


@case("transient-ends-back-off-counting-no-attempt")
def _():
    # Issue 32: transient ends (the API overloaded) gave their attempts back, yet wait: sp-a's
    # one transient end just now waits backoff_s (10 s); sp-b's two, the last 15 s ago, wait
    # 20 s, 5 s more. Neither used an attempt.
    return snapshot([
        bead("sp-a", "implement", last_dispatch=dispatch("implement", 8),
             exits=[exit_("implement", 9, False, kind="transient",
                          cause="the agent ended with an error: API Error: 529 overloaded")]),
        bead("sp-b", "implement", last_dispatch=dispatch("implement", 10),
             exits=[exit_("implement", 7, False, kind="transient", at=BEFORE),
                    exit_("implement", 11, False, kind="transient", at=BEFORE)]),
    ], backoff_s=10, jobs=2)


@case("transient-backoff-came-due")
def _():
    # A transient end 15 s ago, backoff 10 s: the step is dispatched again as attempt 1.
    return snapshot([
        bead("sp-a", "implement", last_dispatch=dispatch("implement", 8),
             exits=[exit_("implement", 9, False, kind="transient", at=BEFORE)]),
    ], backoff_s=10)


@case("transient-retry-after-is-waited-for")
def _():
    # A rate limit whose API asked for 90 s: the wait is 90 s, not backoff_s's 10.
    return snapshot([
        bead("sp-a", "implement", last_dispatch=dispatch("implement", 8),
             exits=[exit_("implement", 9, False, kind="transient",
                          cause="the agent ended with an error: API Error: 429 "
                                "rate_limit_error: Please retry after 90 seconds.",
                          retry_after_s=90)]),
    ], backoff_s=10)


@case("stalled-uses-its-attempt")
def _():
    # A stalled dispatch (no progress for stall_s, killed) used its attempt: with all 3 used the
    # node parks, saying it stalled.
    return snapshot([
        bead("sp-a", "implement", attempts={"implement": 3},
             last_dispatch=dispatch("implement", 8, attempt=3),
             exits=[exit_("implement", 9, False, attempt=3, kind="stalled",
                          cause="stalled: no output, and next to no CPU time or reads and "
                                "writes, for 300s; killed the process group")]),
    ])


@case("backoff-on-the-last-pass")
def _():
    # Pass 3 of at most 3: the node backs off, but no pass is left to wake for (no `wake_at`).
    return snapshot([
        bead("sp-a", "implement", attempts={"implement": 1},
             last_dispatch=dispatch("implement", 8),
             exits=[exit_("implement", 9, False, kind="failed", code=1)]),
    ], backoff_s=10, max_passes=3, passes=2)


@case("no-command-awaiting-human")
def _():
    # delegate has no command: once its check refused, a person must act.
    return snapshot([
        bead("sp-c", "delegate", route="compound",
             last_check=check("delegate", 8, "refuse", "children not conserved")),
    ])


@case("unknown-step-escalates")
def _():
    return snapshot([bead("sp-a", "polish")])


# --- serialization and jobs -----------------------------------------------------------------
@case("serialize-equal-paths")
def _():
    return snapshot([
        bead("sp-a", "implement", files=["src/a.rs"]),
        bead("sp-b", "implement", files=["src/a.rs", "src/b.rs"]),
    ], jobs=4)


@case("serialize-directory-prefix")
def _():
    return snapshot([
        bead("sp-a", "implement", files=["src"]),
        bead("sp-b", "implement", files=["src/a.rs"]),
        bead("sp-c", "implement", parent=None, files=["lib/a"]),
        bead("sp-d", "implement", files=["lib/ab.rs"]),
    ], jobs=4)


@case("serialize-undeclared-scope")
def _():
    return snapshot([
        bead("sp-a", "implement"),
        bead("sp-b", "implement"),
        bead("sp-c", "implement", files=["src/x.rs"]),
    ], jobs=4)


@case("serialize-in-flight-sibling")
def _():
    return snapshot([
        bead("sp-a", "implement", files=["src/lib.rs"], lease=lease(HOLDER),
             attempts={"implement": 1}, last_dispatch=dispatch("implement", 8)),
        bead("sp-b", "implement", files=["./src/"]),
        bead("sp-c", "implement", files=["docs"]),
    ], jobs=4)


@case("serialize-behind-foreign-claim")
def _():
    return snapshot([
        bead("sp-a", "implement", files=["src"], lease=lease("alice@laptop")),
        bead("sp-b", "implement", files=["src/main.rs"]),
    ], jobs=4)


@case("serialize-priority-order")
def _():
    return snapshot([
        bead("sp-a", "implement", priority=2, files=["src/a.rs"]),
        bead("sp-z", "implement", priority=1, files=["src/a.rs"]),
    ], jobs=4)


@case("serialize-only-siblings")
def _():
    return snapshot([
        campaign_root(split=split("sp-root.1", "sp-root.2")),
        bead("sp-root.1", "delegate", route="compound", parent="sp-root",
             split=split("sp-root.1.1")),
        bead("sp-root.2", "delegate", route="compound", parent="sp-root",
             split=split("sp-root.2.1")),
        bead("sp-root.1.1", "implement", parent="sp-root.1", files=["src/a.rs"]),
        bead("sp-root.2.1", "implement", parent="sp-root.2", files=["src/a.rs"]),
    ], jobs=4)


@case("jobs-queued")
def _():
    return snapshot([
        bead("sp-a", "implement", lease=lease(HOLDER), attempts={"implement": 1},
             last_dispatch=dispatch("implement", 8)),
        bead("sp-b", "implement", priority=3),
        bead("sp-c", "implement", priority=1),
        bead("sp-d", "implement"),
        bead("sp-e", "review"),
    ], jobs=2)


# --- rules 28 and 29: the dispatch's target ------------------------------------------------
@case("dispatch-target-lineage")
def _():
    return snapshot([
        campaign_root(target="campaign/x", split=split("sp-root.1", "sp-root.2")),
        bead("sp-root.1", "implement", parent="sp-root", files=["a"]),
        bead("sp-root.2", "implement", parent="sp-root", files=["b"], target="feature/own"),
        bead("sp-solo", "implement"),
    ], jobs=4, delivery_target="release", branch="checked-out")


@case("dispatch-target-branch")
def _():
    return snapshot([bead("sp-a", "implement")], branch="checked-out")


@case("dispatch-no-target")
def _():
    return snapshot([bead("sp-a", "implement"), bead("sp-b", "review", target="feat")],
                    branch=None, jobs=2)


@case("dispatch-target-missing")
def _():
    # `feature/gone` (sp-a's own) and `[delivery] target` `release` (sp-b inherits it from its
    # parent's lineage: none, so the config's) name no commit; sp-c's own `main` does.
    return snapshot([
        bead("sp-a", "implement", target="feature/gone"),
        bead("sp-b", "implement"),
        bead("sp-c", "implement", target="main"),
    ], jobs=3, delivery_target="release", missing_targets=["feature/gone", "release"])


@case("scope-inherits-from-above")
def _():
    above = campaign_root(step="delegate", autonomy="wave", target="campaign/up",
                          split=split("sp-root.1"))
    return snapshot([
        bead("sp-root.1", "delegate", route="compound", parent="sp-root",
             split=split("sp-root.1.1", "sp-root.1.2")),
        bead("sp-root.1.1", "implement", parent="sp-root.1", gate=gate("implement"),
             proposal=proposal("implement", 7), last_check=check("implement", 8, "pass")),
        bead("sp-root.1.2", "implement", parent="sp-root.1"),
    ], scope="sp-root.1", ancestors=[above], branch=None)


# --- run status -----------------------------------------------------------------------------
@case("budget-passes")
def _():
    return snapshot([bead("sp-a", "implement")], max_passes=5, passes=5)


@case("budget-tokens-and-wall")
def _():
    return snapshot([bead("sp-a", "implement")], token_budget=1000, tokens=1200,
                    wall_time_s=600, wall_s=10)


@case("stalled-after-idle-passes")
def _():
    return snapshot([bead("sp-a", "implement"), bead("sp-b", "review")], idle_passes=3)


@case("done-holds-other-actions")
def _():
    return snapshot([
        campaign_root(step="integrate", status="closed", split=split("sp-root.1")),
        bead("sp-root.1", "deliver", parent="sp-root", status="closed"),
        bead("sp-root.2", "implement", parent="sp-root"),
    ], scope="sp-root", worktrees=["sp-root.1"])


@case("cancelled-not-counted")
def _():
    # A bead parked by mistake and then cancelled rests closed, not parked: the run is done.
    return snapshot([
        bead("sp-a", "deliver", status="closed"),
        bead("sp-b", "implement", status="closed", cancelled=cancelled(),
             dead_letter={"step": "implement", "reason": "attempts exhausted on implement: 3 of 3",
                          "seq": 9, "at": AT}),
    ])


@case("cancelled-cleans-own")
def _():
    # Issue 33: a cancelled node's checkouts go (rule 2, `own`: the cleanup keeps a branch with
    # commits not on the target); one closed mid-route as done another way keeps its worktree.
    return snapshot([
        bead("sp-a", "implement", status="closed", cancelled=cancelled()),
        bead("sp-b", "implement", status="closed"),
    ], worktrees=["sp-a", "sp-b"])


@case("cancelled-only-idle")
def _():
    # Nothing but cancelled beads: nothing was done, so not `done`.
    return snapshot([bead("sp-a", "implement", status="closed", cancelled=cancelled())])


@case("scope-cancelled-not-done")
def _():
    # A cancelled scope root is not done either; nor does its closed-as-done child make it so.
    return snapshot([
        campaign_root(status="closed", cancelled=cancelled(), split=split("sp-root.1")),
        bead("sp-root.1", "deliver", parent="sp-root", status="closed"),
    ], scope="sp-root")


@case("empty-idle")
def _():
    return snapshot([])


@case("status-escalated-over-human")
def _():
    return snapshot([
        bead("sp-a", "implement",
             dead_letter={"step": "implement", "reason": "aborted by on_result", "seq": 9,
                          "at": AT}),
        bead("sp-b", "implement", gate=gate("implement"), proposal=proposal("implement", 7),
             last_check=check("implement", 8, "pass")),
        bead("sp-c", "implement", lease=lease("carol")),
    ])


@case("status-human-over-running")
def _():
    return snapshot([
        bead("sp-b", "implement", gate=gate("implement"), proposal=proposal("implement", 7),
             last_check=check("implement", 8, "pass")),
        bead("sp-c", "implement", lease=lease("carol")),
    ])


@case("campaign-mixed")
def _():
    return snapshot([
        campaign_root(autonomy="wave", target="campaign/demo",
                      split=split("sp-root.1", "sp-root.2", "sp-root.3", "sp-root.4")),
        bead("sp-root.1", "deliver", parent="sp-root", status="closed", files=["src/add.rs"]),
        bead("sp-root.2", "implement", parent="sp-root", files=["src/sub.rs"],
             lease=lease(HOLDER), attempts={"implement": 1},
             last_dispatch=dispatch("implement", 8)),
        bead("sp-root.3", "review", parent="sp-root", files=["src"], deps=["sp-root.1"],
             proposal=proposal("review", 7), last_check=check("review", 8, "refuse", "FAIL"),
             attempts={"review": 1}),
        bead("sp-root.4", "generate-spec", parent="sp-root", deps=["sp-root.2"]),
    ], worktrees=["sp-root.1", "sp-root.2", "sp-root@target"], jobs=2)


@case("unreadable-bead-escalated")
def _():
    # sp-root's file could not be read: it rests escalated with the error, and its child (whose
    # autonomy and target would come from it) escalates too; the unrelated task still dispatches.
    return snapshot([
        bead("sp-root.1", "implement", parent="sp-root"),
        bead("sp-task", "implement"),
    ], unreadable=[unreadable("sp-root")])


# --- result branches (issue 12): a node after each routing effect ----------------------------
def routing(effect, from_step, to_route=None, to_step=None, when="refused", branch=0, matched="",
            reason=None, seq=9, from_route="leaf"):
    r = {"step": from_step, "branch": branch, "when": when, "matched": matched, "effect": effect,
         "from_route": from_route, "from_step": from_step, "seq": seq, "at": AT}
    if to_route:
        r["to_route"] = to_route
    if to_step:
        r["to_step"] = to_step
    if reason:
        r["reason"] = reason
    return r


@case("routed-goto-implement")
def _():
    # The review's FAIL branch sent the node back: it entered implement with the review's text.
    return snapshot([
        bead("sp-a", "implement", entered=9, attempts={"implement": 1, "review": 1},
             guidance="## Review\nStandards: FAIL naming",
             last_check=check("review", 9, "refuse", "review: FAIL"),
             routing=[routing("goto", "review", "leaf", "implement", matched="FAIL")]),
    ])


@case("routed-route-compound")
def _():
    # The spec's compound branch moved a leaf to the compound route, landing on to-issues.
    return snapshot([
        bead("sp-a", "to-issues", route="compound", entered=9, verdict="compound",
             last_check=check("generate-spec", 8, "pass"),
             gate=gate("generate-spec", seq=9, state="approved"),
             routing=[routing("route", "generate-spec", "compound", "to-issues", when="accepted",
                              matched="compound")]),
    ])


@case("routed-abort-parked")
def _():
    # A branch's abort (or a target that did not resolve) parked the node where it was.
    return snapshot([
        bead("sp-a", "review", proposal=proposal("review", 7),
             last_check=check("review", 8, "refuse", "review: FAIL"),
             dead_letter={"step": "review", "reason": "no route matched", "seq": 9, "at": AT},
             routing=[routing("abort", "review", branch=3, reason="no route matched")]),
    ])


@case("route-gate-pending")
def _():
    # A branch's suggest_route opened a route gate: a person settles it, whatever the autonomy.
    g = gate("review")
    g["route"] = "compound"
    return snapshot([
        bead("sp-a", "review", autonomy="deep", proposal=proposal("review", 7),
             last_check=check("review", 8, "pass"), gate=g,
             routing=[routing("suggest_route", "review", "compound", when="accepted",
                              matched="PLANNING")]),
    ])


# --- landing gates (issue 33): a person approves a landing before its target moves -----------
TIP = "4b1d2c3e5f60718293a4b5c6d7e8f90123456789"


def land_gate(step, target, seq=9, state="pending", by=None):
    g = gate(step, seq=seq, state=state)
    if by:
        g["by"] = by
    g["land"] = {"sha": TIP, "target": target}
    return g


def delivering(id, target, autonomy=None, gate_=None, last_check=None, **kw):
    # A leaf at deliver, delivering directly to `target`, reviewed at TIP; its check (seq 9 by
    # default) passed and recorded a pending landing gate instead of moving the target.
    pipeline = dict(delivery="direct", target=target, reviewed_sha=TIP,
                    proposal=proposal("deliver", 7),
                    last_check=last_check or check("deliver", 9, "pass"),
                    gate=gate_ or land_gate("deliver", target))
    if autonomy:
        pipeline["autonomy"] = autonomy
    pipeline.update(kw)
    return bead(id, "deliver", **pipeline)


def relaxable(id, autonomy):
    # The contrast: an ordinary gate (implement's, relaxed by wave and deep) pending.
    return bead(id, "implement", autonomy=autonomy, gate=gate("implement"),
                proposal=proposal("implement", 7), last_check=check("implement", 8, "pass"))


@case("land-gate-pending-hitl")
def _():
    # hitl (the default): the landing on main waits for a person, like every gate at hitl.
    return snapshot([delivering("sp-a", "main")])


@case("land-gate-pending-wave")
def _():
    # wave relaxes implement's gate (sp-b) but not the landing gate on `release` (sp-a).
    return snapshot([delivering("sp-a", "release", autonomy="wave"), relaxable("sp-b", "wave")])


@case("land-gate-pending-deep")
def _():
    # deep relaxes implement's gate (sp-b) but not the landing gate on `release` (sp-a); the
    # level set by the config (sp-c) holds it too.
    return snapshot([delivering("sp-a", "release", autonomy="deep"), relaxable("sp-b", "deep"),
                     delivering("sp-c", "release")], autonomy_default="deep", jobs=3)


@case("land-gate-approved-checks")
def _():
    # A person approved the landing (seq 10) after the check that recorded it (seq 9): the next
    # check lands it, so decide asks for one (rule 22), at any autonomy.
    approved = land_gate("deliver", "main", seq=10, state="approved", by="alice")
    return snapshot([
        delivering("sp-a", "main", gate_=approved, seq=10),
        delivering("sp-b", "release", autonomy="deep", seq=10,
                   gate_=land_gate("deliver", "release", seq=10, state="approved", by="alice")),
    ], jobs=2)


# A transient landing refusal (the target kept moving, its checkout's index lock stayed held):
# nothing on the branch needs to change, so the check records `recheck` and the next check, not
# the agent, answers it, once per run (rule 24).
def moved(target):
    return (f"{target} kept moving while splice landed on it (someone is committing on it); "
            "nothing landed, and nothing on the branch needs to change: the next check lands it")


def busy(target):
    return (f"{target}'s checkout at /repo stayed busy while splice landed on it (index.lock "
            "held); nothing landed, and nothing on the branch needs to change: the next check "
            "lands it")


def conflict(id, target):
    return (f"merging splice/{id} into {target} conflicts in src/a.rs: merge `{target}` into the "
            "branch, resolve the conflicts there and commit; splice lands the result")


def unprotected(id, target, **kw):
    # `delivering` on a target that needs no approval: no landing gate.
    b = delivering(id, target, **kw)
    del b["pipeline"]["gate"]
    return b


@case("land-gate-approved-then-checked")
def _():
    # The check after the approval (seq 11) did not land: an escalation (sp-a: main checked out
    # with uncommitted work) rests escalated, a refusal (sp-b: the branch conflicts with main) is
    # the agent's to act on; neither asks for another check on the strength of the old approval.
    approved = land_gate("deliver", "main", seq=10, state="approved", by="alice")
    return snapshot([
        delivering("sp-a", "main", gate_=approved, seq=11,
                   last_check=check("deliver", 11, "escalate",
                                    "main is checked out at /repo with uncommitted work")),
        delivering("sp-b", "main", gate_=dict(approved), seq=11, attempts={"deliver": 1},
                   last_check=check("deliver", 11, "refuse", conflict("sp-b", "main"))),
    ], jobs=2)


@case("land-transient-earlier-run")
def _():
    # Made by an earlier run (sp-a), by a person's `splice transition deliver` (sp-b), and with
    # the attempts used up (sp-c, 3 of 3): each is checked again, none dispatched nor parked.
    approved = land_gate("deliver", "main", seq=10, state="approved", by="alice")
    return snapshot([
        unprotected("sp-a", "feature/x", seq=11, attempts={"deliver": 1},
                    last_check=check("deliver", 11, "refuse", busy("feature/x"), run="run-0",
                                     recheck=True)),
        delivering("sp-b", "main", gate_=approved, seq=11, attempts={"deliver": 1},
                   last_check=check("deliver", 11, "refuse", moved("main"), run="person",
                                    recheck=True)),
        unprotected("sp-c", "feature/x", seq=11, attempts={"deliver": 3},
                    last_check=check("deliver", 11, "refuse", moved("feature/x"), run="run-0",
                                     recheck=True)),
    ], jobs=3)


@case("land-transient-this-run")
def _():
    # This run already checked it and met the transient fault again: it rests `escalated` with
    # the check's reason (the next run checks it again), neither dispatched nor parked (sp-b has
    # used its 3 attempts), so a fault that lasts cannot spin a run.
    return snapshot([
        unprotected("sp-a", "feature/x", seq=11, attempts={"deliver": 1},
                    last_check=check("deliver", 11, "refuse", busy("feature/x"), run=RUN,
                                     recheck=True)),
        unprotected("sp-b", "feature/x", seq=11, attempts={"deliver": 3},
                    last_check=check("deliver", 11, "refuse", moved("feature/x"), run=RUN,
                                     recheck=True)),
    ], jobs=2)


@case("land-refused-conflict-dispatches")
def _():
    # A refusal the agent must answer on its branch (a conflict: no `recheck`) is dispatched as
    # before, whether this run (sp-a) or an earlier one (sp-b) made it; with the attempts used
    # up (sp-c) the node parks.
    def refused(id, attempts, run):
        return unprotected(id, "feature/x", seq=11, attempts={"deliver": attempts},
                           last_check=check("deliver", 11, "refuse", conflict(id, "feature/x"),
                                            run=run))
    return snapshot([refused("sp-a", 1, RUN), refused("sp-b", 1, "run-0"),
                     refused("sp-c", 3, "run-0")], jobs=3)


@case("land-gate-integrate-container")
def _():
    # A campaign root at integrate, its floors passed at seq 9: landing its documents on the
    # campaign branch waits, since the integrate gate does not relax at wave; a compound at
    # integrate waits the same way on a protected branch at deep. No level relaxes either.
    return snapshot([
        campaign_root(step="integrate", autonomy="wave", target="campaign/x", delivery="direct",
                      proposal=proposal("integrate", 7), last_check=check("integrate", 9, "pass"),
                      gate=land_gate("integrate", "campaign/x"), split=split()),
        bead("sp-c", "integrate", route="compound", autonomy="deep", target="release",
             delivery="direct", proposal=proposal("integrate", 7),
             last_check=check("integrate", 9, "pass"), gate=land_gate("integrate", "release"),
             split=split()),
    ])


# --- rule 25: an optional step whose command the run cannot find ----------------------------
SPEC_TOOL = ("step generate-spec would run `spec-tool`, which is not on PATH (set by "
             "`[agent.steps.generate-spec] command` in .splice/config.toml)")


@case("optional-unavailable-skip")
def _():
    # generate-spec is `optional: true` and its command is missing: where rule 29 would
    # dispatch it (or 15 park it), the node is skipped. implement is not optional: a snapshot
    # that names it anyway changes nothing. A fresh node is checked first (rule 22).
    return snapshot([
        bead("sp-a", "generate-spec", last_check=check("generate-spec", 8, "refuse", "no spec")),
        bead("sp-b", "generate-spec", attempts={"generate-spec": 3},
             last_check=check("generate-spec", 8, "refuse", "no spec")),
        bead("sp-c", "implement"),
        bead("sp-d", "generate-spec"),
    ], unavailable={"generate-spec": SPEC_TOOL,
                    "implement": "step implement would run `gone`, which is not on PATH"})


@case("optional-unavailable-waits")
def _():
    # Only where a dispatch would be chosen: a pending gate, a claim, a dead letter, a newer
    # proposal and a blocker come first.
    return snapshot([
        bead("sp-a", "generate-spec", proposal=proposal("generate-spec", 7),
             last_check=check("generate-spec", 8, "pass"), gate=gate("generate-spec")),
        bead("sp-b", "generate-spec", lease=lease(HOLDER)),
        bead("sp-c", "generate-spec",
             dead_letter={"step": "generate-spec", "reason": "by hand", "seq": 9, "at": AT}),
        bead("sp-d", "generate-spec", proposal=proposal("generate-spec", 9),
             last_check=check("generate-spec", 8, "refuse", "no spec")),
        bead("sp-e", "generate-spec", deps=["sp-a"],
             last_check=check("generate-spec", 8, "refuse", "no spec")),
    ], unavailable={"generate-spec": SPEC_TOOL})


# --- loop steps (issue 13): the default manifest with a loop on `implement` ------------------
def loop_manifest(**spec):
    m = json.loads(json.dumps(MANIFEST))
    for st in m["steps"]:
        if st["name"] == "implement":
            st["loop"] = {"max_iterations": 5, **spec}
    return m


LOOP = loop_manifest()


def it(n, seq, passed=1, failed=1, hash=None, conf=None, effect=None, stage_failed=False,
       started=AT, attempt=None):
    state = {"iteration": n, "stage_failed": stage_failed}
    if not stage_failed:
        state.update({"tests": {"passed": passed, "failed": failed, "errored": 0},
                      "change_hash": hash or f"h{n}"})
    if conf is not None:
        state["confidence"] = conf
    e = {"step": "implement", "seq": seq, "attempt": attempt or n, "started_at": started,
         "at": AT, "state": state}
    if effect:
        e["effect"] = effect
    return e


def looping(id, its, attempts=None, **kw):
    n = attempts if attempts is not None else len(its)
    last = its[-1]["seq"] if its else 6
    return bead(id, "implement", seq=last + 2, trajectory=its, attempts={"implement": n},
                last_dispatch=dispatch("implement", last - 1, attempt=n),
                exits=[exit_("implement", last + 1, False, attempt=n)] if its else [], **kw)


@case("loop-first-dispatch")
def _():
    return snapshot([bead("sp-a", "implement")], manifest=LOOP)


@case("loop-continue")
def _():
    # Rising scores, a failed exit just now and a backoff set: a measured iteration is not a
    # failure to wait after.
    return snapshot([looping("sp-a", [it(1, 7, 1, 2), it(2, 11, 2, 1)])], manifest=LOOP,
                    backoff_s=30)


@case("loop-unmeasured-exit-backs-off")
def _():
    # Attempt 3 ran and was not measured (splice lost it): its exit backs off as any failure.
    b = looping("sp-a", [it(1, 7, 1, 2), it(2, 11, 2, 1)], attempts=3)
    b["pipeline"]["exits"].append(exit_("implement", 14, False, attempt=3, kind="error"))
    b["pipeline"]["seq"] = 15
    return snapshot([b], manifest=LOOP, backoff_s=30)


@case("loop-success-checks")
def _():
    return snapshot([looping("sp-a", [it(1, 7, 1, 2), it(2, 11, 3, 0)])], manifest=LOOP)


@case("loop-success-refused-continues")
def _():
    b = looping("sp-a", [it(1, 7, 1, 2), it(2, 11, 3, 0)],
                last_check=check("implement", 13, "refuse", "the review floor refused"))
    b["pipeline"]["seq"] = 14
    return snapshot([b], manifest=LOOP)


@case("loop-success-on-last-iteration")
def _():
    its = [it(1, 7, 1, 2), it(2, 11, 2, 1), it(3, 15, 2, 2, hash="h3"), it(4, 19, 3, 1),
           it(5, 23, 4, 0)]
    return snapshot([looping("sp-a", its)], manifest=LOOP)


@case("loop-stop-iteration-limit")
def _():
    its = [it(1, 7, 1, 2), it(2, 11, 2, 1), it(3, 15, 3, 1), it(4, 19, 4, 1), it(5, 23, 5, 1)]
    return snapshot([looping("sp-a", its)], manifest=LOOP)


@case("loop-max-turns")
def _():
    # `--max-turns 2` in place of max_iterations 5.
    return snapshot([looping("sp-a", [it(1, 7, 1, 2), it(2, 11, 2, 1)])], manifest=LOOP,
                    max_turns=2)


@case("loop-stop-budget")
def _():
    its = [it(1, 7, 1, 2), it(2, 11, 2, 1)]
    its[0]["state"]["tokens"] = 600
    its[1]["state"]["tokens"] = 400
    return snapshot([looping("sp-a", its)], manifest=loop_manifest(token_budget=1000))


@case("loop-iterations-exhausted")
def _():
    # Two measured iterations and three dispatches that could not be measured: the dispatch
    # limit is the loop's.
    b = looping("sp-a", [it(1, 7, 1, 2), it(2, 11, 2, 1)], attempts=5)
    b["pipeline"]["exits"].append(exit_("implement", 14, False, attempt=5, kind="error"))
    b["pipeline"]["seq"] = 15
    return snapshot([b], manifest=LOOP)


@case("loop-escalate-repeated")
def _():
    return snapshot([looping("sp-a", [it(1, 7, 1, 2, hash="hx"), it(2, 11, 2, 1, hash="hx")])],
                    manifest=LOOP)


@case("loop-escalate-oscillation")
def _():
    its = [it(1, 7, 1, 2, hash="ha"), it(2, 11, 2, 1, hash="hb"),
           it(3, 15, 2, 2, hash="ha", effect={"effect": "recovery", "rule": "escalate_repeated",
                                               "why": "no escalation_command"}),
           it(4, 19, 3, 1, hash="hb")]
    return snapshot([looping("sp-a", its)], manifest=LOOP)


@case("loop-effect-done-continues")
def _():
    # The escalation after iteration 2 was carried out: the next iteration is dispatched.
    eff = {"effect": "escalated", "rule": "escalate_repeated", "command": ["codex", "exec"]}
    return snapshot([looping("sp-a", [it(1, 7, 1, 2, hash="hx"),
                                      it(2, 11, 2, 1, hash="hx", effect=eff)])], manifest=LOOP)


@case("loop-rollback")
def _():
    # 12, 22, -24: the latest below the first → restore iteration 2 (the best before it).
    its = [it(1, 7, 2, 1), it(2, 11, 3, 1), it(3, 15, 0, 3)]
    return snapshot([looping("sp-a", its)], manifest=LOOP)


@case("loop-rollback-tie-later")
def _():
    # 12, 12 (another change), 4: a tie between 1 and 2 restores the later.
    its = [it(1, 7, 2, 1), it(2, 11, 2, 1), it(3, 15, 1, 1)]
    return snapshot([looping("sp-a", its)], manifest=LOOP)


@case("loop-step-back")
def _():
    # 12, 12, 12: flat counts as no rise.
    its = [it(1, 7, 2, 1), it(2, 11, 2, 1), it(3, 15, 2, 1)]
    return snapshot([looping("sp-a", its)], manifest=LOOP)


@case("loop-two-states-no-step-back")
def _():
    # Rules 5 and 6 need three states: two flat ones continue.
    return snapshot([looping("sp-a", [it(1, 7, 2, 1), it(2, 11, 2, 1)])], manifest=LOOP)


@case("loop-ask-user")
def _():
    its = [it(1, 7, 1, 3, conf=0.9), it(2, 11, 2, 2, conf=0.6), it(3, 15, 3, 1, conf=0.3)]
    return snapshot([looping("sp-a", its)], manifest=LOOP)


@case("loop-ask-user-headless-parks")
def _():
    its = [it(1, 7, 1, 3, conf=0.9), it(2, 11, 2, 2, conf=0.6), it(3, 15, 3, 1, conf=0.3)]
    return snapshot([looping("sp-a", its)], manifest=LOOP, no_person=True)


@case("loop-wall-time")
def _():
    # Iteration 1 started 601 s before now; the default wall time is max(600, timeout_s).
    its = [it(1, 7, 1, 2, started="2024-12-31T23:49:59Z"), it(2, 11, 2, 1)]
    return snapshot([looping("sp-a", its)], manifest=loop_manifest(wall_time_s=600))


@case("loop-stage-failed-continues")
def _():
    # A stage failure counts towards the limit and is never judged: the loop goes on.
    its = [it(1, 7, 1, 2), it(2, 11, stage_failed=True)]
    return snapshot([looping("sp-a", its)], manifest=LOOP)


@case("loop-reentered-counts-from-entry")
def _():
    # Sent back to the loop step after 5 iterations on an earlier visit (a review's goto): the
    # limit counts this visit's dispatches (`attempts_before` on the entry), so it dispatches.
    b = bead("sp-a", "implement", attempts={"implement": 5},
             history=[{"step": "implement", "seq": 5, "at": AT, "attempts_before": 5}])
    return snapshot([b], manifest=LOOP)


@case("loop-other-step-ignored")
def _():
    # Iterations recorded before the node (re-)entered the step are not this visit's.
    old = [it(1, 3, 0, 3), it(2, 4, 0, 3)]
    b = bead("sp-a", "implement", trajectory=old)
    return snapshot([b], manifest=LOOP)


# Issue 34: the default manifest itself (no loop added here): implement iterates with the
# detected tests, the facts and the analyzers; leaf has generate-tests after it (a loop of 3).
def at_step(step, e):
    e["step"] = step
    return e


def default_loop(id, step, its, **kw):
    n = len(its)
    last = its[-1]["seq"] if its else 6
    return bead(id, step, seq=last + 2, trajectory=its, attempts={step: n},
                last_dispatch=dispatch(step, last - 1, attempt=n),
                exits=[exit_(step, last + 1, False, attempt=n)] if its else [], **kw)


@case("default-implement-iterates")
def _():
    # The default implement: a new failing test after iteration 1 → iteration 2, at once.
    return snapshot([default_loop("sp-a", "implement", [it(1, 7, 2, 1)])])


@case("default-implement-success-checks")
def _():
    return snapshot([default_loop("sp-a", "implement", [it(1, 7, 2, 1), it(2, 11, 3, 0)])])


@case("default-generate-tests-first-dispatch")
def _():
    # implement passed its gate; the leaf route's next step, the test generator, is a loop.
    return snapshot([bead("sp-a", "generate-tests")])


@case("default-generate-tests-limit-parks")
def _():
    # The test generator's own limit is 3 iterations (implement's is 5).
    its = [at_step("generate-tests", it(n, 3 + 4 * n, 2, 1)) for n in (1, 2, 3)]
    return snapshot([default_loop("sp-a", "generate-tests", its)])


@case("default-generate-tests-unavailable-skip")
def _():
    # generate-tests is `optional: true`: its command missing, it is skipped (rule 25).
    return snapshot([bead("sp-a", "generate-tests",
                          last_check=check("generate-tests", 8, "refuse", "no test file"))],
                    unavailable={"generate-tests":
                                 "step generate-tests would run `gone`, which is not on PATH"})


def main():
    import sys
    # With case names, only those are written (the others keep the manifest they embed).
    wanted = set(sys.argv[1:])
    for name, snap in CASES.items():
        if wanted and name not in wanted:
            continue
        with open(os.path.join(HERE, f"{name}.json"), "w") as f:
            json.dump(snap, f, indent=2)
            f.write("\n")
    print(f"{len(wanted) or len(CASES)} snapshots written")


if __name__ == "__main__":
    main()
