"""The import graph of ``fedtheory`` and ``fedtrain``: no cycles, and every import goes down the layers.

The graph is read from the source with :mod:`ast`: every ``import`` and ``from ... import`` of a project module,
at module level and inside functions alike (an import inside a function is still a dependency; placing it
there only hides a cycle until the function runs).  Imports under ``if TYPE_CHECKING:`` are left out: they
never run.  ``from package import name`` is an edge to ``package.name`` when that is a module, else to
``package`` (its ``__init__``).

Layers, each importing only its own layer and those below (a module's layer is that of its longest name prefix
in :data:`LAYER_OF`; a package's entry covers its submodules):

0. ``paper``: the papers' settings as plain values (:mod:`fedtrain.paper`), importing nothing of the project;
1. ``utilities``: argument checks (:mod:`fedtheory.validation`), the atomic writer (:mod:`fedtheory.atomic_io`),
   Markdown tables (:mod:`fedtheory.figures.tables`), JSON encoding, parameter specs, losses, the DP-SGD step;
2. ``privacy``: the accounting theory (:mod:`fedtheory.privacy`: events, accountants, the one calibration, tuning,
   secure aggregation);
3. ``theory``: the rest of ``fedtheory`` (mean estimation, linear regression, point estimation, derived-vs-printed
   checks, the λ advisor);
4. ``theory-figures``: ``fedtheory``'s figures and widgets;
5. ``ledger``: training's privacy ledger (:mod:`fedtrain.ledger`) and the client-level accounting
   (:mod:`fedtrain.clientdp.accounting`);
6. ``data``: the datasets (:mod:`fedtrain.data`);
7. ``methods``: the method registry, options and implementations (:mod:`fedtrain.methods`);
8. ``models``: the models (:mod:`fedtrain.models`);
9. ``config``: a run's configuration (:mod:`fedtrain.config`, and :mod:`fedtrain.clientdp.config` for a method
   whose privacy unit is a client);
10. ``engine``: the training engine and the client-level trainer (:mod:`fedtrain.clientdp.trainer`), the Opacus
    reference, test fixtures, the audits, the practitioner pipeline;
11. ``store``: the results stores (:mod:`fedtrain.store`) and their front (:mod:`fedtrain.results`);
12. ``sweeps``: grids and their executors, the book's grids (:mod:`fedtrain.presets`), the committed results'
    orchestration (:mod:`fedtrain.book_results`), the regime, results analysis;
13. ``experiments``: figures and their checks (the figure catalogue reads the λ advisor's check,
    :mod:`fedtrain.advise`), the PETs example, FedHDP's experiments (:mod:`fedtrain.fedhdp`), the federated
    deployment (:mod:`fedtrain.federate`);
14. ``cli``: the ``fedtrain`` command and its subcommands.

An import from a lower layer into a higher one (a *back arrow*) fails :func:`test_imports_go_down_the_layers`,
except the known ones of :data:`KNOWN_BACK_ARROWS` (none today), each to be removed when its cause is.

``fedtheory`` stands alone: it imports nothing from ``fedtrain``.

An import of a project module inside a function is kept only where it defers an optional heavy third-party
package (:data:`DEFERRED_PACKAGES`) that the importing module does not load already; every other project import
sits at the top of its module.
"""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("fedtheory", "fedtrain")
LAYERS = ("paper", "utilities", "privacy", "theory", "theory-figures", "ledger", "data", "methods", "models", "config",
          "engine", "store", "sweeps", "experiments", "cli")

#: The layer of each module, by the longest matching name prefix (a package's entry covers its submodules).
LAYER_OF = {
    "fedtrain.paper": "paper",
    "fedtheory": "theory",
    "fedtheory.validation": "utilities",
    "fedtheory.atomic_io": "utilities",
    "fedtheory.figures.tables": "utilities",
    "fedtheory.privacy": "privacy",
    "fedtheory.figures": "theory-figures",
    "fedtheory.widgets": "theory-figures",
    "fedtheory.widgets_live": "theory-figures",
    "fedtrain": "utilities",  # the package's __init__ (imports nothing); every module below has its own entry
    "fedtrain.encoding": "utilities",
    "fedtrain.params": "utilities",
    "fedtrain.losses": "utilities",
    "fedtrain.dpsgd_step": "utilities",
    "fedtrain.ledger": "ledger",
    "fedtrain.data": "data",
    "fedtrain.methods": "methods",
    "fedtrain.models": "models",
    "fedtrain.config": "config",
    "fedtrain.engine": "engine",
    "fedtrain.clientdp": "engine",
    "fedtrain.clientdp.config": "config",
    "fedtrain.clientdp.accounting": "ledger",
    "fedtrain.reference": "engine",
    "fedtrain.testing": "engine",
    "fedtrain.audit": "engine",
    "fedtrain.audit_power": "engine",
    "fedtrain.practice": "engine",
    "fedtrain.store": "store",
    "fedtrain.results": "store",
    "fedtrain.executors": "sweeps",
    "fedtrain.sweep": "sweeps",
    "fedtrain.regime": "sweeps",
    "fedtrain.presets": "sweeps",
    "fedtrain.deep_grids": "sweeps",
    "fedtrain.book_scale": "utilities",
    "fedtrain.client_presets": "sweeps",
    "fedtrain.book_results": "sweeps",
    "fedtrain.analysis": "sweeps",
    "fedtrain.figures": "experiments",
    "fedtrain.grids": "experiments",
    "fedtrain.fig6_checks": "experiments",
    "fedtrain.fig3d_checks": "experiments",
    "fedtrain.pets": "experiments",
    "fedtrain.fedhdp": "experiments",
    "fedtrain.federate": "experiments",
    "fedtrain.cli": "cli",
    "fedtrain.__main__": "cli",
    "fedtrain.advise": "experiments",  # the advisor and its check; its subcommand's parser too (imports no cli)
    "fedtrain.fedhdp.cli": "cli",
    "fedtrain.federate.command": "cli",
}

