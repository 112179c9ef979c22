"""The API reference pages, made from the modules' own ``__all__`` so that they cannot drift:

- ``docs/reference/api.md``: the public API (``pybmq``, ``pybmq.compat``, ``pybmq.spark``,
  ``pybmq.faststream``, ``pybmq.testing``), one entry per name their ``__all__`` declares (a
  name a package imports lazily, where it is defined);
- ``docs/reference/modules.md``: every module of every layer, each rendered with the names its
  ``__all__`` declares (mkdocstrings takes a module's public members from it).

``python -m pybmq.cli.apidocs`` (``make api-reference``) writes both; ``--check`` exits 1 when
one is not current (a test runs it). ``__all__`` is read from the source, so the Spark pages need
no pyspark.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

__all__ = [
    "ALL",
    "API_SECTIONS",
    "FOLDERS",
    "LAYERS",
    "ROOT",
    "api_page",
    "declared",
    "main",
    "modules_page",
]

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"pybmq": ROOT / "runtime", "pybmq.generated": ROOT / "generated"}

# In a section's entries: the module's ``__all__``, in its order.
ALL = "__all__"
# The public API: module -> its blocks, each some prose and then its entries (``ALL``, or names
# spelled out where they are defined: a package that imports its names lazily, a class an
# annotation stands for). Every name of the module's ``__all__`` must be among its entries.
API_SECTIONS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "pybmq": (("The client: sessions, queues, options, acknowledgements.", (ALL,)),),
    "pybmq.compat": (
        (
            "The official `blazingmq` SDK's API on pybmq (see [Compat](../guide/compat.md)).",
            (ALL,),
        ),
    ),
    "pybmq.spark": (
        (
            "The Spark data source (see [Spark](../guide/spark.md)); needs the `spark` extra.",
            (ALL,),
        ),
    ),
    "pybmq.faststream": (
        (
            "BlazingMQ as a FastStream broker (see [FastStream](../guide/faststream.md)); needs "
            "the\n`faststream` extra. `BlazingMQMessage` is the handler annotation (the message "
            "from FastStream's\ncontext); the class it annotates is "
            "`pybmq.faststream.message.BlazingMQMessage`, below.",
            (ALL,),
        ),
        (
            "The class `BlazingMQMessage` annotates, the FastAPI integration and the middlewares:",
            (
                "pybmq.faststream.message.BlazingMQMessage",
                "pybmq.faststream.fastapi.BlazingMQRouter",
                "pybmq.faststream.opentelemetry.BlazingMQTelemetryMiddleware",
                "pybmq.faststream.prometheus.BlazingMQPrometheusMiddleware",
            ),
        ),
    ),
    "pybmq.testing": (
        (
            "Brokers for tests. The real broker or the simulator behind one handle, with no "
            "pytest needed:",
            (
                "pybmq.testing.brokers.running_broker",
                "pybmq.testing.brokers.BrokerHandle",
                "pybmq.testing.brokers.BrokerUnavailable",
                "pybmq.testing.real_broker.RealBroker",
            ),
        ),
        (
            "Certificates for a TLS test broker (see [Security](../guide/security.md)):",
            ("pybmq.testing.certificates.TestCertificates",),
        ),
        (
            "A replicated cluster and a proxy for tests (see [Testing against a "
            "cluster](../guide/cluster.md)):",
            (
                "pybmq.testing.cluster.running_cluster",
                "pybmq.testing.cluster.RealCluster",
                "pybmq.testing.cluster_status.NodeView",
                "pybmq.testing.cluster_status.ProxyView",
                "pybmq.testing.broker_config.ElectionTimings",
            ),
        ),
        (
            "The pytest plugin, `pybmq.testing.plugin` (see [Simulator and pytest "
            "plugin](../guide/simulator.md)):",
            (
                "pybmq.testing.plugin.bmq_any_broker",
                "pybmq.testing.plugin.bmq_any_broker_url",
                "pybmq.testing.plugin.bmq_broker_url",
                "pybmq.testing.plugin.bmq_cluster",
                "pybmq.testing.plugin.bmq_real_broker",
                "pybmq.testing.plugin.bmq_sim",
                "pybmq.testing.plugin.skip_if_sim_only",
            ),
        ),
    ),
}
# Every layer, in the architecture's order (docs/architecture.md), and its packages or modules.
LAYERS: dict[str, tuple[str, ...]] = {
    "base": (
        "pybmq.errors",
        "pybmq.uri",
        "pybmq.loopthread",
        "pybmq.statemachine",
    ),
    "codec": ("pybmq.codec",),
    "generated": (
        "pybmq.generated.wire_codec",
        "pybmq.generated.wire_messages",
        "pybmq.generated.wire_layout",
    ),
    "wire": ("pybmq.wire",),
    "client": ("pybmq.client",),
    "sim": ("pybmq.sim",),
    "compat": ("pybmq.compat",),
    "spark": ("pybmq.spark",),
    "faststream": ("pybmq.faststream",),
    "cli": ("pybmq.cli",),
    "app": ("pybmq.demo", "pybmq.testing"),
}


def _path(module: str) -> Path:
    prefix = "pybmq.generated" if module.startswith("pybmq.generated") else "pybmq"
    relative = module.removeprefix(prefix).lstrip(".").replace(".", "/")
    base = FOLDERS[prefix] / relative if relative else FOLDERS[prefix]
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def declared(module: str) -> list[str]:
    """The names ``module``'s ``__all__`` declares, read from its source (``*NAMES`` of a
    module-level literal expanded; a dict's keys)."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    literals = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            assert isinstance(node.value, (ast.List, ast.Tuple))
            names: list[str] = []
            for element in node.value.elts:
                if isinstance(element, ast.Starred) and isinstance(element.value, ast.Name):
                    literal = literals[element.value.id]
                    keys = literal.keys if isinstance(literal, ast.Dict) else literal.elts  # type: ignore[attr-defined]
                    names += [ast.literal_eval(k) for k in keys if k is not None]
                else:
                    names.append(ast.literal_eval(element))
            return names
    raise SystemExit(f"{module} declares no __all__")


