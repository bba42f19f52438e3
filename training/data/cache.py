"""The cache: work kept between rounds of work, outside the work tree, keyed by the content of its inputs.

Where: ``$HACKMATE_CACHE``, else ``~/.cache/hackmate``. A machine that keeps its home
directory (or a cache directory carried from one machine to the next) then reuses what
an earlier round prepared instead of preparing it again.

An entry is a directory ``ROOT/KIND/KEY``, the key a digest of everything that
decides its content. Its files are written under temporary names and renamed when
complete; ``manifest.json``, written last, lists them with their sizes and says which
format and version wrote them. An entry without a manifest, whose manifest does not
match its files, or written by another format or version is never used: ``problem``
names what is wrong, and the caller rebuilds it.

One writer at a time: ``exclusive`` holds the cache for a command that writes or removes entries, and a second
such command refuses instead of racing the first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

try:
    import fcntl
except ImportError:  # Windows: no flock, and no second writer is kept out
    fcntl = None  # type: ignore[assignment]

import numpy as np

from hackmate_core.user_cache import ENVIRONMENT, root  # noqa: F401 (ENVIRONMENT: read as cache.ENVIRONMENT)

MANIFEST = "manifest.json"
TEMPORARY = ".tmp"


class CacheBusy(OSError):
    """Another command holds the cache for writing (:func:`exclusive`)."""


@contextlib.contextmanager
def exclusive(command: str) -> Iterator[None]:
    """Hold the cache for ``command`` alone while it writes or removes entries: ``Entry.start`` empties an entry
    another run may be writing and a prune removes what another may be joining, so two at once could leave an
    entry that claims files it lost. The lock is the kernel's on the cache directory itself (no lock file to
    leave behind; released when the process ends, however it ends); a second holder gets CacheBusy at once.
    Readers (`train`, `corpus-pack`) take no lock: a prune removes only joins that are no longer current. Where
    the system or the file system has no flock (Windows; some network mounts), writers are not kept apart."""
    base = root()
    base.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    handle = os.open(base, os.O_RDONLY)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CacheBusy(f"the cache {base} is in use by another `python -m training corpus` run: "
                            f"{command} changed nothing; run it again when that one has ended") from None
        except OSError:  # no flock on this file system: go on unguarded, as without fcntl
            pass
        yield
    finally:
        os.close(handle)  # closing the last descriptor releases the lock


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (hex), read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def settings_digest(settings: dict) -> str:
    """SHA-256 (hex) of JSON-serialisable settings, independent of key order."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def temporary_name(path: Path) -> Path:
    """Where a file of an entry is written before it is complete (then renamed to ``path``)."""
    return path.with_name(path.name + TEMPORARY)


def write_json(path: Path, data: dict) -> None:
    """Write JSON under a temporary name, then rename: a reader sees the old file or the whole new one."""
    temporary = temporary_name(path)
    temporary.write_text(json.dumps(data, indent=1))
    os.replace(temporary, path)


@dataclass(frozen=True)
class Entry:
    """One cache entry: its directory, and the format and version its manifest must name."""

    path: Path
    format: str
    version: int

    def manifest(self) -> dict:
        """The manifest of a complete entry (check ``problem`` first)."""
        return json.loads((self.path / MANIFEST).read_text())

    def problem(self) -> Optional[str]:
        """Why this entry cannot be used ("absent", half-written, another version, ...), or None if it is complete."""
        if not self.path.exists():
            return "absent"
        try:
            manifest = self.manifest()
        except FileNotFoundError:
            return "half-written (no manifest)"
        except (OSError, ValueError) as error:
            return f"unreadable manifest ({error})"
        if not isinstance(manifest, dict) or manifest.get("format") != self.format:
            return f"not a {self.format} entry"
        if manifest.get("version") != self.version:
            return f"written by version {manifest.get('version')!r} of {self.format}, this code reads {self.version}"
        for name, size in manifest.get("files", {}).items():
            file = self.path / name
            if not file.is_file():
                return f"half-written ({name} is missing)"
            if file.stat().st_size != size:
                return f"damaged ({name} holds {file.stat().st_size} bytes, the manifest says {size})"
        return None

    def start(self) -> Path:
        """An empty directory for a new entry, whatever was there before (the caller found it unusable)."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(parents=True)
        return self.path

    def finish(self, manifest: dict) -> dict:
        """Mark the entry complete: write its manifest, listing every file with its size, last."""
        files = {path.name: path.stat().st_size for path in sorted(self.path.iterdir())
                 if path.is_file() and path.name != MANIFEST and not path.name.endswith(TEMPORARY)}
        manifest = {"format": self.format, "version": self.version, "key": self.path.name,
                    "written": time.strftime("%Y-%m-%d %H:%M:%S"), **manifest, "files": files}
        write_json(self.path / MANIFEST, manifest)
        return manifest


def entry(kind: str, key: str, format: str, version: int) -> Entry:
    """The entry ``key`` of ``kind`` in the cache (ROOT/KIND/KEY)."""
    return Entry(root() / kind / key, format, version)


def save_array(path: Path, array: np.ndarray) -> None:
    """Save an array as .npy under a temporary name, then rename it."""
    with open(temporary_name(path), "wb") as handle:
        np.save(handle, array, allow_pickle=False)
    os.replace(temporary_name(path), path)


def size_on_disk(directory: Path, pattern: str = "**/*") -> int:
    """Bytes the files under ``directory`` occupy (allocated blocks where the system reports them); ``pattern``
    ``*`` counts only the files directly in it."""
    total = 0
    for file in directory.glob(pattern):
        if file.is_file() and not file.is_symlink():
            stat = file.stat()
            total += stat.st_blocks * 512 if hasattr(stat, "st_blocks") else stat.st_size
    return total


def describe() -> dict:
    """What the cache holds: every entry (kind, key, path, bytes on disk, its manifest's format, version and
    summary, or why it has none), the bytes of each top-level folder (entries and loose files: a folder kept
    there by hand is one too) and of the whole cache."""
    base = root()
    entries: list[dict] = []
    folders: dict[str, int] = {}
    for kind in sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink()) if base.exists() else []:
        first = len(entries)
        for path in sorted(p for p in kind.iterdir() if p.is_dir() and not p.is_symlink()):
            item = {"kind": kind.name, "key": path.name, "path": str(path), "bytes": size_on_disk(path)}
            try:
                manifest = json.loads((path / MANIFEST).read_text())
                item.update(format=manifest.get("format"), version=manifest.get("version"),
                            summary=manifest.get("summary", ""))
            except FileNotFoundError:
                item["summary"] = "half-written (no manifest)"
            except (OSError, ValueError) as error:
                item["summary"] = f"unreadable manifest ({error})"
            entries.append(item)
        folders[kind.name] = sum(e["bytes"] for e in entries[first:]) + size_on_disk(kind, "*")
    loose = size_on_disk(base, "*") if base.exists() else 0
    return {"root": str(base), "entries": entries, "folders": folders, "bytes": sum(folders.values()) + loose}
