"""README.md is a guide a new user reads in minutes: short, free of the lab's vocabulary, and every command it
shows runs as written (each command and flag is parsed by the CLI it names, without running anything)."""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Iterator

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_LINES = 350
MAX_WORDS = 4000
# What a new user looks for first starts on the first screens.
EARLY_SECTIONS = ("## In a GUI", "## Strength", "## Train your own network")
EARLY_LINES = 150
# The words of the work process that made the engine, in any form and inside file names (gpu-session-x.sh).
LAB_WORDS = re.compile(r"(?<![a-z])(sessions?|leas(?:e|es|ed|ing)|vms?)(?![a-z])", re.IGNORECASE)
SHELL_FENCE = re.compile(r"^```(?:sh|bash|shell|console)\s*$")
COMMAND_SEPARATORS = {";", "&&", "||", "|", "&"}
OUR_PACKAGES = {"engine", "training", "tools", "hackmate_core", "evaluators", "search"}


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces as hyphens)."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for line in outside_fences(markdown):
        match = re.match(r"#{1,6} (.*)", line)
        if match:
            base = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
            count = seen.get(base, 0)
            anchors.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    return anchors


def outside_fences(markdown: str) -> Iterator[str]:
    """The lines of a Markdown text that are not inside a ``` block (whose # lines are comments, not headings)."""
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def shell_blocks(markdown: str) -> list[str]:
    """The text of every ```sh (bash, shell, console) block."""
    blocks, current = [], None
    for line in markdown.splitlines():
        if current is None and SHELL_FENCE.match(line):
            current = []
        elif current is not None and line.startswith("```"):
            blocks.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def commands_of(block: str) -> list[list[str]]:
    """Each simple command of a shell block as words: continuation lines joined, comments dropped, split at
    ; && || | &, leading VAR=value assignments and a `nice [-n N]` wrapper removed."""
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for token in [*lexer, ";"]:
            if token in COMMAND_SEPARATORS:
                if strip_prefixes(words):
                    commands.append(strip_prefixes(words))
                words = []
            else:
                words.append(token)
    return commands


def strip_prefixes(words: list[str]) -> list[str]:
    """The command itself: without the environment assignments and the `nice` in front of it."""
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    if words[:1] == ["nice"]:
        words = words[3:] if words[1:2] == ["-n"] else words[1:]
    return words


def console_scripts() -> dict[str, str]:
    """The installed package's console scripts (pyproject.toml's [project.scripts]): name -> "module:attribute"."""
    return {script.name: script.value for script in entry_points(group="console_scripts")
            if script.dist is not None and script.dist.name == "hackmate"}


def click_entry(module_name: str) -> click.Command | None:
    """The click command `python -m MODULE` runs, for a module of this repository: the package's __main__
    `cli`, or the module's own `cli` or `main`."""
    if module_name.split(".")[0] not in OUR_PACKAGES:
        return None
    for name in (f"{module_name}.__main__", module_name):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name in (name, module_name):
                continue
            raise
        for attribute in ("cli", "main"):
            command = getattr(module, attribute, None)
            if isinstance(command, click.Command):
                return command
    return None


@dataclass
class Invocation:
    """A README command that runs code of this repository; `command` is None where it is not a click CLI (bin/test
    hands its arguments to pytest)."""
    shown: str
    name: str
    command: click.Command | None
    args: list[str]


