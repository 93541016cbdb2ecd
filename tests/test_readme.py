"""The README is true and short: its code runs, its commands exist, its figures name the results files they come from.

Every ```python and ```bash block of README.md runs against a small built model (``tests/readme_blocks.py``), so a
block added later is covered without touching this file; a block marked ``# not run in CI: ...`` on its first line has
its commands, options and Python names checked instead; the client recipes (``# needs: MODULE``) run in
``tests/test_clients.py``, in the clients' venv.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import shlex
from dataclasses import fields
from pathlib import Path

import pytest
import typer

from .readme_blocks import (
    README,
    REPO_ROOT,
    client_recipes,
    code_blocks,
    make_workspace,
    shell_commands,
    st_static_arguments,
)

README_TEXT = README.read_text(encoding="utf-8")
BLOCKS = code_blocks()
RUN_PYTHON = [block for block in BLOCKS if block.language == "python" and not block.not_run and not block.needs]
RUN_BASH = [block for block in BLOCKS if block.language == "bash" and not block.not_run]
NOT_RUN = [block for block in BLOCKS if block.not_run]
CHOOSER_TABLES = (
    "swe-minilm-potion-wordllama-768d",
    "swe-all-MiniLM-L6-v2-256d",
    "swe-nomic-minilm-256d",
    "swe-multilingual-e5-small-en-de-ja-zh-extra",
    "swe-multilingual-e5-small-13",
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("readme"))


# ------------------------------------------------------------------------------------------------ shape
def test_readme_is_short_and_opens_with_the_chooser():
    lines = README_TEXT.splitlines()
    assert len(lines) <= 300
    first_screen = "\n".join(lines[:80])
    assert "## The two commands" in first_screen and "## Which table?" in first_screen
    chooser = [line for line in lines[:80] if line.startswith("| `swe-")]
    assert [next(name for name in CHOOSER_TABLES if f"`{name}`" in row) for row in chooser] == list(CHOOSER_TABLES)
    for name in ("Words the table lacks", "Embed and mine collections", "Storage"):  # the lead's sections
        assert f"<!-- section: {name}" in README_TEXT or f"## {name}" in README_TEXT or f"### {name}" in README_TEXT


def test_the_two_commands_are_the_main_build_and_the_ci_test_command():
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    first = BLOCKS[0]
    assert first.language == "bash" and "## The two commands" in README_TEXT[: README_TEXT.index(first.code)]
    commands = shell_commands(first.code)
    assert commands[0] == ["bash", "scripts/setup.sh"] and (REPO_ROOT / "scripts" / "setup.sh").is_file()
    assert st_static_arguments(commands[1])[0] == "build"
    assert ".venv/bin/python -m pytest -q" in first.code and ".venv/bin/python -m pytest -q" in ci


# ------------------------------------------------------------------------------------------------ blocks that run
@pytest.mark.parametrize("block", RUN_PYTHON, ids=lambda block: block.name)
def test_readme_python_block_runs(block, workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    code = compile(block.code, f"README.md:{block.line}", "exec")
    exec(code, {"__name__": "__readme__"})


@pytest.mark.parametrize("block", RUN_BASH, ids=lambda block: block.name)
def test_readme_bash_block_runs(block, workspace, monkeypatch):
    """Each command through the CLI's application (what ``python -m st_static.cli`` runs), in this process: seconds."""
    from typer.testing import CliRunner

    from st_static.cli import app

    monkeypatch.chdir(workspace)
    for words in shell_commands(block.code):
        arguments = st_static_arguments(words)
        assert arguments is not None, f"README.md:{block.line}: a block that runs in CI runs st-static only: {words}"
        result = CliRunner().invoke(app, arguments)
        assert result.exit_code == 0, f"README.md:{block.line}: st-static {' '.join(arguments)}\n{result.output}"


def test_the_blocks_leave_nothing_that_gitignore_does_not_name(workspace):
    """Run after the blocks above (file order): what they wrote in the current folder is ignored by the repository."""
    import subprocess

    written = sorted(
        path.relative_to(workspace).as_posix()
        for path in workspace.rglob("*")
        if path.is_file() and not path.relative_to(workspace).as_posix().startswith("st_static/bundled/")
    )
    assert any(name.startswith("embeddings/") for name in written)  # the blocks ran in this workspace
    ignored = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(written),
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert sorted(set(written) - set(ignored)) == []


