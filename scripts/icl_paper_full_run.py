"""Archive what the induction-heads chapter measured at paper scale (``FULL=1``).

``booktools.full_run`` executes the chapter with ``FULL=1``: the main run is then ``PAPER``
(relative positions, one seed), and the chapter's checks log each measured value with the
check that read it (``CHAPTER.checks.jsonl``, one JSON record per line: held, message, source
line; a tab-separated ``chapter<TAB>record`` file of several chapters works too). This
script reads that log and writes the mechanism numbers the chapter quotes for ``PAPER``
to ``src/seqtheory/data/icl_paper_full_run.json``:

    FULL=1 python -m booktools.full_run --chapters induction_heads --timeout 3600
    python scripts/icl_paper_full_run.py _build/full_run/induction_heads.checks.jsonl \\
        --device "NVIDIA H200 GPU" --torch 2.11.0+cu130 --date 2026-11-26 --commit a721146

It reads the values from the check messages, so it needs the checks of the chapter at the
commit given (their source lines are matched below); it stops with the missing check's name
if one is not in the log.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# value -> (the start of the source line of the check that logs it, how to read its message)
CHECKS = {
    "profile": "check(early > 0.6 and 15 <= reach <= 80 and late < 1.5",
    "rise": "check(rise_prev is not None and rise_ind is not None",
    "switch": "check(abs(rise_ind - switch) <= 200",
    "knock": 'check(knock["layer 1: no previous-token weight"]',
    "unigram": "check(abs(now - archived) < 4 * se + 0.005",
}
KNOCKS = ("none", "layer 1: no previous-token weight", "layer 2: mean pattern")


def read_log(path: Path) -> list[dict]:
    """The check records of ``path`` (JSON lines, optionally after ``chapter<TAB>``)."""
    records = []
    for line in path.read_text().splitlines():
        if line.strip():
            chapter, _, rest = line.partition("\t")
            record = json.loads(rest if rest else chapter)
            if not rest or chapter == "induction_heads":
                records.append(record)
    return records


def _message(records: list[dict], key: str) -> str:
    found = [r["message"] for r in records if r["line"].startswith(CHECKS[key])]
    if not found:
        raise SystemExit(
            f"no check starting {CHECKS[key]!r} in the log: is it the "
            "induction-heads chapter at the commit given?"
        )
    return found[0]


def _numbers(message: str) -> list:
    return ast.literal_eval(re.sub(r"np\.(?:float|int)64\(([^)]*)\)", r"\1", message))


def extract(records: list[dict]) -> dict:
    """The archived values: layer 1's profile, the rise steps, the switch, the knock-out
    losses, and the unigram rule's loss on the fresh sequences of the chapter's live check
    of the paper-scale archive (the log does not hold it on the run's held-out ones)."""
    early, reach, late = _numbers(_message(records, "profile"))
    rise_prev, rise_ind = _numbers(_message(records, "rise"))
    _, switch = _numbers(_message(records, "switch"))
    knock_msg = _message(records, "knock")
    knock = {}
    for name in KNOCKS:  # the message is a dict's repr, possibly cut short after these
        m = re.search(re.escape(repr(name)) + r": ([0-9.eE+-]+)", knock_msg)
        if m is None:
            raise SystemExit(f"knock-out {name!r} is not in the logged message")
        knock[name] = float(m.group(1))
    unigram = [_numbers(r["message"]) for r in records if r["line"].startswith(CHECKS["unigram"])]
    unigram = [v for v in unigram if v[0] == "unigram"]
    if not unigram:
        raise SystemExit("no live-loss check of the unigram rule in the log")
    return {
        "prev_early": float(early),
        "prev_reach": int(reach),
        "prev_late_ratio": float(late),
        "rise_prev": int(rise_prev),
        "rise_ind": int(rise_ind),
        "switch": int(switch),
        "knock": knock,
        "unigram": float(unigram[0][1]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path, help="the chapter's check log from booktools.full_run")
    ap.add_argument("--device", required=True)
    ap.add_argument("--torch", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument(
        "--out", type=Path, default=ROOT / "src" / "seqtheory" / "data" / "icl_paper_full_run.json"
    )
    args = ap.parse_args()
    values = extract(read_log(args.log))
    meta = {
        "script": "booktools.full_run (FULL=1), read by scripts/icl_paper_full_run.py",
        "configuration": "PAPER",
        "seeds": [0],
        "device": args.device,
        "torch": args.torch,
        "date": args.date,
        "commit": args.commit,
    }
    args.out.write_text(json.dumps({"meta": meta, "values": values}, indent=1) + "\n")
    print(json.dumps(values, indent=1))


if __name__ == "__main__":
    main()
