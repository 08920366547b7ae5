#!/usr/bin/env bash
# `scripts/bench.sh --compare` and `scripts/bench.sh --update`: runs the benchmarks that guard the
# figures of docs/performance.md and prints each as a ratio to a reference measured in the same
# run on the same machine, twice judged:
#
# - against the committed baseline (benches/baseline.json, which records for each figure the
#   commit and the machine it was taken on): more than 15 % worse is a REGRESSION;
# - against the targets of docs/performance.md, *Guarding the figures* (at most 0.1x Codex's
#   wall time, at most 2.5x a `wc -l` of the file, the memory caps): beyond one is MISSED.
# Either makes the script exit 1.
#
# Ratios to `wc -l` are taken run by run (each run right after a `wc -l` of the same file) and
# their median kept, as Codex is interleaved with `exec`: a load that changes during the run
# moves both sides of a pair.
#
#   open_indexed        `context --json` on a 270 MB, 100k-entry session with its index ÷ `wc -l`
#   open_first          the same without the index sidecar ÷ `wc -l`
#   resume_first_frame  `resume`'s first frame on that session ÷ `wc -l`
#   exec_last           one `exec --last` turn on it (local mock) ÷ `wc -l`
#   report_mib          peak MiB of `context --json` (through the sidecar) on the report shape
#   exec_round_trip     a one-prompt `exec` ÷ the floor (one request, two lines synced)
#   exec_vs_codex       a one-prompt `exec` ÷ Codex's `codex exec`, interleaved, against the same
#                       local server on a generic port; _mcp: three slow MCP servers configured;
#                       _beside: a 270 MB session of the workspace in the home
#   exec_mib            peak MiB of those `exec` runs (_mcp, _beside likewise)
#   probe_rounds        probe requests the local server received from all of a step's runs ÷ 3
#                       (one round: `/api/version`, `/props`, `/api/v0/models`); at most one,
#                       as the runs fall within the probe cache's minute
#   compact_100k        `compact` of a never-compacted 100k-entry session ÷ Python json.loads, wall
#   compact_cpu         the same, CPU time (user + system) ÷ Python's
#   compact_mib         peak MiB of that `compact`
#   stream_cpu          CPU while a long reply streams in the UI, in cores (reference: 1 core)
#   loop_200_calls      summary requests per note in a 200-call turn at a 16k window
#
# Usage: scripts/bench-compare.sh [--update] [--from DIR]
#   --update   stores this run's figures as the baseline, each with this commit and machine. A
#              figure more than 15 % worse than its baseline is refused (exit 1, nothing
#              written) unless BENCH_ACCEPT_WORSE='why' is set: the reason is then stored
#              beside each such figure. Better figures replace the baseline; a figure within
#              15 % of its baseline keeps the baseline (noise does not move the guard).
#   --from DIR judges the outputs a run kept in DIR (BENCH_OUT=DIR keeps them) instead of
#              running the benchmarks again: a refused update can be looked into, then stored
#              with a reason, from the same figures.
# CODEX=0 leaves Codex (and the exec_vs_codex targets) out. Machines are shared: the load
# average is printed before each step; measure when nothing else runs, and repeat a figure that
# looks off.
set -euo pipefail
cd "$(dirname "$0")/.."
update=0 from=""
while [ $# -gt 0 ]; do
  case "$1" in
    --update) update=1 ;;
    --from) from="${2:?--from needs the directory a run kept (BENCH_OUT=DIR)}"; shift ;;
    *) echo "bench-compare: unknown argument $1 (expected --update or --from DIR)" >&2; exit 2 ;;
  esac
  shift
done
baseline="benches/baseline.json"
source scripts/bench-lib.sh
if [ -n "$from" ]; then
  out="$from"
else
  if [ -n "${BENCH_OUT:-}" ]; then
    out="$BENCH_OUT"
    mkdir -p "$out"
  else
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
  fi

printf '%s\n' "$(git rev-parse --short HEAD)" > "$out/commit"
git diff --quiet HEAD -- . ':!benches/baseline.json' || sed -i 's/$/+changes/' "$out/commit"
machine > "$out/machine"
say() { printf '\n==> %s (load average %s)\n' "$*" "$(cut -d' ' -f1-3 /proc/loadavg)" >&2; }

