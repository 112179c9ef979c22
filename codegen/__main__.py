"""Entry point: ``python -m pybmq.codegen`` (used by ``make generate`` / ``make check-generated``)."""

from __future__ import annotations

import sys

from pybmq.codegen import require_extra
from pybmq.errors import UsageError

__all__ = []

try:
    require_extra("python -m pybmq.codegen")
except UsageError as exc:
    sys.exit(str(exc))

from pybmq.codegen.driver import main

sys.exit(main())
