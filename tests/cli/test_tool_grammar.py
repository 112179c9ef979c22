"""bmqtool's command lines as ``pybmq tool`` reads them (``pybmq.cli.tool_grammar``), and the
record texts it prints (``pybmq.cli.tool_output``)."""

from __future__ import annotations

import io

import pytest
from pybmq.cli.tool_grammar import MAX_LINE, CommandError, parse_command
from pybmq.cli.tool_output import ToolLog, command_text, listing, status


def test_open_with_every_field_and_json_values_holding_spaces() -> None:
    command = parse_command(
        'open uri="bmq://d.x/q?id=foo" flags="read,ack" async=true maxUnconfirmedMessages=5 '
        'subscriptions=[{"expression": "x > 0 && y == \\"a b\\"", "correlationId": 2}]'
    )
    assert command.verb == "open"
    assert command["uri"] == "bmq://d.x/q?id=foo"
    assert command["async"] is True
    assert command["maxUnconfirmedMessages"] == 5
    assert command["maxUnconfirmedBytes"] == 33554432  # bmqtool's default
    assert command["subscriptions"] == [{"expression": 'x > 0 && y == "a b"', "correlationId": 2}]
    assert list(command.fields)[:3] == ["uri", "flags", "async"]  # the grammar's order


def test_integral_floats_bare_words_and_given_keys() -> None:
    command = parse_command('batch-post uri="bmq://d/q" postInterval=100.0 eventsCount=3')
    assert command["postInterval"] == 100 and command["eventsCount"] == 3
    assert parse_command("start async=true")["async"] is True
    post = parse_command('post uri=bmq://d/q payload=["a"] messageProperties=[]')
    assert post["uri"] == "bmq://d/q"
    assert "messageProperties" in post.given and post["messageProperties"] == []
    assert "messageProperties" not in parse_command('post uri="u" payload=["a"]').given


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("frob", "Unknown command: frob"),
        ('open flags="read"', "'uri' is mandatory"),
        ('open uri="u" flags="r" bogus=1', "unknown field 'bogus'"),
        ('open uri="u" flags="r" maxUnconfirmedMessages=1.5', "maxUnconfirmedMessages"),
        ('open uri="u" flags="r" async=maybe', "async"),
        ('post uri="u" payload=["a"', "payload"),
        (
            'post uri="u" payload=["a"] messageProperties=[{"name": "x", "value": "y", '
            '"type": "E_INT"}]',
            "not an int",
        ),
        (
            'post uri="u" payload=["a"] messageProperties=[{"name": "x", "value": "1", '
            '"type": "E_BLOB"}]',
            "E_STRING or E_INT",
        ),
        ('open uri="u" flags="r" subscriptions=[{"expr": "x"}]', "unknown subscription field"),
        ('open uri="u"flags="r"', "after its value"),
        ("open =", "key=value"),
        ("post " + "x" * (MAX_LINE + 1), "at most"),
    ],
)
def test_bad_lines_name_what_is_wrong(line: str, named: str) -> None:
    with pytest.raises(CommandError, match=named):
        parse_command(line)


def test_records_in_the_apparatus_format() -> None:
    out = io.StringIO()
    log = ToolLog('"%c~@~%d~@~%t~@~%s~@~%F:%l~@~%m\\n"', "info", out)
    log.info("hello")
    log.write(1, "debug is below info")
    category, date, thread, severity, where, message = out.getvalue().rstrip("\n").split("~@~")
    assert (category, severity, message) == ("BMQTOOL.INTERACTIVE", "INFO", "hello")
    assert len(date) == len("28NOV2026_09:13:49.228") and date[2:5].isupper()
    assert thread.isdigit() and where.startswith("test_tool_grammar.py:")
    silent = io.StringIO()
    ToolLog("%m", "silent", silent).error("nothing")
    assert silent.getvalue() == ""


def test_status_listing_and_echo_texts() -> None:
    assert status("bmq://d/q", 3, "REFUSED", "no") == (
        "REFUSED ([ queueId = [ uri = bmq://d/q correlationId = [ autoValue = 3 ] ] "
        'result = "REFUSED (-6)" errorDescription = "no" ])'
    )
    text = listing([("bmq://d/q", 1, bytes(range(16)), b"a\x00" + b"z" * 40, {"n": 1})])
    head, row = text.split("\n")
    assert head == "Unconfirmed message listing: 1 messages"
    assert row == (
        "  #  1  [000102030405060708090A0B0C0D0E0F] Queue: '[ uri = bmq://d/q correlationId = "
        "[ autoValue = 1 ] ]' = 'a." + "z" * 30 + "', with properties: [ n (INT32) = 1 ]"
    )
    assert command_text({"uri": "u", "async": False, "payload": ["a", "b"], "list": []}) == (
        '[ uri = "u" async = false payload = [ "a" "b" ] list = [ ] ]'
    )
