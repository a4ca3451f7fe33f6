"""The dependency rule of docs/design.md, read from the import statements (ast).

- the core (``joker/`` outside ``joker/bench/``) imports neither the harness
  (``joker.bench``) nor the benchmarks (``benchmarks``);
- the harness (``joker/bench/``) never imports ``benchmarks``; inside it,
  each role sub-package imports only the ones below it
  (:data:`HARNESS_LAYERS`);
- the report (``reports/``) takes from the project only the record schema
  (``joker.bench.records.record``), the method registry
  (``baselines.registry``) and its own modules; MLflow and the plotting
  libraries are third-party and free.

- no import circle among the project's modules (``joker``, ``baselines``,
  ``reports``, ``benchmarks``, ``hydra_plugins``): the module graph is
  acyclic (:func:`import_cycles`).

Every import statement counts, the lazy ones inside functions included.
The checker runs on the repository (no violation) and on synthetic trees
in ``tmp_path`` (each forbidden import is found).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Roles of the harness, lowest first: a module may import its own
#: sub-package and the ones before it, never one after it. ``atomic`` and
#: ``methods`` and ``csvrows`` (top-level modules of joker/bench) are below every role;
#: ``joker.bench.__main__`` is above them all.
HARNESS_LAYERS = ("config", "records", "measure", "trials", "sweep")

#: What reports/ may import from the project (a module and what is in it).
#: ``joker.bench.trials.scoring``: the trial's own metric functions (numpy only), so that the report rescores
#: stored predictions exactly as the trial scored them (reports.anytime.metric_on_rows, issue 42).
REPORTS_ALLOWED = ("reports", "joker.bench.records.record", "baselines.registry", "joker.bench.trials.scoring")

#: The project's own top-level packages (everything else is third-party).
FIRST_PARTY = ("joker", "benchmarks", "reports", "baselines", "hydra_plugins")

#: The harness folder may hold at most this many modules (issue 22).
MAX_MODULES = 12


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def module_name(root: Path, path: Path) -> str:
    """Dotted module name of ``path`` (a ``.py`` file under ``root``); a package is its ``__init__``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(root: Path, path: Path) -> list:
    """``(line, target)`` of every import in one file, relative ones resolved.

    ``from a.b import c`` gives ``a.b.c`` (``c`` may be a module or a name in
    ``a.b``; both lie within ``a.b``); ``import a.b`` gives ``a.b``.

    Raises
    ------
    SyntaxError
        When the file does not parse.
    ValueError
        When a relative import climbs above the top-level package.
    """
    mod = module_name(root, path)
    package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level > len(package):
                    raise ValueError(f"{path}:{node.lineno}: relative import above the top-level package")
                base = package[: len(package) - node.level + 1]
                parent = ".".join(base + ([node.module] if node.module else []))
            else:
                parent = node.module
            found += [(node.lineno, f"{parent}.{a.name}") for a in node.names]
    return found


def _harness_role(mod: str):
    """Index of ``mod``'s role in :data:`HARNESS_LAYERS`; -1 below them, len() above, None outside."""
    if not _within(mod, "joker.bench"):
        return None
    parts = mod.split(".")
    if len(parts) > 2 and parts[2] in HARNESS_LAYERS:
        return HARNESS_LAYERS.index(parts[2])
    if len(parts) > 2 and parts[2] in ("atomic", "methods", "csvrows"):
        return -1
    return len(HARNESS_LAYERS)  # joker.bench, joker.bench.__main__


def violations(root: Path) -> list:
    """Every import of ``root``'s joker/, benchmarks/ and reports/ that breaks the rule, as ``"file:line: why"``."""
    bad = []
    files = [p for top in ("joker", "benchmarks", "reports") for p in sorted((root / top).rglob("*.py"))
             if "__pycache__" not in p.parts]
    for path in files:
        mod = module_name(root, path)
        where = path.relative_to(root)
        for line, target in imported_names(root, path):
            if target.split(".")[0] not in FIRST_PARTY:
                continue
            if _within(mod, "joker") and not _within(mod, "joker.bench"):
                if _within(target, "joker.bench") or _within(target, "benchmarks"):
                    bad.append(f"{where}:{line}: the core imports {target}")
            elif _within(mod, "joker.bench"):
                if _within(target, "benchmarks"):
                    bad.append(f"{where}:{line}: the harness imports {target}")
                role, needed = _harness_role(mod), _harness_role(target)
                if needed is not None and needed > role:
                    bad.append(f"{where}:{line}: {mod} (role {role}) imports {target} from a later role")
            elif _within(mod, "reports"):
                if not any(_within(target, ok) for ok in REPORTS_ALLOWED):
                    bad.append(f"{where}:{line}: the report imports {target}")
    return bad