#: Back arrows allowed until their cause is removed: none.  (The last ones came from FedHDP's package spanning four
#: layers; its config, trainer and accounting now sit in :mod:`fedtrain.clientdp` beside the engine's.)  An entry
#: that no longer occurs fails :func:`test_known_back_arrows_still_occur`, so this list only shrinks.
KNOWN_BACK_ARROWS: frozenset[tuple[str, str]] = frozenset()


#: Third-party packages whose import a function-level import of a project module may defer, so that a caller who
#: does not need them does not pay for them: ``torch`` (the training engine; ``fedtrain.cli``, the configuration and
#: the results store load without it), ``sympy`` (the symbolic derivations), ``scipy`` (``scipy.optimize``'s
#: calibration searches and ``scipy.stats``), ``dp_accounting`` (its PLD accountant), ``matplotlib`` (figures),
#: ``ray`` and ``opacus`` (optional extras), ``ipywidgets`` (the book's widgets).
DEFERRED_PACKAGES = frozenset({"torch", "sympy", "scipy", "dp_accounting", "matplotlib", "ray", "opacus",
                               "ipywidgets"})


def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(module: str, is_pkg: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The project modules ``node`` imports (the nearest enclosing module of each name)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".")[: None if is_pkg else -1]
            base = base[: len(base) - (node.level - 1)]
            pkg = ".".join(base + ([node.module] if node.module else []))
        else:
            pkg = node.module or ""
        names = [f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in MODULES else pkg for a in node.names]
    out = []
    for name in names:
        if name.split(".")[0] not in PACKAGES:
            continue
        while name not in MODULES and "." in name:
            name = name.rsplit(".", 1)[0]
        out.append(name)
    return out


def _imports() -> list[tuple[str, str, int, bool]]:
    """``(importer, imported, line, inside a function)`` for every import of a project module."""
    found = []
    for module, (path, is_pkg) in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _is_type_checking(child.test):
                    for sub in child.orelse:
                        visit(sub, in_function)
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in _targets(module, is_pkg, child):
                        if target != module:
                            found.append((module, target, child.lineno, in_function))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(tree, False)
    return found


IMPORTS = _imports()


def _third_party_at_import() -> dict[str, set[str]]:
    """The third-party top-level packages each module imports when it is imported (module level, any depth of
    ``try``/``if`` but not ``if TYPE_CHECKING:``), following module-level project imports and parent packages."""
    own: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, (path, _) in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node: ast.AST) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    continue
                if isinstance(child, ast.If) and _is_type_checking(child.test):
                    continue
                if isinstance(child, ast.Import):
                    own[module].update(a.name.split(".")[0] for a in child.names)
                elif isinstance(child, ast.ImportFrom) and not child.level and child.module:
                    own[module].add(child.module.split(".")[0])
                visit(child)

        visit(tree)
    edges = _edges([i for i in IMPORTS if not i[3]])
    for m in MODULES:
        parts = m.split(".")
        edges[m].update(".".join(parts[:i]) for i in range(1, len(parts)))
    out = {}
    for m in MODULES:
        seen, todo, pkgs = set(), [m], set()
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                pkgs |= own[x]
                todo.extend(edges[x])
        out[m] = pkgs - set(PACKAGES)
    return out


def layer(module: str) -> str:
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in LAYER_OF:
            return LAYER_OF[prefix]
    raise KeyError(module)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
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
                        out.append(sorted(comp))
    return out


def _edges(imports) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for a, b, _, _ in imports:
        edges[a].add(b)
    return edges


def test_the_graph_is_read():
    """The reader sees the project: both packages, and imports of both kinds (a reader finding nothing would
    pass every check below)."""
    assert {"fedtheory.privacy.accountants", "fedtrain.engine", "fedtrain.cli"} <= set(MODULES)
    assert ("fedtrain.engine", "fedtrain.config") in {(a, b) for a, b, _, _ in IMPORTS}
    assert any(lazy for *_, lazy in IMPORTS) and any(not lazy for *_, lazy in IMPORTS)


