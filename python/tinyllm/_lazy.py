"""Package names imported on first use (PEP 562): a package lists each public name by the
submodule that defines it, and importing the package imports none of them.

>>> getattr_, names = lazy_exports("tinyllm.migrate", {"plan": ("Plan",)})
>>> names, getattr_("Plan").__name__
(['Plan'], 'Plan')
"""

from __future__ import annotations

import importlib
from typing import Callable


def lazy_exports(package: str, homes: dict[str, tuple[str, ...]]) -> tuple[Callable[[str], object], list[str]]:
    """(`__getattr__`, `__all__`) for `package`, whose public names live in `homes`
    ({submodule: (name, ...)})."""
    home = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str):
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__, sorted(home)