def project_modules(root: Path) -> dict:
    """``{dotted name: path}`` of every module of the project's packages (:data:`FIRST_PARTY`) under ``root``."""
    return {module_name(root, p): p for top in FIRST_PARTY if (root / top).is_dir()
            for p in sorted((root / top).rglob("*.py")) if "__pycache__" not in p.parts}


def import_graph(root: Path) -> dict:
    """``{module: {module it imports}}`` among the project's modules, lazy imports included.

    An import target is the longest prefix of it that is a project module
    (``from a.b import c`` is the module ``a.b.c`` when there is one, else
    ``a.b``); third-party targets and a module's imports of itself are left out.
    """
    mods = project_modules(root)

    def resolve(target: str):
        while target and target not in mods:
            target = target.rpartition(".")[0]
        return target or None

    graph = {m: set() for m in mods}
    for mod, path in mods.items():
        for _, target in imported_names(root, path):
            dep = resolve(target)
            if dep is not None and dep != mod:
                graph[mod].add(dep)
    return graph


def import_cycles(graph: dict) -> list:
    """The import circles of ``graph``: each strongly connected set of two or more modules, sorted.

    Tarjan's algorithm (Tarjan 1972, "Depth-first search and linear graph
    algorithms", SIAM J. Comput. 1(2)), iterative so that a deep graph needs
    no recursion.
    """
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        cycles.append(sorted(comp))
    return sorted(cycles)


def module_counts(package: Path) -> dict:
    """``{folder: number of .py modules directly in it}`` for ``package`` and every folder below."""
    return {d.relative_to(package.parent).as_posix(): len(list(d.glob("*.py")))
            for d in [package, *package.rglob("*")] if d.is_dir() and "__pycache__" not in d.parts}


def test_repository_follows_the_dependency_rule():
    assert violations(REPO) == []


def test_repository_has_no_import_circle():
    graph = import_graph(REPO)
    assert len(graph) >= 100 and all(any(m.startswith(top) for m in graph) for top in FIRST_PARTY)
    assert import_cycles(graph) == []


def test_checker_reads_every_area():
    # the rule would hold trivially if the checker scanned nothing
    for top, at_least in (("joker/bench", 25), ("benchmarks", 7), ("reports", 10)):
        assert len(list((REPO / top).rglob("*.py"))) >= at_least, top
    targets = {t for _, t in imported_names(REPO, REPO / "reports" / "vocab.py")}
    assert "joker.bench.records.record.STATUSES" in targets


def test_no_harness_folder_holds_more_than_12_modules():
    counts = module_counts(REPO / "joker" / "bench")
    assert set(counts) == {"bench", *(f"bench/{r}" for r in HARNESS_LAYERS)}
    assert max(counts.values()) <= MAX_MODULES, counts


def _tree(root: Path, files: dict) -> Path:
    """Write a synthetic project (``{relative path: source}``) with every package's ``__init__.py``."""
    for rel, src in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src)
        for d in path.parents:
            if d == root:
                break
            (d / "__init__.py").touch()
    return root


CLEAN = {
    "joker/solver.py": "import numpy\nfrom .kernels import rbf\n",
    "joker/kernels.py": "",
    "joker/bench/config/paths.py": "",
    "joker/bench/records/record.py": "from ..config.paths import x\nfrom baselines.base import MIB\n",
    "joker/bench/sweep/app.py": "from ..records import record\nfrom joker.bench.trials.trial import y\n",
    "joker/bench/trials/trial.py": "from .. import atomic\nfrom joker import solver\n",
    "joker/bench/atomic.py": "",
    "benchmarks/solver_bench.py": "from joker.bench.config.paths import repo_root\nfrom . import svc\n",
    "benchmarks/svc.py": "from joker.bench.trials.trial import warmup_rows\n",
    "reports/load.py": "import mlflow\nfrom joker.bench.records.record import STATUSES\nfrom . import vocab\n",
    "reports/vocab.py": "from baselines.registry import ADAPTERS\nimport pandas as pd\n",
}


