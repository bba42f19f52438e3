"""Building the corpus: the parts that are not in the cache prepared, the rest reused, all joined into a cache
entry of its own (keyed by its parts, split and exclusions), and ``ROOT/corpus`` pointed at it."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evaluators.encoding import get_encoding
from training.data import cache
from training.data.corpus.config import CURRENT, TESTSET, CorpusConfig, CorpusError
from training.data.corpus.files import input_files
from training.data.corpus.join import JOIN_FORMAT, JOIN_VERSION, JOINS, join, sorted_keys
from training.data.corpus.parts import Part, part_entry
from training.data.corpus.prepare import PartReport, prepare_parts
from training.data.split import split_name


@dataclass
class Corpus:
    """The result of ``build``: each file's part, the joined corpus's directory and manifest, and whether the
    join was reused."""

    parts: list[PartReport]
    directory: Path
    manifest: dict
    join_reused: bool

    def text(self) -> str:
        """What became of each file, what was skipped or damaged, and the joined corpus's counts."""
        lines = []
        for report in self.parts:
            m = report.manifest
            read = f"{m['games']:,} games" if m["settings"]["kind"] == "games" else "labelled lines"
            damaged = f"; DAMAGED: {m['damaged']}" if m["damaged"] else ""
            lines.append(f"{report.source.name}: {report.status}, {m['positions']:,} positions of {read} "
                         f"({m['seconds']} s when prepared){damaged}")
        m = self.manifest
        damaged = [r.manifest["damaged"] for r in self.parts if r.manifest["damaged"]]
        skipped: dict[str, int] = {}
        for report in self.parts:
            for why, n in report.manifest["skipped"].items():
                skipped[why] = skipped.get(why, 0) + n
        lines.append("skipped: " + (", ".join(f"{n:,} {why}" for why, n in sorted(skipped.items())) or "none"))
        if damaged:
            lines.append(f"{len(damaged)} damaged file(s), read up to the damage: " + "; ".join(damaged))
        c = m["counts"]
        lines.append(f"joined{' (reused)' if self.join_reused else ''}: {c['positions']:,} positions of "
                     f"{c['records']:,} records ({c['duplicates']:,} duplicates, {c['excluded']:,} test-set or "
                     f"excluded positions left out); validation split {m['split']!r}: {c['validation']:,} positions")
        lines.append(f"corpus: {self.directory}")
        return "\n".join(lines)


def build(config: CorpusConfig, progress: bool = True, say: Callable[[str], None] = print) -> Corpus:
    """Prepare the parts that are not in the cache (in parallel), reuse the rest, and join them."""
    encoding = get_encoding(config.encoding)  # refuses an unknown name before any work
    if config.validation_period < 2:
        raise CorpusError(f"the validation period must be at least 2, not {config.validation_period}")
    reports = prepare_parts(input_files(config), config, progress, say)
    parts = {r.key: Part(part_entry(r.key).path, r.manifest) for r in reports}
    exclude = ([TESTSET] if TESTSET.is_dir() else []) + [Path(d) for d in config.exclude]
    excluded = sorted_keys(exclude)
    join_key = cache.settings_digest({"version": JOIN_VERSION, "parts": sorted(parts), "encoding": encoding.name,
                                      "period": config.validation_period,
                                      "excluded": hashlib.sha256(excluded.tobytes()).hexdigest()})[:32]
    entry = cache.entry(JOINS, join_key, JOIN_FORMAT, JOIN_VERSION)
    problem = entry.problem()
    if problem not in (None, "absent"):
        say(f"the joined corpus {entry.path} is {problem}: rebuilding it")
    if problem is not None:
        arrays, counts = join([parts[key] for key in sorted(parts)], excluded, config.validation_period)
        entry.start()
        for name, array in arrays.items():
            cache.save_array(entry.path / f"{name}.npy", array)
        entry.finish({"encoding": encoding.name, "split": split_name(config.validation_period),
                      "validation_period": config.validation_period, "counts": counts,
                      "parts": [{"key": key, "source": parts[key].manifest["source"],
                                 "positions": parts[key].manifest["positions"]} for key in sorted(parts)],
                      "excluded_from": [str(d) for d in exclude],
                      "summary": f"{counts['positions']:,} positions ({counts['validation']:,} validation) "
                                 f"from {len(parts)} parts"})
    _link_current(entry.path, say)
    return Corpus(reports, entry.path, entry.manifest(), problem is None)



def _link_current(directory: Path, say: Callable[[str], None]) -> None:
    """Point ROOT/corpus at the newest joined corpus (a relative symbolic link), where links can be made."""
    link = cache.root() / CURRENT
    temporary = cache.temporary_name(link)
    try:
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(directory.relative_to(cache.root()), target_is_directory=True)
        os.replace(temporary, link)
    except OSError as error:
        say(f"could not link {link} to the corpus ({error}): give train {directory}")
