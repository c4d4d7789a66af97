from __future__ import annotations

import ast
import doctest
from pathlib import Path

import memstream
import memstream.engine.memory

PKG = Path(memstream.__file__).parent


def test_all_is_sorted_and_complete():
    names = memstream.__all__
    order = sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    assert names == order and len(set(names)) == len(names)
    for name in names:
        assert hasattr(memstream, name)
    public = {n for n in vars(memstream) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(names)


def test_errors_share_one_root():
    for name in memstream.__all__:
        obj = getattr(memstream, name)
        if isinstance(obj, type) and issubclass(obj, Exception) \
                and not issubclass(obj, Warning):
            assert issubclass(obj, memstream.MemstreamError), name


def _imports(path: Path) -> set[str]:
    """Absolute names of the memstream modules a file imports."""
    package = ".".join(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                out.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("memstream")}


def test_imports_point_down_the_layers():
    upper = ("memstream.engine.memory", "memstream.cli", "memstream.engine.transfer",
             "memstream.bench", "memstream.cli.demo", "memstream.engine")
    lower = [*PKG.joinpath("store").rglob("*.py"), *PKG.joinpath("retrieval").rglob("*.py"),
             *PKG.joinpath("embed").rglob("*.py"), *PKG.joinpath("cognition").rglob("*.py"),
             PKG / "filters.py", PKG / "_types.py", PKG / "errors.py",
             *[p for p in PKG.joinpath("core").rglob("*.py")]]
    for path in lower:
        bad = [m for m in _imports(path) if m.startswith(upper)]
        assert not bad, f"{path.name} imports {bad}"
    store_files = PKG.joinpath("store").rglob("*.py")
    for path in store_files:
        assert not [m for m in _imports(path) if m.startswith("memstream.retrieval")], path


def test_docstring_examples_run():
    import importlib
    import pkgutil

    attempted = 0
    for info in pkgutil.walk_packages(memstream.__path__, "memstream."):
        module = importlib.import_module(info.name)
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, info.name
        attempted += result.attempted
    assert attempted >= 4
