"""``python -m pybmq.compat [--force] script.py [args…]`` (or ``-m module``): run a program
written for the official SDK, unchanged, on pybmq.compat (see ``pybmq.compat.aliases``)."""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from pybmq.compat.aliases import install

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pybmq.compat",
        description="Run a program that imports blazingmq on pybmq.compat.",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="use pybmq.compat even if a real blazingmq package is installed",
    )
    parser.add_argument("-m", dest="module", help="run this module as a script (like python -m)")
    parser.add_argument("target", nargs=argparse.REMAINDER, help="script.py and its arguments")
    args = parser.parse_args(argv)
    if args.module is None and not args.target:
        parser.error("give a script to run, or -m module")
    install(force=args.force)
    if args.module is not None:
        sys.argv = [args.module, *args.target]
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(args.target)
        sys.path[0] = os.path.dirname(os.path.abspath(args.target[0]))  # as `python script.py`
        runpy.run_path(args.target[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
