"""Runs a command and writes the peak resident memory of its whole process tree (the command
and every process it starts, summed, sampled every 20 ms from /proc) to a file, in MB.

    tree_rss.py OUT [--without-root] COMMAND...

`/usr/bin/time -v` reports the largest single process of a tree, not their sum: a tool that
runs its scripts in worker processes would look as small as its largest process.
`--without-root` leaves the command's own process out of the sum: when the command is a
measuring wrapper (`/usr/bin/time -v TOOL`), the tree measured is the tool's. The exit code is
the command's."""
import os
import subprocess
import sys
import time


def tree_rss_kb(root, without_root):
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        try:
            if pid != root or not without_root:
                with open(f"/proc/{pid}/status") as f:
                    total += next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    pending.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def main():
    out, command = sys.argv[1], sys.argv[2:]
    without_root = command[:1] == ["--without-root"]
    command = command[1:] if without_root else command
    child = subprocess.Popen(command)
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss_kb(child.pid, without_root))
        time.sleep(0.02)
    with open(out, "w") as f:
        f.write(f"{peak / 1024:.1f}\n")
    sys.exit(child.returncode)


main()
