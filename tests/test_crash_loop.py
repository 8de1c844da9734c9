"""The crash loop's quick profile: SIGKILL the real CLI (chat turns and `sessions compress`)
mid-request, mid-stream, mid-commit and at random moments against slow-streaming emulators
on four routes; after every kill state.db is intact, every committed turn whole and identical
to what the emulator sent, nothing lost. The full run is `python bench/crash_loop.py`."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from crash_loop import ROUTES, crash_loop


def test_fifteen_kills_leave_whole_turns_only(hermes_home: Path) -> None:
    with crash_loop(seed=9, delay=0.01, commit_delay=0.25, home=hermes_home, log=lambda _: None) as loop:
        report = loop.run(15)
    summary = "\n".join(report.lines())
    assert report.kills == 15, summary
    assert report.survived == report.kills, summary
    assert (report.lost, report.partial, report.mismatched, report.failed_runs) == (0, 0, 0, 0), summary
    assert not report.problems, summary
    assert set(report.by_route) == set(ROUTES), summary
    assert {"request", "stream", "commit"} <= {p.split("/")[-1] for p in report.phases}, summary