def invocation_of(words: list[str]) -> Invocation | None:
    """How a README command reaches our code (python -m, a console script, a bin/ launcher), or None for other
    programs (pip, git, fastchess)."""
    shown, program, args = " ".join(words), words[0], words[1:]
    if re.fullmatch(r"(.*/)?python3?", program) and args[:1] == ["-m"] and len(args) > 1:
        module = args[1]
        if module.split(".")[0] not in OUR_PACKAGES:
            return None
        command = click_entry(module)
        assert command is not None, f"`{shown}`: {module} has no command line"
        return Invocation(shown, module, command, args[2:])
    scripts = console_scripts()
    if Path(program).name in scripts:
        module, attribute = scripts[Path(program).name].split(":")
        return Invocation(shown, program, getattr(importlib.import_module(module), attribute), args)
    if program.startswith("bin/"):
        script = ROOT / program
        assert script.is_file() and script.stat().st_mode & 0o111, f"`{shown}`: no launcher {program}"
        launched = re.search(r'-m ([\w.]+) "\$@"', script.read_text(encoding="utf-8"))
        return Invocation(shown, program, click_entry(launched.group(1)) if launched else None, args)
    return None


def subcommand_args(context: click.Context) -> list[str]:
    """What a group left for its subcommand (click keeps the subcommand's name apart from its arguments)."""
    protected = getattr(context, "_protected_args", None)
    if protected is None:
        protected = context.protected_args
    return [*protected, *context.args]


def parse_command_line(name: str, command: click.Command, args: list[str]) -> None:
    """Parse ARGS as click does before it runs anything: unknown commands and options, missing values, choices
    and numbers are errors; an eager option that prints and exits (--help, --version) is fine."""
    try:
        context = command.make_context(name, list(args))
        while isinstance(command, click.Group):
            rest = subcommand_args(context)
            if not rest:
                break
            sub_name, command, sub_args = command.resolve_command(context, rest)
            context = command.make_context(sub_name, sub_args, parent=context)
    except click.exceptions.Exit as done:
        assert done.exit_code == 0, f"{name} {' '.join(args)}: exit code {done.exit_code}"


def readme_invocations() -> list[Invocation]:
    """Every command of the README's shell blocks that runs code of this repository."""
    return [invocation for block in shell_blocks(readme_text()) for words in commands_of(block)
            if (invocation := invocation_of(words))]


def test_readme_is_short() -> None:
    text = readme_text()
    assert len(text.splitlines()) <= MAX_LINES
    assert len(text.split()) <= MAX_WORDS


def test_a_user_finds_the_gui_the_strength_and_training_early() -> None:
    starts = {line: number for number, line in enumerate(readme_text().splitlines(), 1)}
    for section in EARLY_SECTIONS:
        assert section in starts, f"README.md has no section {section!r}"
        assert starts[section] <= EARLY_LINES, f"{section} starts on line {starts[section]}"


def test_readme_has_none_of_the_lab_words() -> None:
    hits = [f"line {number}: {line.strip()}" for number, line in enumerate(readme_text().splitlines(), 1)
            if LAB_WORDS.search(line)]
    assert not hits, "\n".join(hits)


def test_the_lab_words_pattern_finds_them_in_file_names_and_any_case() -> None:
    for text in ("tools/gpu-session-x.sh", "a VM", "the VMs", "Sessions", "lease17", "leased", "GPU_LEASE"):
        assert LAB_WORDS.search(text), text
    for text in ("release", "please", "NVMe", "possession", "kvm"):
        assert not LAB_WORDS.search(text), text


def test_every_contents_link_leads_to_a_heading() -> None:
    text = readme_text()
    paragraphs = text.split("\n\n")
    contents = next((paragraph for paragraph in paragraphs if paragraph.startswith("**Contents")), None)
    assert contents, "README.md has no **Contents** line"
    links = re.findall(r"\]\(#([^)]+)\)", contents)
    assert len(links) >= 8, contents
    missing = set(links) - heading_anchors(text)
    assert not missing, f"contents links without a heading: {sorted(missing)}"


def broken_links(page: Path) -> list[str]:
    """The relative links of a Markdown file (outside code blocks) whose file, or heading anchor, is not there;
    a link is read from the file's own folder."""
    broken = []
    for line in outside_fences(page.read_text(encoding="utf-8")):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            destination = (page.parent / path).resolve() if path else page
            if not destination.exists():
                broken.append(target)
            elif anchor and destination.suffix == ".md" and anchor not in heading_anchors(
                    destination.read_text(encoding="utf-8")):
                broken.append(target)
    return broken


