"""Protocol constants come from the layout spec, never by hand; and nothing is generated unused.

Walks runtime/wire and runtime/client with ``ast``:
- a number used as a bit mask (an operand of ``&``, ``|`` or ``^``) or a shift amount (the right
  side of ``>>`` or ``<<``) is a protocol layout written by hand: take the generated
  ``X_FIELD_SHIFT``/``X_FIELD_MASK`` (or ``X_PART_AT``) instead. ``1 << NAME`` (a power of two of
  a named shift) is fine;
- word arithmetic with a literal (``* 4``, ``// 4``, ``% 4``: the spec's WORD_SIZE) and a data
  event's header size written as a number (in bytes or words, from the spec: an operand of ``+``
  or ``-``, of a comparison, or a slice bound) are layout by hand too: the generated readers and
  builders (``pybmq.generated.wire_messages``) and their constants hold them;
- a ``struct`` format string written in the call (``struct.Struct(">I")``) is a layout by hand:
  take the generated ``Struct`` or view.
The allowlist holds what truly is not a protocol constant, each with why.

And every public name of ``pybmq.generated.wire_codec`` has a user in runtime/ (the spec's
``codec`` and ``views`` sections list what to generate; tests alone do not count).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from pybmq.codegen.layout import SPEC_NAME, load_spec
from pybmq.generated import wire_codec

from tests.helpers.paths import REPO_ROOT

RUNTIME = REPO_ROOT / "runtime"
CHECKED = (RUNTIME / "wire", RUNTIME / "client")
STRUCT_CALLS = {"Struct", "pack", "unpack", "unpack_from", "pack_into", "iter_unpack", "calcsize"}

# (file under runtime/, the expression as ast.unparse writes it) -> why it is not a protocol constant
ALLOWED = {
    ("wire/framing.py", "1 << 20"): "MAX_CONTROL_EVENT_SIZE: our cap on a buffered control event",
    ("wire/capture.py", "struct.Struct('>BIQI')"): "the record header of pybmq's capture files",
    ("wire/capture.py", "struct.Struct('>I')"): "a cut record's original event length (captures)",
    ("client/admin.py", "64 << 20"): "MAX_ADMIN_EVENT_SIZE: our cap on an admin answer",
    ("client/options.py", "1 << 20"): "max_put_event_bytes: a default batching size, 1 MiB",
    ("client/consuming.py", "qid << 32"): "a dict key made of two ids, not wire bits",
    (
        "client/dedup.py",
        "generation << 1",
    ): "a window entry: connection and confirmed bit, not wire bits",
    ("client/dedup.py", "code >> 1"): "a window entry's connection, not wire bits",
    ("wire/dissect.py", "32 <= b < 127"): "printable ASCII, for a hex dump's text column",
    ("wire/dissect.py", "4 * 1024"): "MAX_INFLATED_MESSAGE: 4 MiB, a display bound",
    ("client/aio.py", "4 * 1024"): "write_high_water: a default buffer size, 4 MiB",
    ("client/sync.py", "4 * 1024"): "write_high_water: a default buffer size, 4 MiB",
    ("client/aio.py", "write_high_water // 4"): "the default low watermark: a quarter of the high",
}

# Numbers the layout spec owns: the word, and the sizes of the data events' headers (bytes and
# words, full and what every header holds) and of the EventHeader.
_SPEC = load_spec(REPO_ROOT / "schema" / SPEC_NAME)
WORD = int(str(_SPEC.constants["WORD_SIZE"]))
HEADER_SIZES = {_SPEC.struct("EventHeader").size} | {
    size
    for m in _SPEC.messages
    for size in (m.header_size, m.required_size, m.header_words, m.required_words)
}


def _is_number(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    )


def _is_literal(node: ast.expr | None, values: set[int]) -> bool:
    return node is not None and _is_number(node) and node.value in values  # type: ignore[union-attr]


def _offending_operand(op: ast.operator, left: ast.expr, right: ast.expr) -> bool:
    if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return _is_number(left) or _is_number(right)
    if isinstance(op, (ast.RShift, ast.LShift)):
        return _is_number(right)
    if isinstance(op, (ast.Mult, ast.FloorDiv, ast.Mod, ast.Div)):  # word arithmetic
        return _is_literal(left, {WORD}) or _is_literal(right, {WORD})
    if isinstance(op, (ast.Add, ast.Sub)):  # an offset past a header
        return _is_literal(left, HEADER_SIZES) or _is_literal(right, HEADER_SIZES)
    return False


def _header_size_compared_or_sliced(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare):
        return any(_is_literal(side, HEADER_SIZES) for side in [node.left, *node.comparators])
    if isinstance(node, ast.Slice):
        return _is_literal(node.lower, HEADER_SIZES) or _is_literal(node.upper, HEADER_SIZES)
    return False


def _is_struct_format_call(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if isinstance(func, ast.Attribute):
        if not (isinstance(func.value, ast.Name) and func.value.id == "struct"):
            return False
    elif name != "Struct":
        return False
    if name not in STRUCT_CALLS or not node.args:
        return False
    first = node.args[0]
    return isinstance(first, ast.JoinedStr) or (
        isinstance(first, ast.Constant) and isinstance(first.value, (str, bytes))
    )


def offenders(path: Path) -> Iterator[tuple[int, str]]:
    """(line, expression) of every hand-written mask, shift or struct format in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if (
            (isinstance(node, ast.BinOp) and _offending_operand(node.op, node.left, node.right))
            or (
                isinstance(node, ast.AugAssign)
                and _offending_operand(node.op, node.target, node.value)
            )
            or (isinstance(node, ast.Call) and _is_struct_format_call(node))
            or _header_size_compared_or_sliced(node)
        ):
            yield node.lineno, ast.unparse(node)