def test_shell_blocks_run_st_static_from_the_venv_a_fresh_clone_has():
    """A fresh clone's shell has no ``st-static`` on PATH: blocks call ``.venv/bin/st-static`` (setup.sh makes it)."""
    for block in (block for block in BLOCKS if block.language == "bash"):
        for words in shell_commands(block.code):
            if st_static_arguments(words) is not None and words[0].endswith("st-static"):
                assert words[0] == ".venv/bin/st-static", f"README.md:{block.line}: {' '.join(words)}"


# ------------------------------------------------------------------------------------------------ blocks only checked
def click_group() -> typer.core.TyperGroup:
    from st_static.cli import app

    return typer.main.get_command(app)


def option_names(command) -> set[str]:
    return {name for parameter in command.params for name in (*parameter.opts, *parameter.secondary_opts)}


def unknown_options(arguments: list[str]) -> list[str]:
    """What of ``st-static ARGUMENTS`` names no command or option (placeholders such as ``COMMAND`` aside)."""
    group = click_group()
    words = [word.strip("[]") for word in arguments]
    problems = []
    while words and words[0].startswith("-"):
        if words[0] not in option_names(group) | {"--help"}:
            problems.append(words[0])
        words = words[1:]
    if not words or words[0].isupper():  # `st-static --version`, `st-static COMMAND --help`
        return problems
    command = group.commands.get(words[0])
    if command is None:
        return [*problems, f"command {words[0]!r}"]
    words = words[1:]
    while isinstance(command, typer.core.TyperGroup) and words and not words[0].startswith("-"):
        if words[0].isupper():  # `st-static pairs COMMAND --help`
            return problems
        subcommand = command.commands.get(words[0])  # `st-static pairs fetch ...`: a command of a group
        if subcommand is None:
            return [*problems, f"command {words[0]!r}"]
        command, words = subcommand, words[1:]
    known = option_names(command) | {"--help"}
    for word in words:
        name = word.split("=")[0]
        if re.fullmatch(r"--?[a-zA-Z][\w-]*", name) and name not in known:
            problems.append(name)
    return problems


def python_names_problems(code: str) -> list[str]:
    """Imports that fail, ``st_static.X`` that does not exist, keywords of ``st_static.distill`` it does not take."""
    import st_static
    from st_static.settings import BuildSettings, ExtractionSettings, ReductionSettings, RefinementSettings

    problems = []
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            problems += [f"{node.module}.{alias.name}" for alias in node.names if not hasattr(module, alias.name)]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "st_static":
            if not hasattr(st_static, node.attr):
                problems.append(f"st_static.{node.attr}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "st_static.distill":
            settings = {
                item.name
                for kind in (BuildSettings, ExtractionSettings, ReductionSettings, RefinementSettings)
                for item in fields(kind)
            }
            accepted = set(inspect.signature(st_static.distill).parameters) | settings
            problems += [f"distill({keyword.arg}=...)" for keyword in node.keywords if keyword.arg not in accepted]
    return problems


@pytest.mark.parametrize("block", NOT_RUN, ids=lambda block: block.name)
def test_readme_block_not_run_in_ci_names_what_exists(block):
    if block.language == "python":
        assert python_names_problems(block.code) == []
        return
    checked = 0
    for words in shell_commands(block.code):
        arguments = st_static_arguments(words)
        if arguments is not None:
            assert unknown_options(arguments) == [], f"README.md:{block.line}: {' '.join(words)}"
            checked += 1
        elif words[0] == "bash":
            assert (REPO_ROOT / words[1]).is_file()
    assert checked, f"README.md:{block.line}: a block not run in CI checks at least one st-static command"


def inline_commands(text: str) -> list[list[str]]:
    prose = re.sub(r"^```.*?^```|<!--.*?-->", "", text, flags=re.MULTILINE | re.DOTALL)  # the lead's placeholders
    spans = re.findall(r"`([^`\n]+)`", prose)
    commands = []
    for span in spans:
        words = span.split()
        if "st_static.cli" in words or (words and words[0] == "st-static"):
            start = words.index("st_static.cli") + 1 if "st_static.cli" in words else 1
            commands.append(words[start:])
    return commands


def test_every_st_static_command_the_readme_names_exists_with_its_options():
    commands = inline_commands(README_TEXT)
    assert len(commands) > 10
    problems = {" ".join(arguments): unknown_options(arguments) for arguments in commands}
    assert {command: found for command, found in problems.items() if found} == {}


def test_the_command_table_lists_every_command():
    table = README_TEXT[README_TEXT.index("### Commands") :]
    for name in click_group().commands:
        assert f"| `st-static {name}" in table, name


def test_each_client_recipe_names_its_library_and_follows_the_shared_start():
    recipes = client_recipes()
    assert {block.needs.split(".")[0] for _, block in recipes} == {
        "langchain_huggingface",
        "chromadb",
        "haystack_integrations",
        "llama_index",
        "setfit",
        "bertopic",
    }
    for start, recipe in recipes:
        assert "PATH = " in start.code and "texts = " in start.code and "ids = " in start.code
        compile(start.code + "\n" + recipe.code, f"README.md:{recipe.line}", "exec")  # runs in the clients' venv


# ------------------------------------------------------------------------------------------------ figures
FIGURE = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.,])\d+\.\d+(?![\w.])|\b\d{1,2}:\d{2}\b")
RESULTS_FILE = re.compile(r"(?:benchmarks/results|hub_cards)/[\w.\-]+\.md")


