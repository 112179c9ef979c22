"""Registering the data source checks that Spark's Python workers can import pybmq."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pybmq.errors import UsageError
from pybmq.spark import check_workers, register

pytestmark = pytest.mark.spark


def test_workers_that_import_pybmq_pass(spark: Any) -> None:
    found = check_workers(spark)
    assert Path(found).parent.name == "spark"
    register(spark)  # registering again is harmless: the shared session keeps working


def test_workers_without_pybmq_name_pyspark_python(spark: Any) -> None:
    # The venv's interpreter resolved to its real file runs without the venv: the Python a user
    # gets when PYSPARK_PYTHON is unset and the venv is not activated.
    system_python = str(Path(sys.executable).resolve())
    can_import = subprocess.run(
        [system_python, "-c", "import pybmq"], capture_output=True, timeout=60, check=False
    )
    if can_import.returncode == 0:
        pytest.skip("this interpreter has pybmq outside any venv")
    context = spark.sparkContext
    saved = context.pythonExec
    context.pythonExec = system_python
    try:
        with pytest.raises(UsageError) as info:
            register(spark)
    finally:
        context.pythonExec = saved
    message = str(info.value)
    assert "PYSPARK_PYTHON" in message
    assert system_python in message
    assert "No module named" in message
    print(message)
