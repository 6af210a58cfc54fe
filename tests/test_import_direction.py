"""Dependencies point one way: formats <- storage (log <- objectstore, serde <- metadata <- config, tiered <- write <-
recovery, retention, replicas; verify, dump, coordinator) <- render / commands / spark.

Every module's imports are read with ``ast`` (lazy imports inside functions and ``TYPE_CHECKING``
blocks included, so a late import cannot hide a wrong direction). The storage sub-packages'
rules are read from their own ``__init__`` docstrings ("May import: ..."), so the documentation a
newcomer reads and the rule this test enforces are the same text.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STORAGE = REPO / "seglog_cli" / "storage"

# the storage sub-packages, lowest first, and what each may import (besides itself, formats, stdlib
# and third-party libraries that are no CLI or Spark framework)
ALLOWED = {
    "log": set(),
    "objectstore": {"log"},
    "serde": {"log"},
    "metadata": {"log", "serde"},
    "config": {"log", "serde", "metadata"},
    "tiered": {"log", "serde"},
    "write": {"log", "config"},
    "recovery": {"log", "config", "write"},
    "retention": {"log", "config", "write"},
    "replicas": {"log", "config", "write"},
    "verify": {"log", "serde", "config", "tiered"},
    "dump": {"log", "serde", "tiered"},
    "coordinator": {"log", "serde", "config", "tiered"},
    "replay": {"log", "serde", "config", "tiered", "dump", "coordinator"},
}
FRAMEWORKS = {"typer", "click", "rich", "pyspark", "pyarrow", "pandas", "py4j"}
# the one exception: the object-store package may use pyarrow's filesystem layer (an alternative
# ranged reader, measured against fsspec's), never pyarrow's data structures
FILESYSTEM_LAYERS = {"objectstore": {"pyarrow.fs"}}
# outside storage: the top-level parts of seglog_cli a part may NOT import
FORBIDDEN = {
    "storage": {"commands", "render", "spark", "cli", "status", "__main__"},
    "render": {"commands", "spark", "cli", "__main__"},
    "spark": {"commands", "render", "cli", "__main__"},
    "status": {"commands", "render", "spark", "cli", "__main__"},
    "commands": {"cli", "__main__"},
}


def python_files(repo: Path) -> list[Path]:
    """Every module of seglog_cli and formats. seglog_cli/formats is a link to ../formats (a
    checkout's view of the installed package): formats is read through the real directory."""
    seglog = sorted(p for p in (repo / "seglog_cli").rglob("*.py")
                    if p.relative_to(repo / "seglog_cli").parts[0] != "formats")
    return seglog + sorted((repo / "formats").rglob("*.py"))


def module_name(repo: Path, path: Path) -> str:
    if path.is_relative_to(repo / "formats"):
        parts = ("seglog_cli", "formats") + path.relative_to(repo / "formats").with_suffix("").parts
    else:
        parts = path.relative_to(repo).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(repo: Path, path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, at any depth; ``from package import module``
    names the module."""
    out = []
    name = module_name(repo, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append((node.lineno, full if is_module(repo, full) else base))
    return out


def is_module(repo: Path, name: str) -> bool:
    parts = name.split(".")
    if parts[:2] == ["seglog_cli", "formats"]:
        where = (repo / "formats").joinpath(*parts[2:])
    else:
        where = repo.joinpath(*parts)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file() or any(
        where.parent.glob(where.name + ".*.so"))


def storage_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["seglog_cli", "storage"] and len(parts) > 2 else None


def may_import_from_docstring(package: str) -> set[str]:
    doc = ast.get_docstring(ast.parse((STORAGE / package / "__init__.py").read_text())) or ""
    match = re.search(r"May import:(.*?)(?:\n\n|$)", doc, re.S)
    assert match, f"storage/{package}/__init__.py: its docstring says what the package may import ('May import:')"
    return set(re.findall(r"``storage\.(\w+)``", match.group(1)))


def test_every_storage_module_is_in_a_sub_package():
    flat = [p.name for p in STORAGE.iterdir() if p.suffix in (".py", ".c") and p.name != "__init__.py"]
    assert flat == [], "storage/ holds sub-packages only; put these in one (see its __init__ docstrings)"
    packages = {p.name for p in STORAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(ALLOWED)


@pytest.mark.parametrize("package", list(ALLOWED))
def test_docstring_names_what_the_package_may_import(package):
    assert may_import_from_docstring(package) == ALLOWED[package]


def test_the_allowed_imports_have_no_cycle():
    order = list(ALLOWED)
    for index, package in enumerate(order):
        assert ALLOWED[package] <= set(order[:index]), f"{package} may import a package listed after it"


def violations(repo: Path) -> list[str]:
    found = []
    for path in python_files(repo):
        module = module_name(repo, path)
        parts = module.split(".")
        for line, target in imported_modules(repo, path):
            where = f"{path.relative_to(repo)}:{line}: {module} imports {target}"
            top = target.split(".")[0]
            if parts[:2] == ["seglog_cli", "formats"]:
                if top not in sys.stdlib_module_names and top != "construct" and not target.startswith(
                        "seglog_cli.formats"):
                    found.append(f"{where} (formats: construct and the standard library only)")
                continue
            part = parts[1] if len(parts) > 1 else ""
            target_parts = target.split(".")
            layer_ok = target in FILESYSTEM_LAYERS.get(storage_package(module) or "", ())
            if part == "storage" and top in FRAMEWORKS and not layer_ok:
                found.append(f"{where} (the engine never imports a CLI or Spark framework)")
            if target_parts[0] == "seglog_cli" and len(target_parts) > 1 and target_parts[1] in FORBIDDEN.get(part, ()):
                found.append(f"{where} ({part} never imports {target_parts[1]})")
            if part in ("render", "spark") and top in {"typer", "click"}:
                found.append(f"{where} ({part} never imports the CLI framework)")
            source_pkg, target_pkg = storage_package(module), storage_package(target)
            if source_pkg and target_pkg and source_pkg != target_pkg and target_pkg not in ALLOWED[source_pkg]:
                found.append(f"{where} (storage.{source_pkg} may import only "
                             f"{', '.join(sorted(ALLOWED[source_pkg])) or 'formats'})")
    return found


def test_imports_point_one_way():
    assert violations(REPO) == []


def test_the_checker_catches_lazy_imports_pointing_the_wrong_way(tmp_path):
    """The check itself, on a small tree: a lazy import of a higher package inside a function, a
    framework under TYPE_CHECKING, formats importing the engine, render importing a command."""
    files = {
        "seglog_cli/__init__.py": "",
        "seglog_cli/storage/__init__.py": "",
        "seglog_cli/storage/log/__init__.py": "",
        "seglog_cli/storage/log/files.py": "import os\nfrom seglog_cli.formats import layout\n",
        "seglog_cli/storage/log/batches.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                              "    import rich.console\n"
                                              "def f():\n    from seglog_cli.storage.write import journal\n"),
        "seglog_cli/storage/write/__init__.py": "",
        "seglog_cli/storage/write/journal.py": "from seglog_cli.storage.log.files import os\n",
        "seglog_cli/render/__init__.py": "",
        "seglog_cli/render/text.py": "def g():\n    from seglog_cli.commands.dump import dump\n",
        "formats/__init__.py": "",
        "formats/layout.py": "import construct\nfrom seglog_cli.storage.log import files\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = [line.split(" (")[0] for line in violations(tmp_path)]
    assert found == [
        "seglog_cli/render/text.py:2: seglog_cli.render.text imports seglog_cli.commands.dump",
        "seglog_cli/storage/log/batches.py:3: seglog_cli.storage.log.batches imports rich.console",
        "seglog_cli/storage/log/batches.py:5: seglog_cli.storage.log.batches imports seglog_cli.storage.write.journal",
        "formats/layout.py:2: seglog_cli.formats.layout imports seglog_cli.storage.log.files",
    ]
