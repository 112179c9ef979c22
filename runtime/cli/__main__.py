"""``python -m pybmq.cli``: the same as the ``pybmq`` command."""

import sys

from pybmq.cli.main import main

__all__ = []

sys.exit(main())