def test_no_import_cycles():
    cycles = _cycles(_edges(IMPORTS))
    detail = "; ".join(" <-> ".join(c) for c in cycles)
    assert not cycles, f"import cycles (module-level and function-level imports): {detail}"


def test_cycle_detector_finds_a_planted_cycle():
    edges = _edges(IMPORTS)
    edges["fedtrain.config"].add("fedtrain.cli")  # cli -> ... -> config -> cli
    assert any({"fedtrain.config", "fedtrain.cli"} <= set(c) for c in _cycles(edges))


def test_every_module_has_a_layer():
    missing = []
    for m in MODULES:
        try:
            layer(m)
        except KeyError:
            missing.append(m)
    assert not missing


def _back_arrows(imports) -> list[tuple[str, str, int]]:
    """``(importer, imported, line)`` of every import from a lower layer into a higher one."""
    return [(a, b, n) for a, b, n, _ in imports if LAYERS.index(layer(b)) > LAYERS.index(layer(a))]


def _unexpected_back_arrows(imports) -> list[str]:
    return [f"{a} ({layer(a)}) imports {b} ({layer(b)}) at line {n}" for a, b, n in _back_arrows(imports)
            if (a, b) not in KNOWN_BACK_ARROWS]


def test_imports_go_down_the_layers():
    up = _unexpected_back_arrows(IMPORTS)
    assert not up, "imports going up the layers: " + "; ".join(up)


def test_known_back_arrows_still_occur():
    """An allowed back arrow that is gone must leave :data:`KNOWN_BACK_ARROWS` (the list only shrinks)."""
    gone = KNOWN_BACK_ARROWS - {(a, b) for a, b, _ in _back_arrows(IMPORTS)}
    assert not gone, f"back arrows no longer in the code: remove them from KNOWN_BACK_ARROWS: {sorted(gone)}"


def test_the_layer_check_fails_on_a_planted_back_arrow():
    """Imports planted into the graph the test computes: a lower layer reaching up fails the check, within the
    libraries and between them; a planted import that goes down does not."""
    planted = [("fedtrain.engine", "fedtrain.sweep", 1, False),              # engine -> sweeps
               ("fedtheory.privacy.rdp", "fedtheory.mean_estimation", 1, False),  # privacy -> theory
               ("fedtrain.store.keys", "fedtrain.fedhdp.experiments", 1, True),  # store -> experiments
               ("fedtrain.clientdp.config", "fedtrain.clientdp.trainer", 1, True),  # config -> engine
               ("fedtrain.sweep", "fedtrain.engine", 1, False)]              # down: allowed
    up = _unexpected_back_arrows(IMPORTS + planted)
    base = set(_unexpected_back_arrows(IMPORTS))
    new = [u for u in up if u not in base]
    assert [u.split(" (")[0] for u in new] == ["fedtrain.engine", "fedtheory.privacy.rdp", "fedtrain.store.keys",
                                               "fedtrain.clientdp.config"], new


def test_the_layers_are_finer_than_libraries_and_experiments():
    """No layer holds more than a quarter of the modules (a single ``core`` layer once held 112 of 131)."""
    sizes = {name: sum(layer(m) == name for m in MODULES) for name in LAYERS}
    assert all(sizes[name] > 0 for name in LAYERS), sizes
    assert max(sizes.values()) <= len(MODULES) // 4, sizes


def test_the_paper_layer_imports_nothing():
    for module in (m for m in MODULES if layer(m) == "paper"):
        tree = ast.parse(MODULES[module][0].read_text(encoding="utf-8"))
        imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                   and not (isinstance(n, ast.ImportFrom) and n.module == "__future__")]
        assert not imports, f"{module} imports at lines {[n.lineno for n in imports]}"


def test_the_theory_imports_nothing_of_training():
    bad = [(a, b, n) for a, b, n, _ in IMPORTS if a.startswith("fedtheory") and b.startswith("fedtrain")]
    assert not bad


def test_function_level_imports_only_defer_heavy_packages():
    """A project import inside a function must defer a package of :data:`DEFERRED_PACKAGES` that the importing
    module does not load anyway; any other one belongs at the top of the module."""
    loads = _third_party_at_import()
    needless = [f"{a}:{n} imports {b} inside a function (defers nothing of {sorted(DEFERRED_PACKAGES)})"
                for a, b, n, lazy in IMPORTS if lazy and not ((loads[b] - loads[a]) & DEFERRED_PACKAGES)]
    assert not needless, "; ".join(needless)
    # the reader sees the engine's torch and keeps the CLI light
    assert "torch" in loads["fedtrain.engine"] and "torch" not in loads["fedtrain.cli"]