def test_every_link_of_the_readme_resolves() -> None:
    broken = broken_links(README)
    assert not broken, f"links that lead nowhere: {broken}"


def test_every_script_the_readme_runs_exists() -> None:
    """A command that starts with a path of this checkout (bin/match, tools/run-fastchess.sh) names a file that is
    there: scripts that move take the README with them."""
    missing = [" ".join(words) for block in shell_blocks(readme_text()) for words in commands_of(block)
               if "/" in words[0] and not words[0].startswith(("/", "~", "..", "$"))
               and not (ROOT / words[0]).is_file()]
    assert not missing, f"commands whose program is not in the checkout: {missing}"


def test_shell_blocks_are_split_into_commands() -> None:
    block = ("X=1 python -m engine bench --nodes 10   # a comment\n"
             "python -m training train data --out runs/x \\\n    --epochs 2 && bin/engine --eval material\n"
             "nice -n 10 python -m training prepare a.pgn --out d")
    assert commands_of(block) == [
        ["python", "-m", "engine", "bench", "--nodes", "10"],
        ["python", "-m", "training", "train", "data", "--out", "runs/x", "--epochs", "2"],
        ["bin/engine", "--eval", "material"],
        ["python", "-m", "training", "prepare", "a.pgn", "--out", "d"]]


@pytest.fixture
def paths_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's files (the user's PGN, a run's checkpoint) need not exist for its commands to parse."""
    monkeypatch.setattr(click.Path, "convert", lambda self, value, param, context: value)
    monkeypatch.setattr(click.File, "convert", lambda self, value, param, context: value)


def test_the_parser_refuses_what_a_user_could_not_run(paths_unchecked: None) -> None:
    from training.__main__ import cli
    parse_command_line("training", cli, ["train", "data", "--out", "runs/x", "--epochs", "2"])
    for wrong in (["train", "data", "--out", "runs/x", "--no-such-flag"], ["trian", "data"],
                  ["train", "data", "--out", "runs/x", "--epochs", "two"], ["train", "data"]):
        with pytest.raises(click.UsageError):
            parse_command_line("training", cli, wrong)


def test_the_readme_shows_the_commands_it_promises() -> None:
    shown = " ".join(invocation.shown for invocation in readme_invocations())
    for expected in ("bin/engine", "bin/test", "training prepare", "training train", "training export",
                     "--weights", "engine bench"):
        assert expected in shown, expected


def test_every_readme_command_parses(paths_unchecked: None) -> None:
    invocations = [invocation for invocation in readme_invocations() if invocation.command]
    assert invocations
    for invocation in invocations:
        try:
            parse_command_line(invocation.name, invocation.command, invocation.args)
        except click.UsageError as error:
            pytest.fail(f"README command `{invocation.shown}`: {error.format_message()}")


def test_the_readme_options_table_is_the_engine_s_listing() -> None:
    """The UCI options table between the README's markers is what `python -m engine --list-options` prints."""
    from click.testing import CliRunner

    from engine.__main__ import cli
    listing = CliRunner().invoke(cli, ["--list-options"])
    assert listing.exit_code == 0, listing.output
    text = readme_text()
    begin, end = text.index("<!-- options:begin -->"), text.index("<!-- options:end -->")
    table = [line for line in text[begin:end].splitlines() if line.startswith("|")]
    assert table == [line for line in listing.output.splitlines() if line.startswith("|")]


def test_the_layout_names_every_folder_of_the_checkout():
    """Each top-level folder git tracks appears in the README's Layout section, as `name/...`."""
    try:
        tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no list of tracked folders")
    folders = {path.split("/")[0] for path in tracked.splitlines() if "/" in path}
    text = readme_text()
    layout = text[text.index("## Layout"):]
    layout = layout[:layout.index("\n## ", 1)]
    assert sorted(folder for folder in folders if f"`{folder}/" not in layout) == []
