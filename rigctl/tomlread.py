"""TOML's reader: the standard library's from Python 3.11, tomli (the same code) before it."""

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["tomllib"]
