#!/usr/bin/env python3
"""Every cost row of sim/cost.h is documented in sim/README.md with its default.

usage: check_cost_doc.py sim/cost.h sim/README.md
A row is documented when one line of the README names it in backquotes and
carries its default value (as in the cost and duration tables), so the table
cannot drift from the code."""
import re
import sys


def main():
    header, readme = sys.argv[1], sys.argv[2]
    rows = re.findall(r'X\((\w+), "(\w+)", (\d+)\)', open(header).read())
    if len(rows) < 10:
        print(f"check_cost_doc: found only {len(rows)} rows in {header}")
        return 1
    lines = open(readme).read().splitlines()
    bad = 0
    for _, name, dflt in rows:
        pat = re.compile(r"`" + name + r"`")
        num = re.compile(r"(?<![\d.])" + dflt + r"(?![\d.])")
        if not any(pat.search(l) and num.search(l) for l in lines):
            print(f"check_cost_doc: {readme} does not document `{name}` with its default {dflt}")
            bad += 1
    print(f"check_cost_doc: {len(rows)} rows, {bad} undocumented")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
