"""One step of a state machine written as a table, state x input → next state (h11 style).

Shared by the client engine's machines and the simulator's session: each keeps its states,
inputs and table next to its code, and every change of state goes through :func:`step`, so the
legal moves are all visible in the table and an illegal one fails in one place.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypeVar

from pybmq.errors import InvalidTransitionError

__all__ = ["step"]

StateT = TypeVar("StateT", bound=enum.Enum)
InputT = TypeVar("InputT", bound=enum.Enum)


def step(
    machine: str,
    table: Mapping[tuple[StateT, InputT], StateT],
    state: StateT,
    event: InputT,
) -> StateT:
    """The state after ``event`` in ``state``; InvalidTransitionError (naming ``machine``) if
    the table has no such move."""
    try:
        return table[(state, event)]
    except KeyError:
        raise InvalidTransitionError(machine, str(state.value), str(event.value)) from None
