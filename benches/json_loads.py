"""The floor a compaction pass of a whole session is measured against: Python's json.loads of
every line of the session file, the least any program does that reads every entry
(scripts/bench-compact.sh). Prints nothing; time it from outside (wall, CPU, peak memory).

Usage: python3 benches/json_loads.py FILE
"""

import json
import sys


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as lines:
        entries = [json.loads(line) for line in lines]
    if not entries:
        sys.exit("no entries read")


if __name__ == "__main__":
    main()
