"""The product around the bots (design card): its layout, its spiders and what it is built on."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import requires
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_top_level_layout() -> None:
    """CARD-LAYOUT: scrapy.cfg and pyproject.toml at the top, the core and its three adapter packages
    beside them, and the tests."""
    for name in ("scrapy.cfg", "pyproject.toml"):
        assert (ROOT / name).is_file(), name
    for name in ("synapsecrawl", "spiders", "middlewares", "pipelines", "tests"):
        assert (ROOT / name).is_dir(), name
    assert "default = synapsecrawl.settings" in (ROOT / "scrapy.cfg").read_text("utf-8")


def test_built_on_the_named_libraries() -> None:
    """CARD-DEPS: the installed distribution requires scrapy, scrapy-playwright, itemadapter, w3lib,
    protego and parsel itself, not only through Scrapy."""
    required = {re.split(r"[\s<>=!~;\[]", line, maxsplit=1)[0].lower() for line in requires("synapsecrawl") or []}
    assert {"scrapy", "scrapy-playwright", "itemadapter", "w3lib", "protego", "parsel"} <= required


def test_spiders_for_every_mode_feed_the_index_pipeline() -> None:
    """CARD-SPIDERS: `scrapy list` in the project shows the page, sitemap, site and feed spiders (and
    SnagaBot's on-demand one), and the project's items go to the indexing pipeline."""
    listed = subprocess.run(
        [sys.executable, "-m", "scrapy", "list"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert {"page", "sitemap", "site", "feed", "ondemand"} <= set(listed)
    shown = subprocess.run(
        [sys.executable, "-m", "scrapy", "settings", "--get", "ITEM_PIPELINES"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "pipelines.index.IndexPipeline" in shown


def test_every_core_entry_is_behind_the_boundary_lint() -> None:
    """CARD-LAYOUT: each package and module at the top of synapsecrawl/ is a source of the import
    contract that keeps Scrapy, Twisted and the adapters out of the core, except the front doors (cli/)
    and Scrapy's settings module; a new module cannot slip past the lint."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    [boundary] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "forbidden"]
    assert {"scrapy", "twisted", "middlewares", "spiders", "pipelines"} <= set(boundary["forbidden_modules"])
    entries = {
        f"synapsecrawl.{path.name.removesuffix('.py')}"
        for path in (ROOT / "synapsecrawl").iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py") or (path / "__init__.py").is_file()
    }
    assert entries - set(boundary["source_modules"]) == {"synapsecrawl.cli", "synapsecrawl.settings"}
    assert set(boundary["source_modules"]) <= entries


def test_the_adapter_packages_are_layered_over_the_core() -> None:
    """CARD-LAYOUT: import-linter layers the adapters, spiders and pipelines over middlewares over
    middlewares.engine over the core, and the middlewares/ layer is exhaustive: every module there but
    the engine is named above it, so a new one cannot slip past the lint."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    layers = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    outer = [c["layers"] for c in layers if "containers" not in c]
    assert outer == [["spiders | pipelines", "middlewares", "synapsecrawl"]]
    [inner] = [c for c in layers if c.get("containers") == ["middlewares"]]
    assert inner["exhaustive"] is True
    above, below = inner["layers"]
    assert below == "engine"
    modules = {path.stem for path in (ROOT / "middlewares").glob("*.py") if path.name != "__init__.py"}
    assert {name.strip() for name in above.split(":")} == modules
    [acyclic] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "acyclic_siblings"]
    assert acyclic["depth"] >= 1


def _test_module_named(name: str) -> bool:
    return any(part.startswith("test_") for part in name.split("."))


def test_no_test_module_imports_from_another() -> None:
    """CARD-LAYOUT: a test module imports no other test module, not even inside a function or in code it runs
    in a subprocess: shared fixtures live in a conftest.py, shared helpers in a module of their own
    (tests/helpers.py, tests/adapters/crawlers.py, tests/site/...), so moving or renaming a test file breaks
    nothing else."""
    dotted = re.compile(r"\btests(?:\.\w+)*\.test_\w+")
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else [node.module or "", *(a.name for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = dotted.findall(node.value)
            else:
                continue
            found += [f"{where}:{node.lineno}: {name}" for name in names if _test_module_named(name)]
    assert found == []
