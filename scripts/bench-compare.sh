#!/usr/bin/env bash
# `scripts/bench.sh --compare`: runs the benchmarks that guard the figures of
# docs/performance.md and prints each as a ratio to a reference measured in the same run on the
# same machine, next to the committed baseline (benches/baseline.json). A ratio more than 15 %
# worse than its baseline is printed as a REGRESSION with its name, and the script exits 1.
#
#   open_indexed        `context --json` on a 270 MB, 100k-entry session with its index ÷ `wc -l`
#   open_first          the same without the index sidecar ÷ `wc -l`
#   resume_first_frame  `resume`'s first frame on that session ÷ `wc -l`
#   exec_last           one `exec --last` turn on it (local mock) ÷ `wc -l`
#   exec_round_trip     a one-prompt `exec` ÷ the floor (one request, two lines synced)
#   compact_100k        `compact` of a never-compacted 100k-entry session ÷ Python json.loads
#   stream_cpu          CPU while a long reply streams in the UI, in cores (reference: 1 core)
#   loop_200_calls      summary requests per note in a 200-call turn at a 16k window
#
# Usage: scripts/bench-compare.sh [--write-baseline]
#   --write-baseline   stores this run's ratios as the new baseline (say why in the commit)
# The rule (docs/performance.md, *Guarding the figures*): a change that makes a ratio worse by
# more than 15 % lands only with a note that says why.
set -euo pipefail
cd "$(dirname "$0")/.."
write=0
[ "${1:-}" = --write-baseline ] && write=1
baseline="benches/baseline.json"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

say() { printf '\n==> %s\n' "$*" >&2; }

say "opening a long session (scripts/bench-open.sh 3)"
scripts/bench-open.sh 3 | tee "$out/open" >&2
say "exec round trip (scripts/bench-exec.sh 10, without Codex)"
CODEX=0 scripts/bench-exec.sh 10 | tee "$out/exec" >&2
say "compacting a never-compacted session (scripts/bench-compact.sh 1)"
scripts/bench-compact.sh 1 | tee "$out/compact" >&2
say "streaming in the terminal UI (scripts/bench-stream.sh 20)"
scripts/bench-stream.sh 20 | tee "$out/stream" >&2
say "a 200-call turn at 16k (long_turn 200 16000)"
cargo run --release -q --locked -p codewhale-engine --example long_turn -- 200 16000 \
  | tee "$out/loop" >&2

python3 - "$out" "$baseline" "$write" <<'PY'
import json, re, sys
out, baseline_path, write = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
read = lambda name: open(f"{out}/{name}").read()

def seconds(text, label):
    m = re.search(re.escape(label) + r"\s+([0-9.]+)s", text)
    if not m:
        raise SystemExit(f"bench-compare: no figure for {label!r} in the output")
    return float(m.group(1))

# The 270 MB session is the first block of bench-open's output.
big = read("open").split("27 MB,")[0]
wc = seconds(big, "floor: wc -l")
frames = [float(x) for x in re.findall(r"first frame ([0-9.]+)s", big)]
frames.sort()
ratios = {
    "open_indexed": seconds(big, "context --json (indexed)") / wc,
    "open_first": seconds(big, "context --json (first open)") / wc,
    "resume_first_frame": frames[len(frames) // 2] / wc,
    "exec_last": seconds(big, "exec --last (one turn)") / wc,
}
exec_text = read("exec")
wall = float(re.search(r"wall time: median ([0-9.]+)s", exec_text).group(1))
floor = float(re.search(r"the floor[^:]*: median ([0-9.]+)s", exec_text).group(1))
ratios["exec_round_trip"] = wall / floor
ratios["compact_100k"] = float(re.search(r"ratio to the floor: ([0-9.]+)", read("compact")).group(1))
ratios["stream_cpu"] = float(re.search(r"CPU while the reply streams: ([0-9.]+) %", read("stream")).group(1)) / 100
loop = read("loop").splitlines()[0]
requests = int(re.search(r"summary_requests=(\d+)", loop).group(1))
notes = max(1, int(re.search(r"notes_in_session=(\d+)", loop).group(1)))
ratios["loop_200_calls"] = requests / notes

try:
    base = json.load(open(baseline_path))
except FileNotFoundError:
    base = {}
worse = []
print(f"{'figure':<20}{'ratio':>10}{'baseline':>10}{'change':>10}")
for name, ratio in ratios.items():
    b = base.get(name)
    change = "" if b is None else f"{(ratio / b - 1) * 100:+.0f} %"
    flag = ""
    if b is not None and ratio > b * 1.15:
        flag = "  REGRESSION"
        worse.append(name)
    print(f"{name:<20}{ratio:>10.2f}{'' if b is None else f'{b:.2f}':>10}{change:>10}{flag}")
if write:
    import os
    os.makedirs(os.path.dirname(baseline_path) or ".", exist_ok=True)
    json.dump({k: round(v, 3) for k, v in ratios.items()}, open(baseline_path, "w"), indent=2)
    open(baseline_path, "a").write("\n")
    print(f"wrote {baseline_path}")
if worse and not write:
    print("regressions (more than 15 % worse than the baseline): " + ", ".join(worse))
    sys.exit(1)
PY
