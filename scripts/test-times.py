#!/usr/bin/env python3
"""Prints a nextest JUnit report's total time and its slowest tests.

Usage: test-times.py REPORT.xml [N]   (N slowest, 10 by default)
"""
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: test-times.py REPORT.xml [N]", file=sys.stderr)
        return 2
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    root = ET.parse(sys.argv[1]).getroot()
    cases = []
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            name = f"{suite.get('name', '')} {case.get('name', '')}".strip()
            cases.append((float(case.get("time") or 0.0), name))
    total = float(root.get("time") or 0.0)
    busy = sum(t for t, _ in cases)
    print(f"{len(cases)} tests in {total:.1f} s wall clock ({busy:.1f} s summed over tests)")
    print(f"slowest {min(count, len(cases))}:")
    for seconds, name in sorted(cases, reverse=True)[:count]:
        print(f"  {seconds:7.2f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
