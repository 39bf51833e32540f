"""bench/: every benchmark module imports, so a helper one of them takes from another cannot vanish unseen.

The benchmarks run for minutes and are not part of the suite; their imports are (two benchmarks share
helpers, and a rename in one broke the other's import once).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", MODULES)
def test_the_benchmark_module_imports(name: str) -> None:
    """Every module of bench/ imports (its command line and figures are run by hand, not here)."""
    module = importlib.import_module(f"bench.{name}")
    assert module.__doc__, f"bench/{name}.py says what it measures in its docstring"
