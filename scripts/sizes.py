#!/usr/bin/env python3
"""Sizes of the shipped Rust code: files over 500 lines and functions over 80.

Shipped code is every `.rs` file under `crates/*/src/`, without test files (`tests.rs`,
`tests_*.rs`, `*_tests.rs`, anything under a `tests/` folder) and without the `#[cfg(test)]`
module a file ends with. A function runs from its `fn` line to the brace that closes its body
(braces inside strings, chars and comments are skipped). docs/architecture.md, *Sizes* says
which files may be long and why.

    scripts/sizes.py            the summary and every long file and function
    scripts/sizes.py --quiet    the summary only
    scripts/sizes.py DIR        the same for another checkout (an exported commit, say)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILE_LIMIT = 500
FN_LIMIT = 80
FN_START = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def is_test_file(path: Path) -> bool:
    name = path.name
    return (
        name == "tests.rs"
        or name.startswith("tests_")
        or name.endswith("_tests.rs")
        or "tests" in path.parts[:-1]
    )


def shipped_lines(text: str) -> list[str]:
    """The file's lines up to its trailing `#[cfg(test)]` module."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]") and i + 1 < len(lines) and "mod " in lines[i + 1]:
            return lines[:i]
    return lines


def strip_code(line: str, state: dict) -> str:
    """`line` with strings, chars and comments blanked; `state` carries a block comment or a
    multi-line string across lines."""
    out = []
    i = 0
    while i < len(line):
        c = line[i]
        if state.get("block"):
            if line.startswith("*/", i):
                state["block"] = False
                i += 2
            else:
                i += 1
            continue
        if state.get("string"):
            if c == "\\":
                i += 2
            elif c == '"':
                state["string"] = False
                i += 1
            else:
                i += 1
            continue
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        raw = re.match(r'r(#*)"', line[i:])
        if raw and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
            end = '"' + raw.group(1)
            close = line.find(end, i + len(raw.group(0)))
            i = len(line) if close < 0 else close + len(end)
            continue
        if c == '"':
            state["string"] = True
            i += 1
            continue
        char = re.match(r"'(\\.|[^\\'])'", line[i:])
        if char:
            i += len(char.group(0))
            continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(lines: list[str]):
    """(name, first line, length) of every function with a body."""
    state: dict = {}
    code = [strip_code(line, state) for line in lines]
    found = []
    for start, line in enumerate(code):
        m = FN_START.match(line)
        if not m:
            continue
        depth = 0
        parens = 0
        opened = False
        for end in range(start, len(code)):
            for ch in code[end]:
                if not opened and ch in "()":
                    parens += 1 if ch == "(" else -1
                elif not opened and parens > 0:
                    # A brace inside the parameter list is a pattern's
                    # (`Viewed { view, plain }: Viewed<'_>`), not the body's.
                    continue
                elif ch == "{":
                    depth += 1
                    opened = True
                elif ch == "}":
                    depth -= 1
                elif ch == ";" and not opened and depth == 0:
                    break
            else:
                if opened and depth == 0:
                    found.append((m.group(6), start + 1, end - start + 1))
                    break
                continue
            break
    return found


def main() -> int:
    quiet = "--quiet" in sys.argv
    dirs = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = Path(dirs[0]).resolve() if dirs else ROOT
    long_files = []
    long_fns = []
    for path in sorted(root.glob("crates/*/src/**/*.rs")):
        rel = path.relative_to(root)
        if is_test_file(rel):
            continue
        lines = shipped_lines(path.read_text(encoding="utf-8"))
        if len(lines) > FILE_LIMIT:
            long_files.append((len(lines), str(rel)))
        for name, line, length in functions(lines):
            if length > FN_LIMIT:
                long_fns.append((length, f"{rel}:{line}", name))
    long_files.sort(reverse=True)
    long_fns.sort(reverse=True)
    print(f"shipped files over {FILE_LIMIT} lines: {len(long_files)}")
    if not quiet:
        for n, rel in long_files:
            print(f"  {n:5}  {rel}")
    over_120 = sum(1 for n, _, _ in long_fns if n > 120)
    print(f"functions over {FN_LIMIT} lines: {len(long_fns)} ({over_120} over 120)")
    if not quiet:
        for n, at, name in long_fns:
            print(f"  {n:5}  {name}  {at}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
