"""The formatter cache makes an unchanged generate/check fast; it must never make it wrong.

Whatever changes the unformatted text (a template, the layout spec, a schema) or the formatter
must miss the cache, a damaged entry must be a miss, and the cache must live outside the source
tree and stay bounded."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from pybmq.codegen import driver, render
from pybmq.codegen.formatcache import FormatCache
from pybmq.codegen.layout import SPEC_NAME, generate_layout

from tests.helpers.paths import REPO_ROOT, SCHEMA_DIR


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Path]:
    """The folder of a fresh, empty process cache; the previous cache is put back after."""
    folder = tmp_path / "cache"
    previous = render.set_format_cache(FormatCache(folder, render.FORMATTER_ID))
    yield folder
    render.set_format_cache(previous)


def new_process(folder: Path) -> None:
    """What a new run sees: nothing in memory, the disk cache as the last run left it."""
    render.set_format_cache(FormatCache(folder, render.FORMATTER_ID))


def layout_files(schema_dir: Path = SCHEMA_DIR) -> dict[str, str]:
    return {a.relpath: a.text for a in generate_layout(schema_dir)}


def on_disk(relpaths: Iterable[str]) -> dict[str, str]:
    return {r: (driver.GENERATED_DIR / r).read_text(encoding="utf-8") for r in relpaths}


def test_warm_cache_gives_the_committed_output(cache: Path) -> None:
    cold = layout_files()
    assert cold == on_disk(cold)
    assert len(list(cache.glob("*.fmt"))) == len(cold)
    new_process(cache)  # a new process: memory empty, disk warm
    assert layout_files() == cold


def test_template_change_misses_a_warm_cache(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    committed = layout_files()  # warms the cache
    templates = tmp_path / "templates"
    shutil.copytree(render.TEMPLATES, templates)
    codec = templates / "wire_codec.py.j2"
    codec.write_text(codec.read_text() + "\nTEMPLATE_CANARY = 1\n")
    monkeypatch.setattr(render, "TEMPLATES", templates)
    new_process(cache)
    changed = layout_files()
    assert "TEMPLATE_CANARY = 1" in changed["wire_codec.py"]
    assert "wire_codec.py" in driver.diff(changed, driver.GENERATED_DIR)
    assert changed["wire_layout.py"] == committed["wire_layout.py"]


def test_spec_change_misses_a_warm_cache(cache: Path, tmp_path: Path) -> None:
    layout_files()  # warms the cache
    schema = tmp_path / "schema"
    schema.mkdir()
    spec = (SCHEMA_DIR / SPEC_NAME).read_text()
    assert "  PROTOCOL_VERSION: 1\n" in spec
    (schema / SPEC_NAME).write_text(
        spec.replace("  PROTOCOL_VERSION: 1\n", "  PROTOCOL_VERSION: 7\n")
    )
    new_process(cache)
    changed = layout_files(schema)
    assert "PROTOCOL_VERSION = 7" in changed["wire_codec.py"]
    assert "wire_codec.py" in driver.diff(changed, driver.GENERATED_DIR)


def test_key_covers_formatter_and_text(tmp_path: Path) -> None:
    a = FormatCache(tmp_path, "black 1 mode")
    assert a.key("x = 1\n") != a.key("x = 2\n")
    assert a.key("x = 1\n") != FormatCache(tmp_path, "black 2 mode").key("x = 1\n")
    calls: list[str] = []

    def formatter(text: str) -> str:
        calls.append(text)
        return text.upper()

    assert a.format("x = 1\n", formatter) == "X = 1\n"
    assert FormatCache(tmp_path, "black 1 mode").format("x = 1\n", formatter) == "X = 1\n"
    assert FormatCache(tmp_path, "black 2 mode").format("x = 1\n", formatter) == "X = 1\n"
    assert calls == ["x = 1\n", "x = 1\n"]  # the second formatter version missed


def test_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    first = FormatCache(tmp_path, "f")
    first.format("a", lambda t: "formatted a")
    (entry,) = tmp_path.glob("*.fmt")
    entry.write_text(entry.read_text().replace("formatted a", "hand-edited"))
    assert FormatCache(tmp_path, "f").format("a", lambda t: "formatted a") == "formatted a"
    entry.write_text("")  # truncated
    assert FormatCache(tmp_path, "f").format("a", lambda t: "formatted a") == "formatted a"


def test_prune_keeps_only_what_the_run_used(tmp_path: Path) -> None:
    first = FormatCache(tmp_path, "f")
    first.format("a", str.upper)
    first.format("b", str.upper)
    second = FormatCache(tmp_path, "f")
    second.format("a", str.upper)
    assert second.prune() == 1
    assert [p.stem for p in tmp_path.glob("*.fmt")] == [second.key("a")]


def test_a_full_run_prunes_the_cache(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = cache / ("0" * 64 + ".fmt")
    stale.parent.mkdir(parents=True)
    stale.write_text("x")

    def render_all(schema_dir: Path) -> dict[str, str]:
        # the layout modules go through the cache; the rest is taken as it is on disk
        return driver.existing_files(driver.GENERATED_DIR) | layout_files(schema_dir)

    monkeypatch.setattr(driver, "render_all", render_all)
    assert driver.main(["--check"]) == 0
    assert not stale.exists()
    assert len(list(cache.glob("*.fmt"))) == 3  # the layout modules: codec, layout, messages
    assert "fresh" in capsys.readouterr().out


def test_default_cache_is_outside_the_source_tree() -> None:
    folder = render.DEFAULT_CACHE_DIR.relative_to(REPO_ROOT)
    assert folder.parts[0] == "build"
    assert "build/" in (REPO_ROOT / ".gitignore").read_text().splitlines()


def test_cache_folder_can_be_moved_or_turned_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYBMQ_CODEGEN_CACHE", str(tmp_path))
    assert render.cache_dir() == tmp_path
    monkeypatch.setenv("PYBMQ_CODEGEN_CACHE", "")
    assert render.cache_dir() is None
    monkeypatch.delenv("PYBMQ_CODEGEN_CACHE")
    assert render.cache_dir() == render.DEFAULT_CACHE_DIR
