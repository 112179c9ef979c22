"""The official-SDK peer program (official_peer.py), unchanged, with pybmq.compat as its SDK.

``python compat_peer.py MODE`` behaves exactly like ``python official_peer.py MODE`` except that
``import blazingmq`` inside it gets ``pybmq.compat``: the interop harness's own official-API
programs double as drop-in tests.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pybmq.compat

sys.modules["blazingmq"] = pybmq.compat
runpy.run_path(str(Path(__file__).with_name("official_peer.py")), run_name="__main__")