def prose_units(text: str) -> list[str]:
    """Paragraphs outside code blocks, inline code removed; a table joined with the paragraph after it."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    paragraphs = [paragraph for paragraph in re.split(r"\n\s*\n", prose) if paragraph.strip()]
    units: list[str] = []
    after_table = False
    for paragraph in paragraphs:
        if after_table and not paragraph.lstrip().startswith("|"):
            units[-1] += "\n" + paragraph
            after_table = False
        else:
            units.append(paragraph)
            after_table = paragraph.lstrip().startswith("|")
    return units


def test_every_figure_names_the_results_file_it_comes_from():
    unsourced = []
    for unit in prose_units(README_TEXT):
        files = set(RESULTS_FILE.findall(unit))
        sources = " ".join(
            (REPO_ROOT / name).read_text(encoding="utf-8") for name in files if (REPO_ROOT / name).is_file()
        )
        figures = FIGURE.findall(re.sub(r"`[^`\n]*`", "", unit))
        unsourced += [(figure, unit[:60]) for figure in figures if figure not in sources]
    assert unsourced == []


def test_no_speed_figure_says_quiet_and_shared_cpu_runs_say_shared():
    assert "quiet" not in README_TEXT.lower()
    for unit in prose_units(README_TEXT):
        files = RESULTS_FILE.findall(unit)
        texts = [
            (REPO_ROOT / name).read_text(encoding="utf-8").lower() for name in files if (REPO_ROOT / name).is_file()
        ]
        if any("shared" in text for text in texts) and re.search(r"texts/s|sentences/s|wall", unit):
            assert "shared" in unit, unit[:80]


def compare_rows(name: str = "benchmarks/results/2026-11-26-amd-epyc-2c.md") -> dict[str, dict[str, str]]:
    lines = [line for line in (REPO_ROOT / name).read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0].startswith("---"):
            continue
        if cells[0] == "model":
            break
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows


def test_the_claims_about_the_compare_run_hold():
    rows = compare_rows()
    static = {name: row for name, row in rows.items() if not name.startswith("teacher")}
    best_sts = max(static, key=lambda name: float(static[name]["STS-B test"]))
    assert best_sts.startswith("st-static from MiniLM")
    assert "the best STS-B of the static rows" not in README_TEXT  # the flagship's row reads higher (issue 67)
    card = (REPO_ROOT / "hub_cards/swe-all-MiniLM-L6-v2-256d.md").read_text(encoding="utf-8")
    today = float(re.search(r'"stsb-en-test": \{\s*"metric": "spearman_cosine",\s*"score": ([\d.]+)', card).group(1))
    others = [float(row["STS-B test"]) for name, row in static.items() if not name.startswith("st-static from MiniLM")]
    assert today > max(others)  # today's main table still leads the other static rows of that run
    best_clustering = max(static, key=lambda name: float(static[name]["clustering (1)"]))
    assert best_clustering.startswith("GloVe")  # so the README makes no claim of leading on clustering
    minilm_row = next(line for line in README_TEXT.splitlines() if line.startswith("| `swe-all-MiniLM-L6-v2-256d`"))
    assert "clustering" not in minilm_row and "leads every static peer" not in README_TEXT


def test_texts_without_a_known_word_are_said_to_tie_as_the_clients_run_found():
    clients = (REPO_ROOT / "benchmarks/results/2026-11-26-clients.md").read_text(encoding="utf-8")
    assert "('🙂', 1.0), (' ', 1.0), ('', 1.0)" in clients and "('', 0.0), (' ', 0.0), ('🙂', 0.0)" in clients
    assert "arbitrary order" not in README_TEXT
    assert "tie with each other at similarity 1.0" in README_TEXT


# ------------------------------------------------------------------------------------------------ the other documents
def evaluate_commands(text: str) -> list[str]:
    joined = text.replace("\\\n", " ")
    return [match.group(0) for match in re.finditer(r"st-static evaluate [^\n`]*", joined)]


@pytest.mark.parametrize(
    "document",
    [
        "README.md",
        "hub_cards/README.md",
        *sorted(f"hub_cards/{p.name}" for p in (REPO_ROOT / "hub_cards").glob("swe-*.md")),
    ],
)
def test_every_documented_evaluate_command_gives_its_data(document):
    commands = evaluate_commands((REPO_ROOT / document).read_text(encoding="utf-8"))
    assert commands or document.startswith("hub_cards/swe-")
    for command in commands:
        assert "--data" in command or "--tasks" in command, f"{document}: {command}"


def test_developing_names_every_public_name():
    import st_static

    developing = (REPO_ROOT / "DEVELOPING.md").read_text(encoding="utf-8")
    row = next(line for line in developing.splitlines() if line.startswith("| `st_static/__init__.py`"))
    assert [name for name in st_static.__all__ if name != "__version__" and f"`{name}`" not in row] == []


def test_the_results_index_has_a_line_per_results_file():
    folder = REPO_ROOT / "benchmarks" / "results"
    index = (folder / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([^`]+\.md)`", index, flags=re.MULTILINE))
    assert listed == {path.name for path in folder.glob("*.md") if path.name != "README.md"}


def test_each_headline_of_the_results_index_comes_from_its_file():
    folder = REPO_ROOT / "benchmarks" / "results"
    for line in (folder / "README.md").read_text(encoding="utf-8").splitlines():
        if match := re.match(r"^\| `([^`]+\.md)` \|", line):
            source = (folder / match.group(1)).read_text(encoding="utf-8")
            assert [figure for figure in FIGURE.findall(line) if figure not in source] == [], line


def test_every_extra_the_readme_names_exists():
    import tomllib

    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    extras_named = re.findall(r"(?:st-static|(?<![\w/])\.)\[([\w,]+)\]", README_TEXT)  # or pip install -e ".[NAME]"
    named = {name for group in extras_named for name in group.split(",")}
    assert {"train", "teachers", "clients", "eval"} <= named
    assert named <= set(extras)


def _options(words: list[str]) -> dict[str, list[str]]:
    """``--name value`` pairs of a command line, each name with its values in order."""
    options: dict[str, list[str]] = {}
    for index, word in enumerate(words):
        if word.startswith("--"):
            value = words[index + 1] if index + 1 < len(words) and not words[index + 1].startswith("--") else ""
            options.setdefault(word, []).append(value)
    return options


def test_the_flagship_command_sits_under_the_line_naming_it_and_is_its_cards_recipe():
    import sys

    lines = README_TEXT.splitlines()
    above = {block.line: next(line for line in reversed(lines[: block.line - 1]) if line.strip()) for block in BLOCKS}
    flagship = [block for block in BLOCKS if "flagship" in above[block.line].lower()]
    assert len(flagship) == 1, "one code block right under a line that calls it the flagship"
    builds = [st_static_arguments(words) for words in shell_commands(flagship[0].code)]
    (build,) = [arguments for arguments in builds if arguments and arguments[0] == "build"]
    sys.path.insert(0, str(REPO_ROOT / "hub_cards"))
    try:
        import refresh
    finally:
        sys.path.remove(str(REPO_ROOT / "hub_cards"))
    recipe = shlex.split(refresh.FLAGSHIP_256.commands("models").splitlines()[0])[2:]
    ours, theirs = _options(build[1:]), _options(recipe)
    assert Path(ours.pop("--teacher")[0]).name == Path(theirs.pop("--teacher")[0]).name  # a local copy of the teacher
    assert ours == theirs
    assert f"`{refresh.FLAGSHIP_256.name}`, the flagship" in README_TEXT  # its chooser row
