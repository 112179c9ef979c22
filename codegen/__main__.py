"""Entry point: ``python -m pybmq.codegen`` (used by ``make generate`` / ``make check-generated``)."""

from __future__ import annotations

import sys

from pybmq.codegen.driver import main

sys.exit(main())
