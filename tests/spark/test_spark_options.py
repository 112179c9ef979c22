"""Option parsing and row conversion of the Spark data source: plain Python, no JVM needed."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pybmq.errors import UsageError
from pybmq.spark.options import (
    ReadOptions,
    StreamReadOptions,
    Target,
    WriteOptions,
    check_write_schema,
)
from pybmq.spark.rows import messages_from_batch

Q = "bmq://bmq.test.mem.priority/q"


def test_defaults_and_case_insensitive_keys() -> None:
    write = WriteOptions.parse({"queue": Q, "maxinflight": "7", "compression": "ZLIB"})
    assert write.target == Target("tcp://localhost:30114", Q, 10.0)
    assert write.max_in_flight == 7
    assert write.compression_threshold == 1024
    read = ReadOptions.parse({"queue": Q, "broker": "tcp://127.0.0.1:1234", "confirm": "TRUE"})
    assert (read.max_messages, read.idle_timeout, read.confirm) == (10_000, 1.0, True)
    stream = StreamReadOptions.parse({"queue": Q, "maxmessagesperbatch": "50"})
    assert stream.max_messages_per_batch == 50


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "option 'queue' is required"),
        ({"queue": "bmq://domain"}, "must look like bmq://domain/queue"),
        ({"queue": "kafka://d/q"}, "must look like bmq://domain/queue"),
        ({"queue": Q, "broker": "tcp://host"}, "must look like tcp://host:port"),
        ({"queue": Q, "broker": "tcp://host:99999"}, "must look like tcp://host:port"),
        ({"queue": Q, "maxinflight": "0"}, "'maxinflight' must be >= 1"),
        ({"queue": Q, "acktimeoutms": "soon"}, "'acktimeoutms' must be an integer"),
        ({"queue": Q, "compression": "lz4"}, "'compression' must be none or zlib"),
        ({"queue": Q, "propertycolumns": "a, a"}, "names a column twice"),
        ({"queue": Q, "queu": "x"}, "unknown option(s) ['queu']"),
    ],
)
def test_bad_write_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        WriteOptions.parse(options)
    assert message in str(info.value)


def test_peeking_reads_cannot_be_split() -> None:
    with pytest.raises(UsageError, match="needs 'confirm' = true"):
        ReadOptions.parse({"queue": Q, "numpartitions": "2"})
    assert (
        ReadOptions.parse({"queue": Q, "numpartitions": "2", "confirm": "true"}).num_partitions == 2
    )


def test_write_schema_checks() -> None:
    check_write_schema(["payload", "n"], ["n"])
    with pytest.raises(UsageError, match="needs a 'payload' column"):
        check_write_schema(["body"], [])
    with pytest.raises(UsageError, match=r"propertyColumns \['x'\] are not columns"):
        check_write_schema(["payload"], ["x"])


def test_messages_from_batch_types_properties() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "payload": pa.array([b"a", b"b"], pa.binary()),
            "properties": pa.array([[("k", "v")], None], pa.map_(pa.string(), pa.string())),
            "flag": pa.array([True, None]),
            "c": pa.array([1, 2], pa.int8()),
            "s": pa.array([3, 4], pa.int16()),
            "i": pa.array([5, 6], pa.int32()),
            "l": pa.array([7, 8], pa.int64()),
            "t": pa.array(["x", "y"]),
            "b": pa.array([b"\x00", b"\x01"]),
        }
    )
    first, second = messages_from_batch(batch, ["flag", "c", "s", "i", "l", "t", "b"])
    assert first[0] == b"a" and first[1] is not None and second[1] is not None
    assert [(n, t.name, v) for n, t, v in first[1].typed_items()] == [
        ("k", "STRING", "v"),
        ("flag", "BOOL", True),
        ("c", "CHAR", 1),
        ("s", "SHORT", 3),
        ("i", "INT32", 5),
        ("l", "INT64", 7),
        ("t", "STRING", "x"),
        ("b", "BINARY", b"\x00"),
    ]
    assert "flag" not in second[1]  # null property = absent


def test_text_payloads_are_their_utf8_bytes() -> None:
    batch = pa.RecordBatch.from_pydict({"payload": ["é", ""]})
    assert list(messages_from_batch(batch, [])) == [("é".encode(), None), (b"", None)]


def test_unsupported_property_column_type() -> None:
    batch = pa.RecordBatch.from_pydict({"payload": ["a"], "price": pa.array([1.5])})
    with pytest.raises(UsageError, match="property column 'price' has type double"):
        list(messages_from_batch(batch, ["price"]))


def test_null_payload_is_refused() -> None:
    batch = pa.RecordBatch.from_pydict({"payload": pa.array([None], pa.string())})
    with pytest.raises(UsageError, match="null payload"):
        list(messages_from_batch(batch, []))


def test_read_rows_match_the_read_schema_without_redelivered() -> None:
    from pybmq.spark.datasource import READ_SCHEMA, _arrow_schema
    from pybmq.spark.rows import RowBuffer

    buffer = RowBuffer(Q)
    buffer.add(bytes(range(16)), b"body", {"n": ("INT32", 7), "ok": ("BOOL", True)})
    batch = buffer.to_batch(_arrow_schema(READ_SCHEMA))
    assert batch.schema.names == ["queue", "guid", "payload", "properties", "typed_properties"]
    row = batch.to_pylist()[0]
    assert row["guid"] == bytes(range(16)).hex()
    assert dict(row["properties"]) == {"n": "7", "ok": "true"}
    assert dict(row["typed_properties"])["n"]["int32"] == 7


def test_read_rows_keep_each_rows_own_properties() -> None:
    from pybmq.spark.datasource import _arrow_schema, read_schema
    from pybmq.spark.rows import RowBuffer

    columns = (("n", "bigint"), ("raw", "binary"), ("ok", "boolean"))
    buffer = RowBuffer(Q, columns)
    buffer.add(bytes(16), b"a", {"n": ("INT32", 7), "raw": ("BINARY", b"\x01")})
    buffer.add(bytes(16), b"b", {})
    buffer.add(bytes(16), b"c", {"ok": ("STRING", "yes"), "n": ("INT64", 2**40)})
    rows = buffer.to_batch(_arrow_schema(read_schema(columns), columns)).to_pylist()
    assert [dict(r["properties"]) for r in rows] == [
        {"n": "7", "raw": "01"},
        {},
        {"ok": "yes", "n": str(2**40)},
    ]
    typed = [dict(r["typed_properties"]) for r in rows]
    assert typed[0]["raw"]["binary"] == b"\x01" and typed[0]["raw"]["int32"] is None
    assert typed[2]["ok"] == {
        "type": "STRING",
        **dict.fromkeys(["bool", "char", "short", "int32", "int64", "binary"]),
        "string": "yes",
    }
    # Property columns: any integer type fills bigint; another type is null.
    assert [(r["n"], r["raw"], r["ok"]) for r in rows] == [
        (7, b"\x01", None),
        (None, None, None),
        (2**40, None, None),
    ]


def test_client_settings_pass_through_to_session_options() -> None:
    from pybmq.client.options import SessionOptions

    target = Target.parse(
        {"queue": Q, "client.requesttimeoutms": "2500", "Client.Reconnect": "true"}
    )
    assert dict(target.client) == {"request_timeout": 2.5, "reconnect": True}
    options = SessionOptions(**dict(target.client))
    assert (options.request_timeout, options.reconnect) == (2.5, True)
    with pytest.raises(UsageError, match=r"unknown client option\(s\) \['client.nope'\]"):
        Target.parse({"queue": Q, "client.nope": "1"})
    with pytest.raises(UsageError, match=r"'client\.maxbufferedposts' must be >= 1"):
        Target.parse({"queue": Q, "client.maxbufferedposts": "0"})


def test_readme_client_table_matches_the_code() -> None:
    from pybmq.client.options import SessionOptions
    from pybmq.spark.options import CLIENT_SETTINGS

    from tests.helpers.paths import REPO_ROOT

    readme = (REPO_ROOT / "docs" / "guide" / "spark.md").read_text()
    documented = [
        tuple(cell.strip().strip("`") for cell in line.strip("|").split("|"))
        for line in readme.splitlines()
        if line.startswith("| `client.")
    ]
    assert documented == [(s.name, s.field, s.meaning) for s in CLIENT_SETTINGS]
    fields = set(SessionOptions.__dataclass_fields__)
    assert all(s.field in fields for s in CLIENT_SETTINGS)


def test_the_data_source_imports_neither_the_client_nor_pyarrow() -> None:
    """Spark starts a Python process per planning step (create the source, plan a write, commit
    it); unpickling the source must not pay for what only tasks and probes use, and a probe
    (planning a write) not for pyarrow."""
    import subprocess
    import sys

    heavy = ("pyarrow", "pybmq.client.sync", "pybmq.spark.io", "pybmq.spark.executors")
    code = (
        "import sys, pybmq.spark, pybmq.spark.datasource\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
        "import pybmq.spark.io\n"
        "print('pyarrow' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split("\n") == ["[]", "False", ""]
