"""docs/ reads as guides: the pages the README links speak of networks by what they are and of results by subject,
never by the lab's nicknames or its numbered rounds of work (those live in docs/record/); a figure that the README
and a guide both state is the same figure in both; every relative link in docs/ leads somewhere; and every file of
the repository that the README or a guide quotes (`training/resnet/grow.py`) is there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_readme import README, ROOT, broken_links, outside_fences

DOCS = ROOT / "docs"
RECORD = DOCS / "record"
# The one table that maps each old nickname (commit messages use them) to what the network is and where it is.
NICKNAME_TABLE = RECORD / "README.md"
NICKNAME_SECTION = "## Old names"
# "round" or "rounds" as a word, any case: not "around", "rounding", "background", fastchess's "-rounds", "round robin".
ROUND_WORD = re.compile(r"(?<![\w-])rounds?(?![\w-])(?!\s+robin)", re.IGNORECASE)
# A figure a guide repeats, between markers: <!-- figure:NAME -->VALUE<!-- /figure -->.
FIGURE_MARKER = re.compile(r"<!-- figure:([\w-]+) -->(.*?)<!-- /figure -->")
# A repository file quoted in code: under one of the repository's own folders, with a file extension.
REPOSITORY_FOLDERS = (".ci", "bin", "docs", "engine", "evaluators", "hackmate_core", "search", "testset", "tests",
                      "tools", "training", "weights")
QUOTED_PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*\.(?:c|h|json|md|onnx|pgn|pt|py|sh|txt|xz))(?![\w-])"
                         % "|".join(re.escape(folder) for folder in REPOSITORY_FOLDERS))
CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)


def readme_linked_pages() -> list[Path]:
    """The docs pages the README links to (its guides), outside the record."""
    pages = set()
    for line in outside_fences(README.read_text(encoding="utf-8")):
        for target in re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#[^)\s]*)?\)", line):
            page = (ROOT / target).resolve()
            if RECORD not in page.parents:
                pages.add(page)
    return sorted(pages)


def nicknames() -> list[str]:
    """The old names listed in the first column of the record's nickname table, each in backticks."""
    text = NICKNAME_TABLE.read_text(encoding="utf-8")
    assert NICKNAME_SECTION in text, f"{NICKNAME_TABLE.relative_to(ROOT)} has no section {NICKNAME_SECTION!r}"
    section = text.split(NICKNAME_SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|") and not set(line) <= set("|- ")]
    names = [name for row in rows[1:] for name in re.findall(r"`([^`]+)`", row.split("|")[1])]
    return names


def nickname_pattern(names: list[str]) -> re.Pattern[str]:
    """Any of the names as a whole word (a letter, digit or hyphen next to it makes another word), case-sensitive."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")


def outside_the_table(page: Path) -> str:
    """A page's text, less the nickname table's section where the page is the one that holds it."""
    text = page.read_text(encoding="utf-8")
    if page != NICKNAME_TABLE:
        return text
    before, after = text.split(NICKNAME_SECTION, 1)
    rest = after.split("\n## ", 1)
    return before + ("\n## " + rest[1] if len(rest) > 1 else "")


def markdown_table(section: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table in a text, as header -> cell."""
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))) for line in lines[2:]]


def readme_section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    assert f"\n## {title}" in text, f"README.md has no section {title!r}"
    return text.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def bench_figure(cell: str) -> str:
    """The nodes/s figure of a Strength row's machine cell (`2-core AMD EPYC ...: 4,710`)."""
    match = re.search(r":\s*([\d,]+)", cell)
    assert match, f"no bench figure in {cell!r}"
    return match.group(1)


def readme_figures() -> dict[str, str]:
    """The current figures the README states, by name: the default network's test-set figures (Shipped networks)
    and the rows of the Strength table. A guide that repeats one marks it with the same name."""
    figures = {}
    shipped = readme_section("Shipped networks and the training cache")
    match = re.search(r"test top-1 (\d+\.\d+%), value MAE (\d\.\d+)", shipped)
    assert match, "README's Shipped networks no longer state the default's test top-1 and value MAE"
    figures["default-top1"], figures["default-value-mae"] = match.groups()
    rows = markdown_table(readme_section("Strength"))
    wanted = {
        "default-vs-stockfish": lambda row: row["opponent"].startswith("Stockfish")
        and row["ours"].startswith("the default"),
        "default-vs-previous": lambda row: row["opponent"].startswith("the network before the default"),
        "deepchess-vs-stockfish": lambda row: row["opponent"].startswith("Stockfish")
        and row["ours"].startswith("DeepChess"),
        "compiled-vs-pure": lambda row: "pure-Python" in row["opponent"],
    }
    machine = next(key for key in rows[0] if key.startswith("machine"))
    for name, chosen in wanted.items():
        found = [row for row in rows if chosen(row)]
        assert len(found) == 1, f"README's Strength table: {len(found)} rows for {name}"
        row = found[0]
        figures[f"{name}-wdl"] = row["W / D / L"]
        figures[f"{name}-elo"] = row["Elo (95%)"]
        if name != "default-vs-previous":
            figures[f"{name}-bench"] = bench_figure(row[machine])
    return figures


