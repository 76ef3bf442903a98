"""Reads the trace of a test run (AOTIRT_TEST_TRACE, written by
tests/conftest.py; scripts/gpu-check.sh writes it to its logs folder as
tests-trace.log): the tests that started and never ended, with how long
they had run when the trace stopped, then the slowest tests that ended.

    python3 scripts/test-trace.py LOGS/tests-trace.log [--slowest N]

For a command that a runner's time limit ended: pytest's own summary and
--durations never came, and this says where the time went.
"""

import argparse
import sys


def read(path):
    """(unfinished, finished, last): unfinished as [(nodeid, pid, start
    time)], oldest first; finished as [(seconds, nodeid)]; last, the time
    of the file's last line. A line: time, process, start or end, the
    test's seconds (- at its start), the test's id (which may hold spaces)."""
    started = {}
    finished = []
    last = 0.0
    with open(path) as f:
        for number, line in enumerate(f, 1):
            parts = line.rstrip("\n").split(" ", 4)
            try:
                when, pid, event, seconds, nodeid = parts
                when = float(when)
                if event == "end":
                    seconds = float(seconds.removesuffix("s"))
                elif event != "start":
                    raise ValueError(event)
            except ValueError:
                raise ValueError(f"{path}:{number}: not a trace line: {line.rstrip()!r}") from None
            last = max(last, when)
            if event == "start":
                started[(pid, nodeid)] = when
            else:
                started.pop((pid, nodeid), None)
                finished.append((seconds, nodeid))
    unfinished = sorted(((nodeid, pid, when) for (pid, nodeid), when in started.items()), key=lambda t: t[2])
    return unfinished, finished, last


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--slowest", type=int, default=10, help="how many of the slowest ended tests (default 10)")
    args = parser.parse_args(argv)
    try:
        unfinished, finished, last = read(args.trace)
    except (OSError, ValueError) as e:
        print(f"test-trace: {e}", file=sys.stderr)
        return 1
    print(f"{len(finished)} tests ended, {len(unfinished)} started and never ended")
    for nodeid, pid, when in unfinished:
        print(f"  never ended: {nodeid} (process {pid}, running {last - when:.1f} s when the trace stopped)")
    if finished and args.slowest > 0:
        print(f"slowest {min(args.slowest, len(finished))} that ended:")
        for seconds, nodeid in sorted(finished, reverse=True)[: args.slowest]:
            print(f"  {seconds:8.2f} s  {nodeid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
