#!/usr/bin/env python3
"""bench_compare.py: compare two `parity bench op` reports (bench.json) row by row.

Rows are matched on (op, pass, shape, dtype, backend). For each pair it prints both medians, the
ratio new/old and a verdict: "same" when the two medians differ by less than the allowed spread,
"faster" or "SLOWER" otherwise. The allowed spread is max(--floor, --k * (noise_old + noise_new)),
where noise is the report's median absolute deviation / median of that row, so a noisy row is given
the room its own runs show. Rows present in only one report are listed, not silently dropped.

Exit codes: 0 every matched row is "same" or "faster"; 1 some row is SLOWER or some row of the old
report is missing from the new one; 2 usage or unreadable/malformed input (the message names the file).

usage: tools/bench_compare.py OLD.json NEW.json [--floor 0.03] [--k 3] [--markdown FILE]
"""
import argparse
import json
import sys


def fail(message):
    print(f"bench_compare: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, json.JSONDecodeError) as error:
        fail(f"{path}: {error}")
    rows = report.get("benchmarks") if isinstance(report, dict) else None
    if not isinstance(rows, list):
        fail(f"{path}: no 'benchmarks' list (not a parity bench report)")
    table = {}
    for index, row in enumerate(rows):
        try:
            key = (row["op"], row["pass"], row["shape"], row["dtype"], row["backend"])
        except (KeyError, TypeError):
            fail(f"{path}: benchmarks[{index}] lacks op/pass/shape/dtype/backend")
        table[key] = row
    return report, table


def timing(row):
    t = row.get("timing") or {}
    median, noise = t.get("median_ms"), t.get("noise")
    if row.get("status") != "ok" or not isinstance(median, (int, float)) or median <= 0:
        return None, None
    return float(median), float(noise or 0.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--floor", type=float, default=0.03, help="smallest relative spread counted as noise (default 0.03)")
    parser.add_argument("--k", type=float, default=3.0, help="multiple of the two rows' noise allowed (default 3)")
    parser.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = parser.parse_args()
    _, old = load(args.old)
    _, new = load(args.new)

    lines = ["| op | pass | shape | backend | old ms | new ms | new/old | allowed | verdict |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    slower = missing = 0
    for key, old_row in old.items():
        op, pass_, shape, dtype, backend = key
        new_row = new.get(key)
        if new_row is None:
            lines.append(f"| {op} | {pass_} | {shape} {dtype} | {backend} | | | | | MISSING in new |")
            missing += 1
            continue
        old_ms, old_noise = timing(old_row)
        new_ms, new_noise = timing(new_row)
        if old_ms is None or new_ms is None:
            verdict = f"status {old_row.get('status')} -> {new_row.get('status')}"
            if old_ms is not None:
                slower += 1
            lines.append(f"| {op} | {pass_} | {shape} {dtype} | {backend} | | | | | {verdict} |")
            continue
        ratio = new_ms / old_ms
        allowed = max(args.floor, args.k * (old_noise + new_noise))
        verdict = "same" if abs(ratio - 1.0) <= allowed else ("faster" if ratio < 1.0 else "SLOWER")
        slower += verdict == "SLOWER"
        lines.append(f"| {op} | {pass_} | {shape} {dtype} | {backend} | {old_ms:.4f} | {new_ms:.4f} | "
                     f"{ratio:.3f} | ±{allowed:.3f} | {verdict} |")
    for key in new:
        if key not in old:
            op, pass_, shape, dtype, backend = key
            lines.append(f"| {op} | {pass_} | {shape} {dtype} | {backend} | | | | | new row |")
    lines.append("")
    lines.append(f"{len(old)} old rows, {len(new)} new rows: {slower} slower, {missing} missing")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return 1 if slower or missing else 0


if __name__ == "__main__":
    sys.exit(main())
