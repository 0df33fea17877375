"""The packages import from this repository, and the library stays light to import."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bandits.core.version import VERSION_LINE

REPO = Path(__file__).resolve().parents[1]


def _run(code: str, cwd: Path) -> str:
    """Run ``code`` in a fresh interpreter (so this process's imports do not matter)."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_packages_resolve_to_this_repository(tmp_path):
    # From an unrelated directory, so the installed packages, not the cwd, must point here.
    # find_spec locates a package without running it (importing agents would load torch).
    code = (
        "import importlib.util, json; "
        "print(json.dumps({p: importlib.util.find_spec(p).origin "
        "for p in ['bandits', 'agents', 'envs']}))"
    )
    found = json.loads(_run(code, tmp_path))
    for package, origin in found.items():
        assert Path(origin).resolve() == REPO / package / "__init__.py", package
    # And once imported, __file__ says the same.
    out = _run("import json, bandits; print(json.dumps(bandits.__file__))", tmp_path)
    assert Path(json.loads(out)).resolve() == REPO / "bandits" / "__init__.py"


def test_importing_bandits_does_not_import_the_runner(tmp_path):
    heavy = [
        "bandits.run",
        "bandits.mnist",
        "bandits.plot",
        "bandits.core.outputs",
        "agents",
        "envs",
        "matplotlib",
    ]
    code = (
        f"import json, sys, bandits; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    )
    assert json.loads(_run(code, tmp_path)) == []


def _console_scripts() -> dict[str, str]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


def test_every_command_is_a_console_script_that_loads_no_torch_before_it_starts(tmp_path):
    # bandits-run is python -m bandits.run: the entry module's cli, which sets the signals
    # and the kernels (bandits.core.startup.start) before the command's module loads torch
    scripts = _console_scripts()
    modules = [v.split(":")[0] for v in scripts.values()]
    commands = [m.removesuffix(".__main__") for m in modules]
    assert all((REPO / (c.replace(".", "/") + ".py")).is_file() for c in COMMANDS)
    assert all(k == "bandits-" + c.split(".")[-1].replace("_", "-") and v.endswith(":cli")
               for (k, v), c in zip(scripts.items(), commands))
    code = (f"import importlib, json, sys\nfrom bandits.core.startup import Command\n"
            f"ms = [importlib.import_module(m) for m in {modules!r}]\n"
            f"print(json.dumps([isinstance(m.cli.__self__, Command) for m in ms] + "
            f"['torch' in sys.modules]))")
    assert json.loads(_run(code, tmp_path)) == [True] * len(modules) + [False]


# The layers (docs/layout.md): the folders of the project, each importing only the
# layers before it, never a folder of its own layer. The commands (bandits.run and the
# other thin modules beside the folders) and the package's __init__ are the last.
LAYERS = [
    ["bandits.bayes"],
    ["bandits.core"],
    ["agents", "envs", "bandits.mnist"],
    ["bandits.records"],
    ["bandits.simulator"],
    ["bandits.analysis"],
    ["bandits.experiments"],
    ["bandits.tools", "bandits.studies"],
]
COMMANDS = [v.split(":")[0] for v in _console_scripts().values()
            if v.split(":")[0] != "bandits.mnist.__main__"]
"""The commands but MNIST's (a package of its own): each entry module of [project.scripts],
so a new command is its entry module, its module and one line there."""


@pytest.mark.parametrize("command", [*COMMANDS, "bandits.mnist"])
def test_version_is_answered_without_importing_torch(command, tmp_path):
    # python -m bandits.run --version: the entry module answers before the command loads
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", command, "--version"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == VERSION_LINE + "\n", done.stderr
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()}
    assert "bandits.core.startup" in imported
    assert not {m for m in imported if m.split(".")[0] == "torch"}


def _folder_of(module: str) -> str:
    """The folder (a package of LAYERS) a module belongs to, or the module itself."""
    return next((f for layer in LAYERS for f in layer
                 if module == f or module.startswith(f + ".")), module)


def _layer_of(module: str) -> int:
    folder = _folder_of(module)
    return next((i for i, layer in enumerate(LAYERS) if folder in layer), len(LAYERS))


def test_every_module_of_the_project_is_in_a_layer_or_is_a_command():
    loose = {m for m in _import_graph() if _layer_of(m) == len(LAYERS)}
    assert loose == {"bandits", *COMMANDS}


def test_each_layer_imports_only_the_layers_before_it():
    wrong = sorted((m, t) for m, targets in _import_graph().items() for t in targets
                   if _folder_of(t) != _folder_of(m) and _layer_of(t) >= _layer_of(m)
                   and not (m == "bandits" and t == "bandits.simulator.api"))  # LAZY
    assert wrong == []


def test_the_layer_check_finds_an_import_upwards():
    assert _layer_of("bandits.core.buffer") < _layer_of("agents.bbb") < \
        _layer_of("bandits.simulator.loop") < _layer_of("bandits.run")
    assert _folder_of("envs.mushroom") != _folder_of("agents.bbb")
    assert _layer_of("envs.mushroom") == _layer_of("agents.bbb")  # one layer: refused too


# bandits/mnist's own layers (docs/layout.md): its subpackages, each importing only those
# before it; the command line (cli, __main__) and the package's __init__ come last.
MNIST_LAYERS = ["models", "data", "evaluation", "reports", "training"]


def _mnist_layer(module: str) -> int:
    parts = module.split(".")
    sub = parts[2] if len(parts) > 2 else ""
    return MNIST_LAYERS.index(sub) if sub in MNIST_LAYERS else len(MNIST_LAYERS)


def test_the_mnist_benchmark_is_its_layers_each_importing_only_those_before_it():
    graph = {m: t for m, t in _import_graph().items() if m.startswith("bandits.mnist")}
    loose = {m for m in graph if _mnist_layer(m) == len(MNIST_LAYERS)}
    assert loose == {"bandits.mnist", "bandits.mnist.cli", "bandits.mnist.__main__"}
    wrong = sorted((m, t) for m, targets in graph.items() for t in targets
                   if t.startswith("bandits.mnist.") and _mnist_layer(t) != _mnist_layer(m)
                   and _mnist_layer(t) > _mnist_layer(m))
    assert wrong == []
    assert _mnist_layer("bandits.mnist.models.config") < _mnist_layer("bandits.mnist.data.splits")


@pytest.mark.slow
def test_importing_a_layer_loads_no_later_layer(tmp_path):
    graph = _import_graph()
    for i, layer in enumerate(LAYERS[:-1]):
        modules = sorted(m for m in graph if _layer_of(m) == i)
        later = sorted({_folder_of(m) for m in graph if _layer_of(m) > i} - {"bandits"})
        code = (f"import importlib, json, sys, bandits; root = set(sys.modules); "  # and the
                f"[importlib.import_module(m) for m in {modules!r}]; "  # root's own imports
                f"print(json.dumps([m for m in sys.modules if m not in root and (m in "
                f"{later!r} or any(m.startswith(f + '.') for f in {later!r}))]))")
        assert json.loads(_run(code, tmp_path)) == [], layer


# Imports inside a function, each with its reason; any other is refused (a function-level
# import hides a dependency, and most often dodges a cycle that the floors should remove).
LAZY = {
    ("envs/__init__.py", "envs.classification"): "import envs loads no data module",
    ("bandits/__init__.py", "bandits.simulator.api"): "import bandits loads no torch: "
                                                      "bandits.simulate loads the simulator "
                                                      "when called",
}


def test_no_module_imports_the_project_inside_a_function():
    found = set()
    for path in sorted(p for top in ("bandits", "agents", "envs")
                       for p in (REPO / top).rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(node):
                names = ([sub.module or ""] if isinstance(sub, ast.ImportFrom)
                         else [a.name for a in sub.names] if isinstance(sub, ast.Import) else [])
                for name in names:
                    if name.split(".")[0] in ("bandits", "agents", "envs"):
                        found.add((path.relative_to(REPO).as_posix(), name))
    assert found - set(LAZY) == set()


# Packages whose modules count as one node of the folder graph (the other modules of
# bandits/ are each their own node).
FOLDERS = tuple(f for layer in LAYERS for f in layer)


def _import_graph() -> dict[str, set[str]]:
    """Every import between the project's modules, wherever it stands in the module
    (under ``if TYPE_CHECKING:`` or in a function too): module -> modules it imports."""
    mods = {}
    for top in ("bandits", "agents", "envs"):
        for path in (REPO / top).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    found |= {full} if full in mods else {base} if base in mods else set()
        graph[name] = found - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_between_modules_or_folders():
    graph = _import_graph()
    assert _cycles(graph) == []  # type-only imports count too

    def folder(m: str) -> str:
        return next((f for f in FOLDERS if m == f or m.startswith(f + ".")), m)

    folders: dict[str, set[str]] = {}
    for m, targets in graph.items():
        folders.setdefault(folder(m), set()).update(
            folder(t) for t in targets if folder(t) != folder(m))
    assert _cycles(folders) == []


def test_the_circle_check_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_of_the_project_is_over_400_lines():
    long = {p.relative_to(REPO).as_posix(): n
            for top in ("bandits", "agents", "envs") for p in (REPO / top).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def _layers(graph: dict[str, set[str]]) -> int:
    """The longest chain of imports (nodes on it) in an acyclic graph."""
    depth: dict[str, int] = {}

    def of(v: str) -> int:
        if v not in depth:
            depth[v] = 1 + max((of(w) for w in graph.get(v, ())), default=0)
        return depth[v]

    return max(map(of, graph))


def test_the_import_layers_stay_at_most_ten():
    # each package of FOLDERS one node, every other module its own (the folder graph)
    def folder(m: str) -> str:
        return next((f for f in FOLDERS if m == f or m.startswith(f + ".")), m)

    folders: dict[str, set[str]] = {}
    for m, targets in _import_graph().items():
        folders.setdefault(folder(m), set()).update(
            folder(t) for t in targets if folder(t) != folder(m))
    assert _layers({"a": {"b"}, "b": {"c"}, "d": {"c"}}) == 3
    assert _layers(folders) <= 10


def test_the_command_line_reaches_the_loop_through_at_most_six_files(tmp_path):
    # The files whose functions hold argv (the list) or the Config parsed from it, as an
    # argument or a local, from the command's main until the loop's simulate is called:
    # the walk docs/layout.md describes.
    import os

    from bandits.simulator import loop
    from bandits.simulator import run as command
    from bandits.simulator.settings import Config

    argv = ["--env", "wheel", "--agent", "bbb", "--mean-decay", "1", "--hidden", "4",
            "--steps", "2", "--seeds", "1", "--workers", "1", "--no-progress",
            "--out", str(tmp_path / "run")]
    files: list[str] = ["bandits/run.py"]  # the entry module: python -m bandits.run
    done = []

    def look(frame, event, arg):
        if event != "call" or done or not frame.f_code.co_filename.startswith(str(REPO)):
            return
        if frame.f_code is loop._simulate.__code__:
            done.append(True)
        if any(isinstance(v, Config) or isinstance(v, list) and v == argv
               for v in frame.f_locals.values()):
            files.append(os.path.relpath(frame.f_code.co_filename, REPO))

    sys.setprofile(look)
    try:
        assert command.main(argv) == 0
    finally:
        sys.setprofile(None)
    walked = list(dict.fromkeys(files))
    assert done and walked[-1] == "bandits/simulator/loop.py", walked
    assert len(walked) <= 6, walked


def test_every_package_of_the_tree_is_one_the_wheel_ships():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts)
             for top in ("bandits", "agents", "envs") for p in (REPO / top).rglob("__init__.py")}
    assert found == listed
