#!/usr/bin/env bash
# Memory under hostile input (docs/security.md, *Bounds and protected paths*): peak RSS and wall
# time of one release `codewhale exec` turn against a local OpenAI-compatible stub that
#   endless     streams a reply that never ends (cut at the reply bound),
#   zero        has the model read /dev/zero through a symlink in the workspace (refused),
#   big-write   has the model run a command that writes a 200 MiB file in a git workspace
#               (left out of the checkpoint: over max_file_bytes),
#   many-calls  answers with 10,000 tool calls in one reply (64 run),
#   sse-event   streams one event whose data: lines never end (cut at 32 MiB),
#   error-body  answers 500 with a JSON body that never ends (1 MiB kept, each retry),
#   json-body   answers 200 with a JSON body that never ends (refused past 1 MiB),
#   pixel-bomb  is sent a 300 KB PNG declaring 16384x16384 pixels (refused from its header),
# each next to the same turn against a stub that answers at once.
#
# Usage: scripts/bench-bounds.sh        (needs python3 and git)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-lib.sh
build_release

# Outside /tmp: a home the sandbox leaves writable gets a warning at start.
mkdir -p "${XDG_CACHE_HOME:-$HOME/.cache}"
work="$(mktemp -d "${XDG_CACHE_HOME:-$HOME/.cache}/codewhale-bounds.XXXXXX")"
trap 'kill "$stub" 2>/dev/null || true; rm -rf "$work"' EXIT

cat > "$work/stub.py" <<'PY'
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]

def chunk(delta, finish=None):
    return {"id": "c", "object": "chat.completion.chunk", "model": "stub",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

def calls(n, name, args):
    return [{"index": i, "id": f"call_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}} for i in range(n)]

class Stub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def endless(self, status, content_type, head, piece):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if head:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(head), head))
            chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
            while True:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        last = body["messages"][-1]
        if MODE == "sse-event":
            return self.endless(200, "text/event-stream", b"", b"data: " + b"x" * 65536 + b"\n")
        if MODE == "error-body":
            return self.endless(500, "application/json", b'{"error": "', b"x" * 65536)
        if MODE == "json-body":
            return self.endless(200, "application/json", b'{"choices": "', b"x" * 65536)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        def send(obj):
            data = ("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        try:
            if last["role"] == "tool" or MODE == "quick":
                send(chunk({"role": "assistant", "content": "done"}))
                send(chunk({}, "stop"))
            elif MODE == "endless":
                send(chunk({"role": "assistant", "content": ""}))
                line = "lorem ipsum dolor sit amet " * 40
                while True:
                    send(chunk({"content": line}))
            elif MODE == "zero":
                send(chunk({"role": "assistant", "tool_calls": calls(1, "read_file", {"path": "zero"})}))
                send(chunk({}, "tool_calls"))
            elif MODE == "big-write":
                cmd = "head -c 209715200 /dev/urandom > big.bin"
                send(chunk({"role": "assistant", "tool_calls": calls(1, "shell", {"command": cmd})}))
                send(chunk({}, "tool_calls"))
            elif MODE == "many-calls":
                send(chunk({"role": "assistant", "tool_calls": calls(10000, "list_dir", {"path": "."})}))
                send(chunk({}, "tool_calls"))
            send("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
print(f"http://127.0.0.1:{server.server_port}/v1", flush=True)
server.serve_forever()
PY

# A PNG of 16384x16384 grey pixels, about 300 KB: decoded it is 256 MiB, scaled several times
# that. Written row by row.
cat > "$work/bomb.py" <<'PY'
import struct, sys, zlib
side = 16384
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
z = zlib.compressobj(9)
row = b"\0" * (side + 1)
idat = b"".join(z.compress(row) for _ in range(side)) + z.flush()
with open(sys.argv[1], "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n")
    f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)))
    f.write(chunk(b"IDAT", idat))
    f.write(chunk(b"IEND", b""))
PY

run_case() {
  local mode="$1"
  local stub_mode="$mode" extra=()
  if [ "$mode" = pixel-bomb ]; then
    stub_mode=quick
    extra=(--image "$work/bomb.png")
  fi
  # The first snapshot's git may still be finishing in the background after exec exits.
  rm -rf "$work/home" "$work/ws" 2>/dev/null || { sleep 1; rm -rf "$work/home" "$work/ws"; }
  mkdir -p "$work/home" "$work/ws"
  git -C "$work/ws" init -q
  ln -s /dev/zero "$work/ws/zero"
  [ "$mode" = pixel-bomb ] && python3 "$work/bomb.py" "$work/bomb.png"
  python3 "$work/stub.py" "$stub_mode" > "$work/url" &
  stub=$!
  until [ -s "$work/url" ]; do sleep 0.05; done
  local code=0
  (cd "$work/ws" && CODEWHALE_HOME="$work/home" OPENAI_API_KEY=stub /usr/bin/time -f '%e %M' \
    -o "$work/time" "$bin" exec --approval full --provider openai --model gpt-4.1 \
    --base-url "$(head -n1 "$work/url")" --context-window 128000 ${extra[@]+"${extra[@]}"} "go" \
    < /dev/null > /dev/null 2> "$work/stderr") || code=$?
  kill "$stub" 2>/dev/null || true
  wait "$stub" 2>/dev/null || true
  : > "$work/url"
  read -r wall peak < <(tail -n1 "$work/time")
  local said
  said="$({ grep -v '^Command exited' "$work/stderr" || true; } | tail -n1 | cut -c1-90)"
  printf '  %-12s wall %6ss  peak RSS %7s KiB  exit %s  %s\n' "$mode" "$wall" "$peak" "$code" "$said"
}

echo "codewhale exec against a hostile local stub (release build)"
for mode in quick endless zero big-write many-calls sse-event error-body json-body pixel-bomb; do
  run_case "$mode"
done
