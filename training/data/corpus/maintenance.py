"""Looking after the cache's corpus: what it holds, and removing what the current corpus does not read."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from training.data import cache
from training.data.corpus.config import ADDED, CURRENT, CorpusError
from training.data.corpus.files import added_files
from training.data.corpus.join import JOIN_FORMAT, JOIN_VERSION, JOINS
from training.data.corpus.parts import PART_FORMAT, PART_VERSION, PARTS


def info_text() -> str:
    """What the cache holds: each part and joined corpus with its size on disk, the unusable ones named."""
    description = cache.describe()
    known = {PARTS: (PART_FORMAT, PART_VERSION), JOINS: (JOIN_FORMAT, JOIN_VERSION)}
    lines = [f"cache: {description['root']} (${cache.ENVIRONMENT} to move it)"]
    current = cache.root() / CURRENT
    if current.is_symlink():
        lines.append(f"current corpus: {current} -> {os.readlink(current)}")
    added = added_files()
    lines.append(f"added files ({cache.root() / ADDED}, joined by every corpus run): {len(added)}, "
                 f"{sum(p.stat().st_size for p in added) / 2**20:,.1f} MiB")
    for item in description["entries"]:
        if item["kind"] in known:
            problem = cache.Entry(Path(item["path"]), *known[item["kind"]]).problem()
            state = f" [unusable: {problem}; rebuilt when its inputs are asked for; safe to delete]" if problem else ""
            lines.append(f"{item['kind']}/{item['key']}: {item['bytes'] / 2**20:,.1f} MiB  {item['summary']}{state}")
    lines.extend(f"{kind}/: {size / 2**20:,.1f} MiB (not the corpus's: left as it is)"
                 for kind, size in description["folders"].items() if kind not in known and kind != ADDED)
    lines.append(f"in all: {description['bytes'] / 2**20:,.1f} MiB on disk")
    return "\n".join(lines)


def prune_stale() -> tuple[Path, list[tuple[Path, int]]]:
    """Remove what the current corpus (ROOT/corpus, the last one `corpus` joined) does not read, to free the disk:
    the other joined corpora (one more, about 70 MiB, each time the corpus grows; rebuilt from the parts if asked
    for again) and the parts its manifest does not list, half-written ones included (after a `corpus` of a few
    files only, every other file's part: they are prepared again when joined again); nothing else. Returns the
    current join's folder and each removed path with its bytes on disk, joins first (an interrupted run leaves no
    join without its parts). Refuses (CorpusError), removing nothing, without a complete current corpus."""
    link, joins, parts = cache.root() / CURRENT, cache.root() / JOINS, cache.root() / PARTS
    if not link.is_symlink():
        raise CorpusError(f"no current corpus ({link} is not a link): nothing pruned; run `python -m training corpus`")
    current = cache.Entry(link.resolve(), JOIN_FORMAT, JOIN_VERSION)
    problem = current.problem() if current.path.parent == joins.resolve() else f"not in {joins}"
    if problem:
        raise CorpusError(f"the current corpus {link} -> {os.readlink(link)} is {problem}: nothing pruned; "
                          f"run `python -m training corpus`")
    used = {part["key"] for part in current.manifest()["parts"]}
    stale = [path for path in sorted(joins.iterdir()) if path.resolve() != current.path]
    stale += [path for path in sorted(parts.iterdir()) if path.name not in used] if parts.is_dir() else []
    removed = []
    for path in stale:
        if path.is_dir() and not path.is_symlink():
            removed.append((path, cache.size_on_disk(path)))
            shutil.rmtree(path)
        else:  # a loose file, such as a temporary name left by a crash
            removed.append((path, path.lstat().st_size))
            path.unlink()
    return current.path, removed