def docs_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_round_pattern_finds_the_word_only() -> None:
    for text in ("the twentieth round", "Rounds of work", "three rounds of bench", "(round 3)", "ROUND"):
        assert ROUND_WORD.search(text), text
    for text in ("around", "rounding", "background", "rounded", "-rounds 50 -games 2", "a round robin",
                 "round-robin", "surround"):
        assert not ROUND_WORD.search(text), text


def test_the_nickname_table_lists_the_old_names() -> None:
    names = nicknames()
    for expected in ("cont-a", "c6", "gpu26-abd", "c25-abd", "the corpus run's A", "the union run's A"):
        assert expected in names, expected
    pattern = nickname_pattern(names)
    assert pattern.search("averaged with c25-abd (27 November)")
    assert pattern.search("as in c6, six means")
    assert not pattern.search("the c25-abd-like files, Nc6 and gc6")


def test_the_readme_links_the_guides() -> None:
    pages = {page.name for page in readme_linked_pages()}
    assert {"bench.md", "matches.md", "network-history.md", "training.md"} <= pages, pages


@pytest.mark.parametrize("page", [README, *readme_linked_pages()], ids=page_id)
def test_a_guide_has_no_rounds_and_no_nicknames(page: Path) -> None:
    pattern = nickname_pattern(nicknames())
    hits = [f"line {number}: {line.strip()}"
            for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
            if ROUND_WORD.search(line) or pattern.search(line)]
    assert not hits, f"{page_id(page)} speaks of rounds or nicknames (the record is docs/record/):\n" + "\n".join(hits)


@pytest.mark.parametrize("page", docs_pages(), ids=page_id)
def test_a_nickname_appears_only_in_the_table(page: Path) -> None:
    """The record too names networks by what they are; the table is the one place an old name is explained."""
    pattern = nickname_pattern(nicknames())
    hits = [f"line {number}: {line.strip()}"
            for number, line in enumerate(outside_the_table(page).splitlines(), 1) if pattern.search(line)]
    assert not hits, f"{page_id(page)} uses nicknames outside {page_id(NICKNAME_TABLE)}'s table:\n" + "\n".join(hits)


def test_the_table_s_own_page_is_checked_outside_the_table() -> None:
    rest = outside_the_table(NICKNAME_TABLE)
    assert NICKNAME_SECTION not in rest and "`gpu26-abd`" not in rest
    assert "## The machines" in rest


def test_figures_shared_with_the_readme_are_the_readme_s() -> None:
    """A figure between markers equals the README's figure of that name; a name the README does not state is one
    figure wherever the docs mark it."""
    figures = readme_figures()
    seen: dict[str, set[str]] = {}
    wrong = []
    for page in docs_pages():
        for name, value in FIGURE_MARKER.findall(page.read_text(encoding="utf-8")):
            seen.setdefault(name, set()).add(value)
            if name in figures and value != figures[name]:
                wrong.append(f"{page_id(page)}: {name} is {value!r}, README.md says {figures[name]!r}")
    wrong += [f"{name} differs between pages: {sorted(values)}" for name, values in seen.items() if len(values) > 1]
    assert not wrong, "\n".join(wrong)
    assert set(seen) & set(figures), "no guide marks a figure the README states"


def test_the_figure_markers_are_read() -> None:
    text = "top-1 <!-- figure:default-top1 -->37.41%<!-- /figure --> and <!-- figure:x -->4,710<!-- /figure -->"
    assert FIGURE_MARKER.findall(text) == [("default-top1", "37.41%"), ("x", "4,710")]


@pytest.mark.parametrize("page", docs_pages(), ids=page_id)
def test_every_link_in_docs_resolves(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, f"{page_id(page)}: links that lead nowhere: {broken}"


def quoted_paths(text: str) -> list[str]:
    """The repository paths in ``text``'s code blocks and code spans."""
    blocks = CODE_BLOCK.findall(text)
    spans = re.findall(r"`([^`]+)`", CODE_BLOCK.sub(" ", text))
    return [path for code in blocks + spans for path in QUOTED_PATH.findall(code)]


def test_quoted_paths_are_found_in_spans_and_blocks_only() -> None:
    text = "`training/resnet/grow.py` and `python -m x training/uci/label.py::test_a`\n```sh\nbash bin/test\n" \
           "python tools/match.py\n```\nprose training/data/shards.py, `runs/x.pt`, `my-training/y.py`"
    assert quoted_paths(text) == ["tools/match.py", "training/resnet/grow.py", "training/uci/label.py"]


@pytest.mark.parametrize("page", [README, *(page for page in docs_pages() if RECORD not in page.parents)],
                         ids=page_id)
def test_every_repository_file_a_guide_quotes_is_there(page: Path) -> None:
    missing = sorted({path for path in quoted_paths(page.read_text()) if not (ROOT / path).exists()})
    assert not missing, f"{page_id(page)} quotes files that are not in the repository: {missing}"
