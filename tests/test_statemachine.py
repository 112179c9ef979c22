"""The generic table step shared by the client's and the simulator's state machines."""

from __future__ import annotations

import enum

import pytest
from pybmq.errors import InvalidTransitionError
from pybmq.statemachine import step


class Light(enum.Enum):
    OFF = "OFF"
    ON = "ON"


class Press(enum.Enum):
    SWITCH = "SWITCH"
    BREAK = "BREAK"


TABLE = {(Light.OFF, Press.SWITCH): Light.ON, (Light.ON, Press.SWITCH): Light.OFF}


def test_step_follows_the_table() -> None:
    assert step("lamp", TABLE, Light.OFF, Press.SWITCH) is Light.ON
    assert step("lamp", TABLE, Light.ON, Press.SWITCH) is Light.OFF


def test_a_move_the_table_lacks_raises_naming_the_machine() -> None:
    with pytest.raises(InvalidTransitionError) as caught:
        step("lamp", TABLE, Light.ON, Press.BREAK)
    assert (caught.value.machine, caught.value.state, caught.value.event) == ("lamp", "ON", "BREAK")
    assert "lamp: BREAK is not allowed in state ON" in str(caught.value)
