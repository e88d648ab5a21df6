"""The layers import-linter checks (pyproject.toml, [tool.importlinter]; `.ci/layers`)
cover the whole package: a module or package left out of every layer would be checked
by nothing, so a new one must be given its place. (The contracts themselves run in
`.ci/check`, over an installed copy; this only reads the configuration and the tree.)"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config


def _layered() -> list[str]:
    """Every module or package named in the layers contract, top to bottom."""
    contracts = _config()["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [name.strip() for layer in layers for name in layer.split("|")]


def _package_tree() -> list[str]:
    """The top-level packages under `fgcpay` and the modules of the root package."""
    dirs: dict[str, str] = _config()["tool"]["setuptools"]["package-dir"]
    names = [package for package in dirs if package.count(".") == 1]
    names += [f"fgcpay.{path.stem}" for path in (ROOT / dirs["fgcpay"]).glob("*.py")]
    return [name for name in names if not name.endswith(".__init__")]


def test_every_package_and_root_module_has_exactly_one_layer() -> None:
    layered = _layered()
    assert sorted(set(layered)) == sorted(layered), "a name appears in two layers"
    assert sorted(_package_tree()) == sorted(layered)


def test_the_web_surfaces_are_one_layer_and_independent() -> None:
    contracts = _config()["tool"]["importlinter"]["contracts"]
    (independent,) = [c["modules"] for c in contracts if c["type"] == "independence"]
    surfaces = ["fgcpay.dashboard", "fgcpay.hosted_page", "fgcpay.http"]
    assert sorted(independent) == surfaces
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    assert [layer for layer in layers if sorted(n.strip() for n in layer.split("|")) == surfaces]
