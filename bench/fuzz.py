"""Long fuzz profile: every decoder for N minutes in total (split evenly between targets).

Same targets and mutators as ``tests/test_fuzz.py`` (``tests/fuzzing.py``), driven by a seeded
``random.Random`` instead of hypothesis so millions of cases cost nothing extra. Each case runs
under a per-case time bound; an exception that is not a ``HermesError`` (or a hang) is
unexpected and is printed with a minimal reproducer (shrunk by cutting bytes while the same
exception type keeps happening).

    python bench/fuzz.py --minutes 2 [--seed 1] [--only openai_chat.sse]

Prints a table (cases, accepted, refused, unexpected per target) and a final line
``fuzz cases N unexpected U``; exits 1 when U > 0.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the fuzz harness is test code

from fuzzing import SEED, SEED_VAR, TARGETS, Outcome, Target, capture_corpus, check, report, where

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=1.0, help="total run time, split between targets")
    ap.add_argument("--seed", type=int, default=SEED, help=f"replay a run (default: ${SEED_VAR} or fresh)")
    ap.add_argument("--only", action="append", help="run only this target (repeatable)")
    args = ap.parse_args(argv)

    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-fuzz-")  # never the user's home
    targets = [t for t in TARGETS if not args.only or t.name in args.only]
    if not targets:
        print(f"no such target; known: {', '.join(t.name for t in TARGETS)}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    corpus = capture_corpus()
    print(f"seeds captured from the emulators in {time.monotonic() - t0:.1f}s "
          f"({sum(len(v) for v in corpus.values())} payloads); seed {args.seed}")
    per_target = args.minutes * 60 / len(targets)
    rows: list[tuple[str, int, int, int, int]] = []
    failures: list[tuple[Target, bytes, Outcome]] = []
    for target in targets:
        rnd = random.Random(f"{args.seed}:{target.name}")
        counts = {"ok": 0, "refused": 0, "unexpected": 0}
        seen: set[tuple[str, str]] = set()
        end = time.monotonic() + per_target
        while time.monotonic() < end:
            data = target.case(corpus, rnd)
            outcome = check(target, data)
            counts[outcome.kind] += 1
            if outcome.kind == "unexpected" and outcome.error is not None:
                key = (type(outcome.error).__name__, where(outcome.error))
                if key not in seen:  # one reproducer per distinct failure site
                    seen.add(key)
                    failures.append((target, data, outcome))
        rows.append((target.name, sum(counts.values()), counts["ok"], counts["refused"], counts["unexpected"]))

    w = max(len(r[0]) for r in rows)
    print(f"\n{'target':<{w}}  {'cases':>9}  {'accepted':>9}  {'refused':>9}  {'unexpected':>10}")
    for name, n, ok, refused, bad in rows:
        print(f"{name:<{w}}  {n:>9}  {ok:>9}  {refused:>9}  {bad:>10}")
    for target, data, outcome in failures:
        print("\n" + report(target, data, outcome, args.seed))
    total = sum(r[1] for r in rows)
    unexpected = sum(r[4] for r in rows)
    print(f"\nfuzz cases {total} unexpected {unexpected}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
