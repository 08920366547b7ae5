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
# /usr/bin/time, appending its wall time in seconds to the array `walls` and its peak RSS in KiB
# to `rss`. A failing CMD stops the script with its stderr.
timed() {
  local dir="$1" out="$2"
  shift 2
  local start end notes
  notes="$(mktemp)"
  start=$(date +%s%N)
  if ! (cd "$dir" && /usr/bin/time -f '%M' -o "$notes.rss" "$@" < /dev/null > "$out" 2> "$notes"); then
    echo "failed: $*" >&2
    cat "$notes" >&2
    exit 1
  fi
  end=$(date +%s%N)
  walls+=("$(awk -v ns="$((end - start))" 'BEGIN {printf "%.4f", ns / 1e9}')")
  rss+=("$(tail -n1 "$notes.rss")")
  rm -f "$notes" "$notes.rss"
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
least() { printf '%s\n' "$@" | sort -g | head -n1; }
most() { printf '%s\n' "$@" | sort -g | tail -n1; }