def _found(folders: tuple[Path, ...]) -> list[str]:
    out = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(RUNTIME).as_posix()
            seen: set[str] = set()
            for line, expr in offenders(path):
                # An allowed expression inside a bigger one is reported once, as the bigger one.
                if (rel, expr) in ALLOWED or any(expr in s for s in seen):
                    seen.add(expr)
                    continue
                seen.add(expr)
                out.append(f"runtime/{rel}:{line}: {expr}")
    return out


def test_no_mask_shift_or_struct_format_by_hand() -> None:
    found = _found(CHECKED)
    assert not found, "protocol layout written by hand (use pybmq.generated.wire_codec):\n" + (
        "\n".join(found)
    )


def test_allowlist_is_current() -> None:
    """An allowlisted expression that is gone must leave the list (it would hide a new one)."""
    present = {
        (path.relative_to(RUNTIME).as_posix(), expr)
        for folder in CHECKED
        for path in folder.rglob("*.py")
        for _, expr in offenders(path)
    }
    assert set(ALLOWED) <= present


def test_the_check_finds_what_it_must(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import struct\n"
        "A = struct.Struct('>I')\n"
        "B = struct.unpack_from(f'>{n}s', b)\n"
        "c = (w >> 24) & 0xF\n"
        "d = w & MASK\n"
        "e = 1 << SHIFT\n"
        "f = x << 3\n"
        "g = FLAGS | 2\n"
        "w &= 0xFFF\n"
        "h = struct.Struct(NAMED.format)\n"
    )
    lines = sorted({line for line, _ in offenders(sample)})
    assert lines == [2, 3, 4, 7, 8, 9]


def test_word_arithmetic_and_header_sizes_by_hand_are_refused(tmp_path: Path) -> None:
    """The evasions that passed the first rule, planted in a copy of the PUSH reader: word
    arithmetic with a literal and a header size written as a number. The check must name them
    (and only them)."""
    source = (RUNTIME / "wire" / "push.py").read_text(encoding="utf-8")
    assert not list(offenders(RUNTIME / "wire" / "push.py"))
    planted = source + (
        "\n\ndef _planted(data: bytes, pos: int, words: int) -> tuple[int, bytes, bool]:\n"
        "    padding = words % 4\n"
        "    start = pos + 32\n"
        "    return padding, data[pos : pos + 28], words * 4 > 36\n"
    )
    path = tmp_path / "push.py"
    path.write_text(planted, encoding="utf-8")
    found = sorted(offenders(path))
    last = planted.count("\n")
    assert [line for line, _ in found] == [last - 2, last - 1, last, last, last]
    assert {expr for _, expr in found} == {
        "words % 4",
        "pos + 32",
        "pos + 28",
        "words * 4",
        "words * 4 > 36",
    }


def _public_names() -> set[str]:
    """Constants, Structs, records, enums and functions of the codec module. The spec's
    ``constants`` section is left out: those are protocol facts (limits, codes) kept for
    importers, and the schema check reports removing one as an API change."""
    spec = load_spec(REPO_ROOT / "schema" / SPEC_NAME)
    names = {name for name in vars(wire_codec) if not name.startswith("_") and name.isupper()}
    names |= {
        name
        for name, value in vars(wire_codec).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == wire_codec.__name__
    }
    return names - set(spec.constants)


def _names_used_in_runtime() -> set[str]:
    """Names used in runtime/, and in the message codecs rendered beside the codec module (the
    PUT/PUSH readers and builders use its structs and records)."""
    used: set[str] = set()
    for path in [*RUNTIME.rglob("*.py"), REPO_ROOT / "generated" / "wire_messages.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.alias):
                used.add(node.name)
    return used


def test_every_generated_codec_name_has_a_runtime_user() -> None:
    used = _names_used_in_runtime()
    for name in list(used):  # the record an unpack function returns is used with it
        fn = getattr(wire_codec, name, None)
        if callable(fn) and getattr(fn, "__module__", None) == wire_codec.__name__:
            used.add(str(getattr(fn, "__annotations__", {}).get("return", "")))
    unused = sorted(_public_names() - used)
    assert not unused, f"generated but unused by runtime/ (drop them from the spec): {unused}"
