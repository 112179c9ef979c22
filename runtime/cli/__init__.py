"""The ``pybmq`` command line: ``main`` dispatches to one module per subcommand.

Subcommand modules import only the standard library at import time (their handlers import the
client, rich or codegen when they run), so ``pybmq --version`` and ``pybmq --help`` stay fast and
a missing optional extra is reported by the one subcommand that needs it.
"""

from pybmq.cli.main import main

__all__ = ["main"]
