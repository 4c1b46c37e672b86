"""Test helper: ``python -m tests.synthesize_kill_after NODE N <rods synthesize flags>``.

Runs the real ``rods synthesize`` command with :func:`rods_cli.synthesize.run_samples` told to pause
after NODE and SIGKILL the process at the N-th pause (that node's checkpoint is written, the sample
unfinished), so a test can check that ``--resume`` continues that very sample. The production CLI
has no such hook; the test passes it in.
"""

from __future__ import annotations

import functools
import os
import signal
import sys

import typer

import rods_cli.synthesize as cli


def main() -> None:
    node, n, flags = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

    def kill_at(count: int) -> None:
        if count == n:
            os.kill(os.getpid(), signal.SIGKILL)

    cli.run_samples = functools.partial(cli.run_samples, interrupt_after=node, on_interrupt=kill_at)
    sys.argv = [sys.argv[0], *flags]
    typer.run(cli.synthesize)


if __name__ == "__main__":
    main()
