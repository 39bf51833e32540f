"""Docs stay true: every setting our code reads is in the README's table, and the public
surface of the core is what ``__all__`` says."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from scrapy.settings import default_settings

ROOT = Path(__file__).resolve().parents[2]
_READS = re.compile(r"""(?:settings|operator)\s*(?:\.get\w*\(|\[)\s*["']([A-Z][A-Z0-9_]+)["']""")


def _setting_names() -> set[str]:
    names: set[str] = set()
    for package in ("synapsecrawl", "middlewares", "spiders", "pipelines"):
        for path in (ROOT / package).rglob("*.py"):
            names.update(_READS.findall(path.read_text("utf-8")))
    return names


def test_every_setting_we_read_is_documented() -> None:
    """CONTRACT settings: each setting of our own that the code reads has a row in the README."""
    readme = (ROOT / "README.md").read_text("utf-8")
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", readme, flags=re.MULTILINE))
    ours = {name for name in _setting_names() if not hasattr(default_settings, name)}
    assert ours, "no settings found: the pattern is broken"
    assert ours - documented == set()


def _core_modules() -> list[str]:
    import synapsecrawl

    return sorted(
        info.name for info in pkgutil.walk_packages(synapsecrawl.__path__, "synapsecrawl.")
        if not info.name.endswith(("__main__", "settings")) and ".commands" not in info.name
    )


@pytest.mark.parametrize("module_name", _core_modules())
def test_exported_members(module_name: str) -> None:
    """The public surface is __all__: every name in it exists, and every public function or
    class defined in the module is in it (httpx's test_exported_members)."""
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        pytest.skip(f"{module_name} has no __all__ (a package or script)")
    assert all(hasattr(module, name) for name in exported)
    defined = {
        name for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module_name
        and callable(value)
    }
    assert defined <= set(exported), defined - set(exported)
