"""The jinja2 filters every template may use (naming and literals); schema-specific filters
live with their generator (``Bindings.filters``)."""

from __future__ import annotations

import keyword
import re

__all__ = ["FILTERS", "hex_literal", "py_literal", "snake"]


def snake(name: str) -> str:
    """``rId`` → ``r_id``, ``clusterStateFSMMessage`` → ``cluster_state_fsm_message``,
    ``MessageGUID`` → ``message_guid``."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return text + "_" if keyword.iskeyword(text) else text


def hex_literal(value: int) -> str:
    """``255`` → ``0xFF``."""
    return f"0x{value:X}"


def py_literal(value: object) -> str:
    """A Python literal of a spec value (an int or a string)."""
    return repr(value)


FILTERS = {"snake": snake, "hex": hex_literal, "py": py_literal}