def _modules(package: str) -> list[str]:
    """``package`` (a module or a package) and, for a package, its modules, sorted."""
    path = _path(package)
    if path.name != "__init__.py":
        return [package]
    found = [package]
    for child in sorted(path.parent.glob("*.py")):
        if child.name not in ("__init__.py", "__main__.py"):
            found.append(f"{package}.{child.stem}")
    return found


def _entries(module: str, blocks: tuple[tuple[str, tuple[str, ...]], ...]) -> list[str]:
    """Every entry of a section, ``ALL`` expanded; SystemExit naming a name of ``__all__``
    left out (so the page cannot drift from the module)."""
    names = [name for name in declared(module) if name != "__version__"]
    entries = [
        entry
        for _prose, listed in blocks
        for item in listed
        for entry in ([f"{module}.{name}" for name in names] if item == ALL else [item])
    ]
    missing = [n for n in names if not any(e.rsplit(".", 1)[1] == n for e in entries)]
    if missing:
        raise SystemExit(f"{module}: {', '.join(missing)} not in API_SECTIONS")
    return entries


def api_page() -> str:
    lines = [
        "# API reference",
        "",
        "Every public name of `pybmq`, `pybmq.compat`, `pybmq.spark`, `pybmq.faststream` and",
        "`pybmq.testing` (what each module's `__all__` declares), rendered from its docstring.",
        "Names are listed under the module you import them from (or, for a name imported lazily,",
        "where it is defined); every module of every layer is in [Modules](modules.md).",
        "This page is made by `make api-reference` and a test fails when it is not current.",
        "",
    ]
    for module, blocks in API_SECTIONS.items():
        _entries(module, blocks)
        lines += [f"## `{module}`", ""]
        for prose, listed in blocks:
            lines += [prose, ""]
            for item in listed:
                names = declared(module) if item == ALL else [item.rsplit(".", 1)[1]]
                for name in names:
                    if name != "__version__":
                        entry = f"{module}.{name}" if item == ALL else item
                        lines += [f"::: {entry}", ""]
    return "\n".join(lines)


def modules_page() -> str:
    lines = [
        "# Modules",
        "",
        "Every module of pybmq, layer by layer as [the architecture](../architecture.md) lays",
        "them out, each with its docstring and the names its `__all__` declares (the generated",
        "XSD bindings are left out: their types mirror the schemas, see [Codecs](../codecs.md)).",
        "This page is made by `make api-reference` and a test fails when it is not current.",
        "",
    ]
    on_api_page = {  # modules the API page renders whole (one page per object)
        f"{module}.{name}"
        for module, blocks in API_SECTIONS.items()
        for name in declared(module)
        if any(ALL in listed for _prose, listed in blocks)
        and _path(module).name == "__init__.py"
        and (_path(module).parent / f"{name}.py").exists()
    }
    for layer, packages in LAYERS.items():
        lines += [f"## {layer}", ""]
        for package in packages:
            for module in _modules(package):
                if module in on_api_page:
                    lines += [f"`{module}`: on the [API page](api.md).", ""]
                    continue
                lines += [f"::: {module}", "    options:", "      show_root_heading: true", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pybmq.cli.apidocs", description=__doc__)
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="the docs folder")
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is not current")
    args = parser.parse_args(argv)
    stale = []
    for page, text in (
        (args.docs / "reference" / "api.md", api_page()),
        (args.docs / "reference" / "modules.md", modules_page()),
    ):
        if not page.exists() or page.read_text(encoding="utf-8") != text:
            stale.append(page)
            if not args.check:
                page.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"not current: {', '.join(map(str, stale))}: run make api-reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