def test_clean_synthetic_tree_passes(tmp_path):
    assert violations(_tree(tmp_path, CLEAN)) == []


@pytest.mark.parametrize("path, source, why", [
    ("joker/solver.py", "from joker.bench.sweep import app\n", "the core imports joker.bench.sweep.app"),
    ("joker/solver.py", "def f():\n    import benchmarks.solver_bench\n", "the core imports benchmarks.solver_bench"),
    ("joker/data/loader.py", "from ..bench.records.record import MIB\n", "the core imports joker.bench.records.record.MIB"),
    ("joker/kernels.py", "from joker import bench\n", "the core imports joker.bench"),
    ("joker/bench/trials/trial.py", "from benchmarks.svc import warmup_rows\n", "the harness imports benchmarks.svc.warmup_rows"),
    ("joker/bench/records/record.py", "from ..trials.trial import y\n", "(role 1) imports joker.bench.trials.trial.y from a later role"),
    ("joker/bench/atomic.py", "from .config.paths import x\n", "(role -1) imports joker.bench.config.paths.x from a later role"),
    ("reports/load.py", "from joker.bench.sweep.app import run_job\n", "the report imports joker.bench.sweep.app.run_job"),
    ("reports/vocab.py", "from joker.bench.records.tracking import Store\n", "the report imports joker.bench.records.tracking.Store"),
    ("reports/vocab.py", "import benchmarks\n", "the report imports benchmarks"),
    ("reports/vocab.py", "from joker.kernels import rbf\n", "the report imports joker.kernels.rbf"),
])
def test_each_forbidden_import_is_found(tmp_path, path, source, why):
    files = dict(CLEAN)
    files[path] = files.get(path, "") + source
    bad = violations(_tree(tmp_path, files))
    assert len(bad) == 1 and why in bad[0] and bad[0].startswith(path + ":"), bad


def test_relative_import_above_the_top_package_is_an_error(tmp_path):
    _tree(tmp_path, {"reports/load.py": "from .. import x\n"})
    with pytest.raises(ValueError, match="relative import above the top-level package"):
        violations(tmp_path)


def test_folder_count_sees_a_13th_module(tmp_path):
    pkg = _tree(tmp_path, {f"bench/sweep/m{i}.py": "" for i in range(12)}) / "bench"
    assert module_counts(pkg) == {"bench": 1, "bench/sweep": 13}  # 12 modules + __init__


def test_clean_synthetic_tree_has_no_circle(tmp_path):
    graph = import_graph(_tree(tmp_path, CLEAN))
    assert graph["joker.bench.sweep.app"] == {"joker.bench.records.record", "joker.bench.trials.trial"}
    assert import_cycles(graph) == []


@pytest.mark.parametrize("added, cycle", [
    # a lazy import inside a function closes the circle app -> trial -> app
    ({"joker/bench/trials/trial.py": "def f():\n    from ..sweep.app import run_job\n"},
     ["joker.bench.sweep.app", "joker.bench.trials.trial"]),
    # three modules in two packages: solver -> kernels -> helpers -> solver
    ({"joker/kernels.py": "from baselines import helpers\n", "baselines/helpers.py": "import joker.solver\n"},
     ["baselines.helpers", "joker.kernels", "joker.solver"]),
    # a package's __init__ and its own module
    ({"reports/__init__.py": "from .load import x\n", "reports/load.py": "import reports\n"},
     ["reports", "reports.load"]),
])
def test_an_added_circle_is_found(tmp_path, added, cycle):
    files = dict(CLEAN)
    for path, source in added.items():
        files[path] = files.get(path, "") + source
    assert import_cycles(import_graph(_tree(tmp_path, files))) == [cycle]


def test_two_separate_circles_are_both_found():
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"e"}, "e": {"f"}, "f": {"d", "a"}}
    assert import_cycles(graph) == [["a", "b"], ["d", "e", "f"]]
