#!/usr/bin/env python3
"""Per-case score agreement between AgentV 4.42.4 and agentv on the compat suites (stdlib only).

Reads, for each suite `suites/<name>.eval.yaml`:
* the designed scores: `id: <case>  # designed: <score>` comments in the suite file and in the
  case files it references (`tests: <path>` or `file://<path>`);
* 4.42.4's run directory `<ts>/<name>/index.jsonl` (rows `test_id`, `score`);
* agentv's results `<ours>/<name>.jsonl` (rows `eval_id`, `score`) and its log `<ours>/<name>.log`.

Prints a table per suite (id, designed, TS, ours, agree?) and the totals; writes the same as JSON
with `--json`. Exit 0 (it is a report); with `--strict`, 1 when a case disagrees or 4.42.4 did
not give a designed score.
"""

import argparse
import json
import re
import sys
from pathlib import Path

TOLERANCE = 1e-6
# A case id: `- id:` at the top level of a cases file or one level in (under `tests:`); deeper
# `id:` keys are rubric ids.
CASE_ID = re.compile(r"^ {0,2}-\s+id:\s*['\"]?([^'\"#\s]+)['\"]?\s*(?:#\s*designed:\s*([0-9.]+))?")
REFERENCE = re.compile(r"(?:^tests:\s*['\"]?([^'\"#\s]+)|file://([^'\"#\s]+))", re.M)


def designed_scores(suite):
    """Case ids in the order written, with their designed score (None when not given)."""
    cases = {}
    files = [suite]
    seen = set()
    while files:
        path = files.pop(0)
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            m = CASE_ID.match(line)
            if m:
                cases.setdefault(m.group(1), float(m.group(2)) if m.group(2) else None)
        for m in REFERENCE.finditer(text):
            ref = m.group(1) or m.group(2)
            if ref.endswith((".yaml", ".yml")):
                files += sorted(p.resolve() for p in path.parent.glob(ref))
    return cases


def read_rows(path, id_key):
    rows = {}
    if not path.is_file():
        return None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except ValueError:
            continue
        case = row.get(id_key)
        if isinstance(case, str) and case not in rows:
            rows[case] = row
    return rows


def first_error(log):
    if not log.is_file():
        return "not run"
    lines = [l.strip() for l in log.read_text(encoding="utf-8", errors="replace").splitlines() if l.strip()]
    for line in lines:
        if re.search(r"\berror\b", line, re.I):
            return line[:160]
    return lines[-1][:160] if lines else f"nothing in {log}"


def fmt(score):
    if score is None:
        return "-"
    return f"{score:.6g}" if isinstance(score, (int, float)) else str(score)


def close(a, b):
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= TOLERANCE


def compare_suite(name, suite, ts_dir, ours_dir):
    designed = designed_scores(suite)
    ts = read_rows(ts_dir / name / "index.jsonl", "test_id")
    ours = read_rows(ours_dir / f"{name}.jsonl", "eval_id")
    ids = list(designed)
    for rows in (ts or {}, ours or {}):
        ids += [i for i in rows if i not in ids]
    cases = []
    for case in ids:
        t = (ts or {}).get(case)
        o = (ours or {}).get(case)
        ts_score = t.get("score") if t else None
        our_score = o.get("score") if o else None
        cases.append(
            {
                "id": case,
                "designed": designed.get(case),
                "ts": ts_score,
                "ts_status": t.get("execution_status") if t else None,
                "ours": our_score,
                "ours_status": o.get("execution_status") if o else None,
                "ours_error": (o.get("error") if o else None),
                "agree": close(ts_score, our_score),
                "ts_as_designed": designed.get(case) is None or close(ts_score, designed.get(case)),
            }
        )
    notes = []
    if ts is None:
        notes.append(f"4.42.4 wrote no index.jsonl: {first_error(ts_dir / f'{name}.log')}")
    if not ours:
        notes.append(f"agentv graded nothing: {first_error(ours_dir / f'{name}.log')}")
    return {"suite": name, "cases": cases, "notes": notes}


def print_suite(result):
    cases = result["cases"]
    agree = sum(c["agree"] for c in cases)
    print(f"\n== {result['suite']}: {agree} of {len(cases)} cases agree")
    for note in result["notes"]:
        print(f"   {note}")
    width = max([len(c["id"]) for c in cases] + [4])
    print(f"   {'case':<{width}}  {'designed':>8}  {'TS 4.42.4':>10}  {'ours':>10}  agree")
    for c in cases:
        mark = "yes" if c["agree"] else "NO"
        if not c["ts_as_designed"]:
            mark += "  (TS differs from the design)"
        if c["ours"] is None and c["ours_error"]:
            mark += f"  ours: {str(c['ours_error'])[:80]}"
        elif c["ours"] is None and not result["notes"]:
            mark += "  ours: no result for this case"
        print(f"   {c['id']:<{width}}  {fmt(c['designed']):>8}  {fmt(c['ts']):>10}  {fmt(c['ours']):>10}  {mark}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=Path, required=True)
    parser.add_argument("--ts", type=Path, required=True, help="directory of 4.42.4 run directories")
    parser.add_argument("--ours", type=Path, required=True, help="directory of agentv results files")
    parser.add_argument("--json", type=Path, help="also write the comparison as JSON here")
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("names", nargs="*", help="suite names (default: every suites/*.eval.yaml)")
    args = parser.parse_args()

    suites = sorted(args.suites.glob("*.eval.yaml"))
    if args.names:
        suites = [s for s in suites if s.name[: -len(".eval.yaml")] in args.names]
    results = [compare_suite(s.name[: -len(".eval.yaml")], s, args.ts, args.ours) for s in suites]
    for r in results:
        print_suite(r)
    cases = [c for r in results for c in r["cases"]]
    agree = sum(c["agree"] for c in cases)
    as_designed = sum(c["ts_as_designed"] and c["ts"] is not None for c in cases)
    print(f"\nTS 4.42.4 gave the designed score in {as_designed} of {len(cases)} cases")
    print(f"{agree} of {len(cases)} cases agree (|Δ| ≤ {TOLERANCE:g})")
    if args.json:
        args.json.write_text(json.dumps({"suites": results, "agree": agree, "total": len(cases)}, indent=2))
    if args.strict and (agree < len(cases) or as_designed < len(cases)):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