say "opening a long session (scripts/bench-open.sh 3)"
scripts/bench-open.sh 3 | tee "$out/open" >&2
say "exec round trip against a local server on a generic port (scripts/bench-exec.sh 10)"
scripts/bench-exec.sh 10 | tee "$out/exec" >&2
say "the same with three slow MCP servers configured (MCP_SLOW_SERVERS=3 scripts/bench-exec.sh 5)"
MCP_SLOW_SERVERS=3 scripts/bench-exec.sh 5 | tee "$out/exec_mcp" >&2
say "the same beside a 270 MB session of the workspace (BESIDE_MB=270 scripts/bench-exec.sh 10)"
BESIDE_MB=270 scripts/bench-exec.sh 10 | tee "$out/exec_beside" >&2
say "compacting a never-compacted session (scripts/bench-compact.sh 1)"
scripts/bench-compact.sh 1 | tee "$out/compact" >&2
say "streaming in the terminal UI (scripts/bench-stream.sh 20)"
scripts/bench-stream.sh 20 | tee "$out/stream" >&2
say "a 200-call turn at 16k (long_turn 200 16000)"
cargo run --release -q --locked -p codewhale-engine --example long_turn -- 200 16000 \
  | tee "$out/loop" >&2
cut -d' ' -f1-3 /proc/loadavg > "$out/load"
fi

python3 - "$out" "$baseline" "$update" "$(cat "$out/commit")" "$(cat "$out/machine")" \
  "$(cat "$out/load" 2> /dev/null || echo "unknown (the run was cut short)")" <<'PY'
import datetime, json, os, re, sys

out, baseline_path, update, commit, machine, load = sys.argv[1:7]
update = update == "1"
read = lambda name: open(f"{out}/{name}").read()
# A run judged with --from may have been cut short: a step without output is not measured, its
# figures are left out of the judgement and keep their baseline.
have = lambda name: os.path.exists(f"{out}/{name}") and os.path.getsize(f"{out}/{name}") > 0

def number(text, pattern, what):
    m = re.search(pattern, text)
    if not m:
        raise SystemExit(f"bench-compare: no figure for {what} in the output")
    return float(m.group(1))

def seconds(text, label):
    return number(text, re.escape(label) + r"\s+([0-9.]+)s", repr(label))

def mib(text, label):
    return number(text, re.escape(label) + r"\s+[0-9.]+s\s+([0-9.]+) MiB", repr(label))

def to_wc(text, label):
    # The median of run-by-run ratios to a `wc -l` taken just before each run.
    return number(text, re.escape(label) + r"\s+[0-9.]+s\s+[0-9.]+ MiB\s+([0-9.]+)x wc -l", repr(label))

# The 270 MB session is the first block of bench-open's output; the report shape the last.
opened = read("open")
big = opened.split("27 MB,")[0]
report = opened.split("report shape")[1]
frames = sorted(float(a) / float(b) for a, b in
                re.findall(r"first frame ([0-9.]+)s.*\(wc -l ([0-9.]+)s\)", big))
if not frames:
    raise SystemExit("bench-compare: no first frame of resume in the output (python3 missing, or it never drew)")
