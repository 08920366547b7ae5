#!/usr/bin/env python3
"""Times `codewhale resume SESSION` in a pseudo-terminal (120x40): when the first frame is drawn
and when MARKER (one word of a history row: the UI places words one by one) is on screen. Answers the terminal queries the UI sends
at start as a terminal would. Used by scripts/bench-open.sh.

Usage: resume-timing.py BINARY HOME WORKSPACE SESSION MARKER
"""
import os, pty, sys, time, select, signal, struct, fcntl, termios
binary, home, ws, session, marker = sys.argv[1:6]
pid, fd = pty.fork()
if pid == 0:
    os.chdir(ws)
    os.environ["CODEWHALE_HOME"] = home
    os.environ["TERM"] = "xterm-256color"
    os.execv(binary, [binary, "resume", session])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
t0 = time.monotonic()
buf = b""; first = None; hist = None
while time.monotonic() - t0 < 10:
    r, _, _ = select.select([fd], [], [], 0.05)
    if r:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data: break
        buf += data
        if b"\x1b[c" in data:
            os.write(fd, b"\x1b[?62;22c")  # a terminal's answer to the device-attributes query
        if first is None and b"\x1b[c" in buf and len(buf.split(b"\x1b[c", 1)[1]) > 100:
            first = time.monotonic() - t0
        if hist is None and marker.encode() in buf: hist = time.monotonic() - t0; break
os.kill(pid, signal.SIGTERM)
def fmt(t):
    return "never" if t is None else f"{t:.3f}s"
print(f"first frame {fmt(first)}, history on screen {fmt(hist)}")
