"""Persistent worker processes, driven round by round (bench/ops.py, bench/zoo.py).

aotirt and torch are timed in different processes (aotirt's never imports
torch), yet figures that a target compares must be timed in turns, one
repetition of each per round. So each side runs as a worker that reads one
JSON request per line on stdin and answers with one JSON line on stdout,
prefixed "@@ " (whatever else reaches stdout, a library's own prints, is
passed on to stderr); the driver asks each worker in turn.

A worker that crashes, hangs past its time limit or answers with an error
raises WorkerError in the driver; a dead or hung worker is restarted, so the
next case starts afresh and one broken case costs only its own row.
"""

import contextlib
import json
import queue
import subprocess
import sys
import threading
import traceback

PREFIX = "@@ "


class WorkerError(RuntimeError):
    pass


class Worker:
    def __init__(self, name, command, env=None, timeout=300):
        self.name, self.command, self.env, self.timeout = name, command, env, timeout
        self._start()

    def _start(self):
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=self.env, bufsize=1)
        self._answers = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc.stdout, self._answers), daemon=True).start()

    @staticmethod
    def _read(stream, answers):
        for line in stream:
            if line.startswith(PREFIX):
                answers.put(line[len(PREFIX):])
            else:
                sys.stderr.write(line)
        answers.put(None)

    def restart(self):
        if self.proc.poll() is None:
            self.proc.kill()        # our own child, by its handle
        self.proc.wait()
        self._start()

    def ask(self, cmd, restart=True, **fields):
        """The worker's answer (a dict) to the request `cmd` with `fields`; a
        worker that died or hung is restarted unless `restart` is false."""
        try:
            self.proc.stdin.write(json.dumps(dict(fields, cmd=cmd)) + "\n")
            self.proc.stdin.flush()
        except OSError:
            pass                    # it died: the reader has seen the end of its output
        try:
            line = self._answers.get(timeout=self.timeout)
        except queue.Empty:
            if restart:
                self.restart()
            raise WorkerError(f"the {self.name} worker did not answer {cmd} within {self.timeout} s"
                              + (" (restarted)" if restart else "")) from None
        if line is None:
            status = self.proc.wait()
            if restart:
                self.restart()
            raise WorkerError(f"the {self.name} worker died during {cmd} (exit status {status}"
                              + ("; restarted)" if restart else ")"))
        answer = json.loads(line)
        if "error" in answer:
            raise WorkerError(f"{self.name}: {answer['error']}")
        return answer

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def serve(handlers):
    """A worker's loop: answers each request with handlers[request["cmd"]](request)
    until stdin closes. An exception answers {"error": ...} (its traceback goes
    to stderr) and the worker carries on."""
    answers = sys.stdout
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            answer = handlers[request["cmd"]](request)
        except Exception as error:  # noqa: BLE001 - every failure is the driver's to report
            traceback.print_exc()
            answer = {"error": f"{type(error).__name__}: {' '.join(str(error).split())[:400]}"}
        answers.write(PREFIX + json.dumps(answer) + "\n")
        answers.flush()



# ------------------------------------------------------------- driver helpers

def common_arguments(parser):
    """The options bench/ops.py and bench/zoo.py share."""
    import argparse

    parser.add_argument("--quick", action="store_true", help="3 rounds, shorter batches (also AOTIRT_BENCH_QUICK=1)")
    parser.add_argument("--out", help="also append the JSON lines to this file")
    parser.add_argument("--worker", choices=["aotirt", "torch"], help=argparse.SUPPRESS)


def is_quick(args):
    import os

    return args.quick or os.environ.get("AOTIRT_BENCH_QUICK") == "1"


class Rows:
    """Emits JSON rows: each on stdout and, given a path, appended to that file."""

    def __init__(self, path=None):
        self.sink = open(path, "a") if path else None

    def __call__(self, row):
        line = json.dumps(row, sort_keys=True)
        print(line, flush=True)
        if self.sink:
            self.sink.write(line + "\n")
            self.sink.flush()

    def close(self):
        if self.sink:
            self.sink.close()


def start_workers(script, pythons):
    """Workers running `script --worker SIDE` under pythons[SIDE], each asked
    "ping" (a worker's "ping" handler answers {}). Returns ({side: Worker},
    {side: why it has none}): a side without a Python, or whose worker cannot
    start (no GPU, no torch...: its stderr says why)."""
    workers, missing = {}, {}
    for side, python in pythons.items():
        if python is None:
            missing[side] = f"no Python for the {side} worker (for torch: set AOTIRT_TORCH_PYTHON)"
            continue
        worker = Worker(side, [python, script, "--worker", side])
        try:
            worker.ask("ping", restart=False)
        except WorkerError as error:
            worker.close()
            missing[side] = str(error)
            continue
        workers[side] = worker
    return workers, missing


@contextlib.contextmanager
def driving(script, pythons, out=None, pin_device=0):
    """(emit, workers, missing) for a driver's run: Rows(out) and
    start_workers(script, pythons); the workers and the rows' file are closed
    at the end, whatever happens. First the driver pins itself, and so the
    workers it starts, to the CPUs next to GPU `pin_device` (bench/affinity.py;
    None: not pinned) and emits the "affinity" row that says how."""
    emit = Rows(out)
    if pin_device is not None:
        from affinity import pin_to_gpu

        emit(pin_to_gpu(pin_device))
    workers, missing = start_workers(script, pythons)
    try:
        yield emit, workers, missing
    finally:
        for worker in workers.values():
            worker.close()
        emit.close()


def in_turns(workers, sides, reps, ask, labels, notes, samples):
    """`reps` rounds in which each side still working answers `ask(worker)`
    once, the order reversed every other round (neither side always goes
    first); each answer's "figures" are appended to `samples` by label. A
    side whose worker fails is dropped, its rows' notes saying why."""
    active = list(sides)
    for r in range(reps):
        for side in active if r % 2 == 0 else active[::-1]:
            try:
                figures = ask(workers[side])["figures"]
            except WorkerError as error:   # that side's rows say so; the other goes on
                for label in labels[side]:
                    notes[label] = f"failed: {error}"
                    samples.pop(label, None)
                active = [s for s in active if s != side]
                continue
            for label, values in figures.items():
                samples.setdefault(label, []).append(values)


def tear_down(workers, sides, request):
    """Asks each side's worker to free what it set up."""
    for side in sides:
        try:
            workers[side].ask(request)
        except WorkerError:
            pass                     # the worker was restarted: nothing is left to free