ratios = {
    "open_indexed": to_wc(big, "context --json (indexed)"),
    "open_first": to_wc(big, "context --json (first open)"),
    "resume_first_frame": frames[len(frames) // 2],
    "exec_last": to_wc(big, "exec --last (one turn)"),
    "report_mib": mib(report, "context --json (indexed)"),
}
exec_text = read("exec")
wall = number(exec_text, r"wall time: median ([0-9.]+)s", "exec wall time")
floor = number(exec_text, r"the floor[^:]*: median ([0-9.]+)s", "the floor")
ratios["exec_round_trip"] = wall / floor
for name, suffix in (("exec", ""), ("exec_mcp", "_mcp"), ("exec_beside", "_beside")):
    text = read(name)
    ratios["exec_mib" + suffix] = number(text, r"peak RSS:\s+median \d+ KiB, max (\d+) KiB", name) / 1024
    # A probe round is three requests; every run of a step falls within the cache's minute.
    ratios["probe_rounds" + suffix] = number(text, r"probe requests received from[^:]*: (\d+)", name) / 3
    codex = re.search(r"codewhale / codex: ([0-9.]+) x", text)
    if codex:
        ratios["exec_vs_codex" + suffix] = float(codex.group(1))
compact = read("compact")
ratios["compact_100k"] = number(compact, r"ratio to the floor: ([0-9.]+)", "compact wall ratio")
ratios["compact_cpu"] = number(compact, r"cpu ratio to the floor: ([0-9.]+)", "compact cpu ratio")
ratios["compact_mib"] = number(compact, r"peak RSS of compact: (\d+) KiB", "compact peak") / 1024
if have("stream"):
    ratios["stream_cpu"] = number(read("stream"), r"CPU while the reply streams: ([0-9.]+) %", "stream") / 100
if have("loop"):
    loop = read("loop").splitlines()[0]
    requests = int(re.search(r"summary_requests=(\d+)", loop).group(1))
    notes = max(1, int(re.search(r"notes_in_session=(\d+)", loop).group(1)))
    ratios["loop_200_calls"] = requests / notes

# The targets of docs/performance.md, checked on this run's ratios.
targets = {
    "open_indexed": 2.5, "exec_last": 2.5,
    "report_mib": 64,
    "exec_vs_codex": 0.1, "exec_vs_codex_mcp": 0.1, "exec_vs_codex_beside": 0.1,
    "exec_mib": 30, "exec_mib_mcp": 30, "exec_mib_beside": 30,
    "probe_rounds": 1, "probe_rounds_mcp": 1, "probe_rounds_beside": 1,
    "compact_cpu": 1.0, "compact_mib": 256,
    "stream_cpu": 0.15,
}

try:
    stored = json.load(open(baseline_path))
except FileNotFoundError:
    stored = {}
# A baseline written before figures recorded their commit and machine: bare numbers.
figures = stored.get("figures", {k: {"ratio": v} for k, v in stored.items() if isinstance(v, (int, float))})

worse, missed = [], []
print(f"measured at commit {commit} on {machine}, load average {load}")
print(f"{'figure':<22}{'ratio':>9}{'baseline':>10}{'change':>9}{'target':>9}  verdict")
for name, ratio in ratios.items():
    base = figures.get(name, {}).get("ratio")
    change = "" if base is None else f"{(ratio / base - 1) * 100:+.0f} %"
    target = targets.get(name)
    verdict = []
    if base is not None and ratio > base * 1.15:
        verdict.append("REGRESSION")
        worse.append(name)
    if target is not None and ratio > target:
        verdict.append("MISSED")
        missed.append(name)
    print(f"{name:<22}{ratio:>9.3f}{'' if base is None else f'{base:.3f}':>10}{change:>9}"
          f"{'' if target is None else f'<= {target:g}':>9}  {' '.join(verdict) or 'ok'}")
unmeasured = [name for name in ("stream_cpu", "loop_200_calls") if name not in ratios]
if unmeasured:
    print("not measured in this run (kept as they were): " + ", ".join(unmeasured))
if "exec_vs_codex" not in ratios:
    print("Codex was left out (CODEX=0 or no npm): the exec_vs_codex targets were not checked")

if update:
    reason = os.environ.get("BENCH_ACCEPT_WORSE", "").strip()
    if worse and not reason:
        print("refusing to update: " + ", ".join(worse) + " more than 15 % worse than the baseline; "
              "fix it, or set BENCH_ACCEPT_WORSE='why' to store the worse figures with that reason")
        sys.exit(1)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    kept = []
    for name, ratio in ratios.items():
        base = figures.get(name, {}).get("ratio")
        if base is not None and base < ratio <= base * 1.15:
            kept.append(name)
            continue
        figure = {"ratio": round(ratio, 3), "commit": commit, "machine": machine, "measured": when,
                  "load": load}
        if name in worse:
            figure["accepted_worse"] = reason
        figures[name] = figure
    os.makedirs(os.path.dirname(baseline_path) or ".", exist_ok=True)
    with open(baseline_path, "w") as f:
        json.dump({"figures": figures}, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"wrote {baseline_path}" + (f" (kept, within 15 %: {', '.join(kept)})" if kept else ""))
    if missed:
        print("targets missed: " + ", ".join(missed))
        sys.exit(1)
    sys.exit(0)
if worse:
    print("regressions (more than 15 % worse than the baseline): " + ", ".join(worse))
if missed:
    print("targets missed: " + ", ".join(missed))
if worse or missed:
    sys.exit(1)
PY
