"""The documentation cannot drift from the commands: every flag README and the docs name exists in the parser of the
command it is given to, every option of the five commands is explained in a guide page (not only in the generated
reference), and README's quick start is what CI and the tests run."""

import ast
import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# The Commands page is rendered from the parsers (docs/hooks/commands.py): it documents every flag by construction,
# so it does not count as explaining one.
GENERATED = {"commands.md"}
# The history page quotes the commands earlier versions ran, as they ran them (a flag since renamed included).
AS_THEY_RAN = {"docs/history.md"}
# Other tools' commands in the docs (ray, pip, the clouds' CLIs, ...): their flags are theirs to check.
OTHER_COMMAND = re.compile(r"(?:^|(?<=[\s(]))(?:ray|pip|aws|gcloud|curl|tensorboard|mkdocs|pytest)\s")
# Other tools' flags the docs name on their own, outside a command line.
OTHER_FLAGS = {
    "--help",
    "--logdir",
    "--include-dashboard",
    "--index-url",
    "--extra-index-url",
    "--no-deps",
    "--strict",
    "--no-wait",
}
COMMAND = re.compile(r"(?:\.venv/bin/)?python3?\s+(?:-m\s+(?P<module>[\w.]+)|(?P<script>(?:bench|cluster)/\w+\.py))")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
SEGMENT_END = re.compile(r"(?<!\\)\n|\s#|\s\|\s|&&|;")


def load_hook():
    spec = importlib.util.spec_from_file_location("docs_commands_hook", DOCS / "hooks" / "commands.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


HOOK = load_hook()


def parser_flags() -> dict[str, set[str]]:
    """{module or script: its flags}: the five commands from their real parsers, bench/ (its probes/ too) and
    cluster/check.py from their source (they import heavy or optional packages at the top)."""
    flags = {HOOK.COMMANDS[command]: HOOK.flags_of(command) | {"--help"} for command in HOOK.COMMANDS}  # argparse's own
    for path in [*(ROOT / "bench").glob("**/*.py"), ROOT / "cluster" / "check.py"]:
        found = {"--help"}
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                found |= {
                    arg.value for arg in node.args if isinstance(arg, ast.Constant) and str(arg.value)[:2] == "--"
                }
        name = str(path.relative_to(ROOT))
        flags[name] = found
        if name == "cluster/check.py":
            flags["cluster.check"] = found
    return flags


FLAGS = parser_flags()
OURS = set().union(*FLAGS.values())


def pages() -> dict[str, str]:
    found = {"README.md": (ROOT / "README.md").read_text()}
    found |= {str(path.relative_to(ROOT)): path.read_text() for path in sorted(DOCS.glob("*.md"))}
    return found


def code_of(text: str) -> list[str]:
    """The fenced blocks and inline code spans of a page."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S)
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
    return blocks + re.findall(r"`([^`\n]+)`", prose)


def misnamed_flags(code: str) -> list[str]:
    """Each flag given to one of our commands that its parser lacks, and each flag outside a command that is no
    command's, ours or another tool's."""
    wrong = []
    commands = list(COMMAND.finditer(code))
    covered = []
    for match in OTHER_COMMAND.finditer(code):
        end = SEGMENT_END.search(code, match.end())
        covered.append((match.start(), end.start() if end else len(code)))
    for match in commands:
        end = SEGMENT_END.search(code, match.end())
        segment = code[match.end() : end.start() if end else len(code)]
        covered.append((match.start(), end.start() if end else len(code)))
        known = FLAGS.get(match["module"] or match["script"])
        if known is None:  # python -m pip, pytest, ...
            continue
        own, _, passed_on = segment.partition(" -- ")  # bench/panel.py ... -- --set: sweeps.run's options
        wrong += [f"{match.group(0)} {flag}" for flag in FLAG.findall(own) if flag not in known]
        wrong += [f"sweeps.run {flag}" for flag in FLAG.findall(passed_on) if flag not in FLAGS["sweeps.run"]]
    outside = "".join(char for at, char in enumerate(code) if not any(start <= at < end for start, end in covered))
    wrong += [flag for flag in FLAG.findall(outside) if flag not in OURS | OTHER_FLAGS]
    return wrong


def test_a_flag_given_to_the_wrong_command_or_misspelt_is_caught():
    assert misnamed_flags("python -m sweeps.run air_rnn --num-sample 4") == ["python -m sweeps.run --num-sample"]
    assert misnamed_flags("python -m sweeps.forecast results/x --data a.csv --seed 1") == [
        "python -m sweeps.forecast --seed"
    ]
    assert misnamed_flags("python bench/panel.py --panels m3_monthly -- --set shape=direct --sed 2") == [
        "sweeps.run --sed"
    ]
    assert misnamed_flags("--horizon") == [] and misnamed_flags("--horizn") == ["--horizn"]
    assert misnamed_flags("ray start --head --num-gpus 1") == []


@pytest.mark.parametrize("page", sorted(set(pages()) - AS_THEY_RAN))
def test_every_flag_a_page_names_exists_in_its_commands_parser(page):
    wrong = [flag for code in code_of(pages()[page]) for flag in misnamed_flags(code)]
    assert not wrong, f"{page} names flags no parser has: {sorted(set(wrong))}"


@pytest.mark.parametrize("command", sorted(HOOK.COMMANDS))
def test_every_option_of_the_commands_is_explained_in_a_guide(command):
    guides = " ".join(text for name, text in pages().items() if pathlib.Path(name).name not in GENERATED)
    named = set(FLAG.findall(guides))
    actions = HOOK.parser_of(command)._actions
    missing = [
        "/".join(action.option_strings)
        for action in actions
        if action.option_strings
        and action.option_strings != ["-h", "--help"]
        and not named & set(action.option_strings)
    ]
    assert not missing, f"{command}: no guide page or README explains {missing}"


def test_the_commands_page_renders_every_option_from_its_parser():
    page = (DOCS / "commands.md").read_text()
    for command in HOOK.COMMANDS:
        assert f"<!-- options: {command} -->" in page
        table = HOOK.options_table(command)
        assert all(re.search(rf"(?<![\w-]){flag}(?![\w-])", table) for flag in HOOK.flags_of(command))


def quick_start() -> list[str]:
    """The commands of README's quick start, comments left out."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```bash\n(.*?)^```", section, flags=re.M | re.S)
    return [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_readmes_quick_start_is_what_ci_and_the_tests_run():
    assert quick_start() == ["make run", "make test"]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "make test" in ci and "make docs" in ci
    makefile = (ROOT / "Makefile").read_text()
    assert "SWEEP ?= air_rnn" in makefile
    assert re.search(r"^run: setup\n\t\$\(BIN\)/python -m sweeps.run \$\(SWEEP\)$", makefile, flags=re.M)
    # The end-to-end test of that command: the air_rnn sweep through `python -m sweeps.run`, in the slow tier.
    sharing = (ROOT / "tests" / "test_sharing.py").read_text()
    assert '"-m", "sweeps.run"' in sharing and '"air_rnn"' in sharing
