#!/usr/bin/env python3
"""Time from spawning a console command in a pseudo-terminal to its first frame on screen.

    python3 scripts/first-frame.py CMD [ARGS...]

Prints `first_frame_ms <ms>`: milliseconds from fork to the first output that holds the
header text (" caldera ", drawn only by a full frame), then presses `q` and reaps the child.
The terminal is 200x60 (COLUMNS/LINES override). Used by `caldera bench render`.
"""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

MARKER = b" caldera "


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cols = int(os.environ.get("COLUMNS", "200"))
    rows = int(os.environ.get("LINES", "60"))
    started = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.environ["TERM"] = "xterm-256color"
        try:
            os.execvp(sys.argv[1], sys.argv[1:])
        finally:
            os._exit(127)
    seen = b""
    first = None
    deadline = started + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen = (seen + chunk)[-4096:]
        if MARKER in seen:
            first = time.monotonic() - started
            break
    try:
        os.write(fd, b"q")
    except OSError:
        pass
    # Drain while the console restores the terminal, then make sure it is gone.
    end = time.monotonic() + 3
    while time.monotonic() < end:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                os.read(fd, 65536)
            except OSError:
                pass
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if first is None:
        print("no frame within 30 s", file=sys.stderr)
        return 1
    print(f"first_frame_ms {first * 1000:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
