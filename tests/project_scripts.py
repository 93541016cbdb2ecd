"""The scripts of ``scripts/``, loaded as modules for their tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def script_path(name: str) -> Path:
    """``scripts/NAME.py``."""
    return SCRIPTS / f"{name}.py"


def load_script(name: str) -> ModuleType:
    """``scripts/NAME.py`` as a module (the folder is no package)."""
    spec = importlib.util.spec_from_file_location(name, script_path(name))
    if spec is None or spec.loader is None:
        raise ImportError(f"no script {name}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
