# Shared by the bench-*.sh scripts (sourced, not run): building the release binary and its
# helpers, timing a command as a whole process, and summing the runs up.

target="${CARGO_TARGET_DIR:-target}"
bin="$target/release/codewhale"

# build_release [PACKAGE EXAMPLE]...: builds the release binary and the named examples (found
# afterwards at "$target/release/examples/EXAMPLE").
build_release() {
  cargo build --release -q -p codewhale-tui --bin codewhale
  while [ $# -ge 2 ]; do
    cargo build --release -q -p "$1" --example "$2"
    shift 2
  done
}

# timed DIR OUT CMD...: runs CMD in DIR (stdin empty, stdout to OUT, which may be /dev/null) under
# /usr/bin/time, appending its wall time in seconds to the array `walls`, its peak RSS in KiB to
# `rss` and its CPU time (user + system, seconds) to `cpus`. A failing CMD stops the script with
# its stderr.
timed() {
  local dir="$1" out="$2"
  shift 2
  local start end notes
  notes="$(mktemp)"
  start=$(date +%s%N)
  if ! (cd "$dir" && /usr/bin/time -f '%M %U %S' -o "$notes.rss" "$@" < /dev/null > "$out" 2> "$notes"); then
    echo "failed: $*" >&2
    cat "$notes" >&2
    exit 1
  fi
  end=$(date +%s%N)
  walls+=("$(awk -v ns="$((end - start))" 'BEGIN {printf "%.4f", ns / 1e9}')")
  local figures
  figures="$(tail -n1 "$notes.rss")"
  rss+=("${figures%% *}")
  cpus+=("$(echo "$figures" | awk '{printf "%.2f", $2 + $3}')")
  rm -f "$notes" "$notes.rss"
}

# machine: one line naming the machine figures were taken on (cores, memory, CPU model).
machine() {
  local model
  model="$(grep -m1 'model name' /proc/cpuinfo 2> /dev/null | cut -d: -f2 | sed 's/^ *//')"
  printf '%sc/%sGiB %s %s\n' "$(nproc)" \
    "$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)" "$(uname -m)" "${model:-unknown CPU}"
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
least() { printf '%s\n' "$@" | sort -g | head -n1; }
most() { printf '%s\n' "$@" | sort -g | tail -n1; }
