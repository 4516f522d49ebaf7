"""The code's shape, as a newcomer relies on it: no import cycle between the project's modules (imports inside
functions count too, those only for the type checker do not), sweeps/ in layers along the path a sweep takes,
forecaster/ usable without sweeps/ or Ray, and in sweeps/ Ray's private APIs read in one module only.
(cluster/check.py validates cluster files with Ray's own private checker.)"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("forecaster", "sweeps", "cluster")
RAY_PRIVATE = ("ray._private", "ray.autoscaler", "ray.experimental")
SWEEP_LAYERS = ("sweeps.plan", "sweeps.trials", "sweeps.answer", "sweeps.output")
"""sweeps/'s packages from the bottom up, the path a sweep takes: the plan, the trials on Ray, the answer made from
them, what the user gets; the commands (sweeps/*.py) stand on all of them."""


def imports_of_every_module() -> dict[str, set[str]]:
    """{module: every module it imports, anywhere in its code}."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            names = set()
            for node in ast.walk(without_type_checking(ast.parse(path.read_text()))):
                if isinstance(node, ast.Import):
                    names |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
            found[module] = names
    return found


def without_type_checking(tree: ast.Module) -> ast.Module:
    """`tree` less its `if TYPE_CHECKING:` blocks: imports for the type checker only, which never run."""
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                kept = [
                    child
                    for child in block
                    if not (
                        isinstance(child, ast.If)
                        and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                    )
                ]
                setattr(node, field, kept)
    return tree


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def project_graph() -> dict[str, set[str]]:
    imports = imports_of_every_module()
    return {module: {name for name in names if name in imports and name != module} for module, names in imports.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    visiting, done = [], set()

    def visit(module):
        if module in visiting:
            return [*visiting[visiting.index(module) :], module]
        if module in done:
            return None
        visiting.append(module)
        for imported in sorted(graph[module]):
            cycle = visit(imported)
            if cycle:
                return cycle
        visiting.pop()
        done.add(module)
        return None

    for module in sorted(graph):
        cycle = visit(module)
        if cycle:
            return cycle
    return None


def test_no_module_imports_itself_through_others():
    graph = project_graph()
    assert {"sweeps.run", "sweeps.plan.storage", "forecaster.training.train"} <= set(graph)  # the walk found the code
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_forecaster_needs_neither_sweeps_nor_ray():
    for module, names in imports_of_every_module().items():
        if module.startswith("forecaster"):
            assert not {name for name in names if name.split(".")[0] in ("sweeps", "cluster", "ray")}, module


def test_in_sweeps_only_the_cluster_probe_reads_rays_private_apis():
    readers = {
        module
        for module, names in imports_of_every_module().items()
        if module.startswith("sweeps") and any(name.startswith(RAY_PRIVATE) for name in names)
    }
    assert readers == {"sweeps.trials.cluster_probe"}


FORECASTER_LAYERS = (
    # the data and what every layer uses: panels, series files, seasons, metrics, the commands' options and plots
    ("data", "data.datasets", "data.seasons", "data.covariates", "data.panel", "data.read", "metrics", "cli", "plot"),
    ("features", "features.step_inputs", "features.seasonal_adjustment", "features.smoothing"),  # beside the value
    ("shapes", "config", "training"),  # the shapes' registry (names, no import), the hyperparameters
    ("features.transforms",),  # what the net sees, and the way back
    ("shapes.recurrence", "shapes.base", "shapes.recurrent", "shapes.direct", "shapes.hybrid"),  # each shape of model
    ("training.net", "training.model", "training.parts"),  # the net, its LightningModule, the parts of the data
    ("training.train",),
    ("baselines", "baselines.base", "baselines.naive", "baselines.statistical", "answer", "answer.ensemble"),
    ("answer.intervals", "answer.model"),  # the saved answer and its intervals
    ("fit", ""),  # the command, and the package's exports
)
"""forecaster/'s modules from the bottom up (`forecaster.` left out): a module imports only from its own layer or
below (its type checker's imports aside, which never run)."""


def forecaster_layer(module: str) -> int:
    name = module.removeprefix("forecaster").removeprefix(".")
    return next(index for index, names in enumerate(FORECASTER_LAYERS) if name in names)


def test_forecasters_modules_import_only_from_their_own_layer_or_below():
    graph = project_graph()
    modules = {module for module in graph if module.split(".")[0] == "forecaster"}
    assert {forecaster_layer(module) for module in modules} == set(range(len(FORECASTER_LAYERS)))  # every one placed
    upward = [
        f"{module} -> {imported}"
        for module in sorted(modules)
        for imported in sorted(graph[module])
        if imported.startswith("forecaster.") and forecaster_layer(imported) > forecaster_layer(module)
    ]  # `from forecaster.shapes import recurrence` names the package too: its exports load lazily, nothing at import
    assert upward == []


def layer(module: str) -> int:
    """Where `module` stands in SWEEP_LAYERS (the commands above them all)."""
    return next(
        (index for index, package in enumerate(SWEEP_LAYERS) if module == package or module.startswith(package + ".")),
        len(SWEEP_LAYERS),
    )


def test_sweeps_packages_import_only_from_their_own_layer_or_below():
    graph = project_graph()
    assert {package for package in SWEEP_LAYERS} <= set(graph)
    upward = [
        f"{module} -> {imported}"
        for module, names in graph.items()
        if module.startswith("sweeps")
        for imported in sorted(names)
        if imported.startswith("sweeps") and layer(imported) > layer(module)
    ]
    assert upward == []
    assert layer("sweeps.answer.tasks") > layer("sweeps.trials.results") > layer("sweeps.plan.storage")


def options_read(package: str) -> list[str]:
    """Where the modules of `package` read a sweep's options (`plan.options`): each place's module and line."""
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / package.replace(".", "/")).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "options" and isinstance(node.value, ast.Name)
    ]


def test_below_the_driver_no_layer_reads_the_command_lines_options():
    """The trials, the answer and the output are told what they need (SweepPlan.tune_settings, answer_settings);
    only the plan and the commands read the options."""
    for package in SWEEP_LAYERS[1:]:
        assert options_read(package) == [], package
    assert options_read("sweeps.plan")  # the check sees a read where there is one
