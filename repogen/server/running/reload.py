"""``repogen serve APP --reload``: rebuild on a change, reload only the models whose files changed.

The server runs with explicit model control, so nothing reloads unless asked. On a change under
the app's directory (inotify, through watchfiles) the app is rebuilt in a fresh ``repogen build``
process (a fresh import of the user's code; the build swaps the repository in atomically), the
manifests before and after say which models' files changed, and only those are loaded again with
tritonclient's ``load_model`` (removed ones unloaded). Triton loads the new version beside the old
one and switches when it is ready, so neither a reloaded model nor an unchanged one fails a request;
a model that fails to load keeps serving its previous build. A failed build changes nothing.
"""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import RepogenError
from ...fixed_seed import pinned_environment, repogen_command
from ...hashing import sha256_file
from ...ondisk.reader import files as repository_files
from ...ondisk.reader import model_dirs, read_manifest
from ..client.states import reason_line
from .server_process import ServerProcess

__all__ = ["AppBuild", "Changes", "Reloader", "changes", "model_hashes"]

Echo = Callable[[str], None]
_LOAD_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class AppBuild:
    """``repogen build APP -o OUTPUT [--app-dir D]`` in a fresh process: the user's code imported anew."""

    app: str
    output: Path
    app_dir: Path | None = None

    @property
    def watched(self) -> Path:
        """The project directory: the app file's directory unless ``--app-dir`` says otherwise."""
        if self.app_dir is not None:
            return self.app_dir.resolve()
        target = self.app.rpartition(":")[0]
        return Path(target).resolve().parent if target.endswith(".py") or "/" in target else Path.cwd()

    def run(self) -> str | None:
        """Build; ``None`` on success, else what the build printed (its ``Error:`` line names the fix)."""
        args = ["build", self.app, "-o", str(self.output)]
        if self.app_dir is not None:
            args += ["--app-dir", str(self.app_dir)]
        proc = subprocess.run(repogen_command(*args), capture_output=True, text=True, env=pinned_environment())
        if proc.returncode == 0:
            return None
        return (proc.stderr.strip() or proc.stdout.strip() or f"repogen build exited with {proc.returncode}")[-4000:]


# --------------------------------------------------------------------------- what changed


def model_hashes(repository: Path) -> dict[str, dict[str, str]]:
    """Model name → its files' sha256 by relative path: from the manifest, else hashed here (hand-written)."""
    manifest = read_manifest(repository)
    if manifest and isinstance(manifest.get("files"), dict):
        files: dict[str, str] = manifest["files"]
    else:
        files = {f"{model.name}/{rel}": sha256_file(path) for model in model_dirs(repository)
                 for rel, path in repository_files(model.path).items()}  # fmt: skip
    models: dict[str, dict[str, str]] = {m.name: {} for m in model_dirs(repository) if m.has_config}
    for relative, digest in files.items():
        name, _, rest = relative.partition("/")
        if name in models:
            models[name][rest] = digest
    return models


@dataclass(frozen=True)
class Changes:
    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: tuple[str, ...]


def changes(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> Changes:
    return Changes(
        changed=tuple(sorted(n for n in after if n in before and after[n] != before[n])),
        added=tuple(sorted(n for n in after if n not in before)),
        removed=tuple(sorted(n for n in before if n not in after)),
        unchanged=tuple(sorted(n for n in after if before.get(n) == after[n])),
    )


# --------------------------------------------------------------------------- watching


def _watch_filter(build: AppBuild) -> Any:
    """watchfiles' default filter, also ignoring the build output and its staging siblings (a build would loop)."""
    import watchfiles

    output = build.output.resolve()
    ignore_dirs = (*watchfiles.DefaultFilter.ignore_dirs, ".cache", ".ruff_cache", "venv")
    patterns = (*watchfiles.DefaultFilter.ignore_entity_patterns, rf"^\.{re.escape(output.name)}")
    return watchfiles.DefaultFilter(ignore_dirs=ignore_dirs, ignore_entity_patterns=patterns, ignore_paths=[output])


class Reloader:
    """Watches ``build.watched``; :meth:`tick` (called by the serve loop) rebuilds and reloads."""

    def __init__(self, build: AppBuild, server: ServerProcess, models: Iterable[str] | None = None) -> None:
        self.build, self.server = build, server
        self.subset = set(models) if models else None
        self.hashes = model_hashes(build.output)
        self._events: queue.Queue[set[str]] = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="repogen-reload", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _watch(self) -> None:
        import watchfiles

        watched = self.build.watched
        self._ready.set()
        for batch in watchfiles.watch(
            watched, watch_filter=_watch_filter(self.build), stop_event=self._stop, debounce=800, raise_interrupt=False
        ):
            self._events.put({str(Path(path).relative_to(watched)) for _, path in batch})

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def pending(self) -> list[str]:
        """The paths changed since the last call, relative to :attr:`AppBuild.watched`, sorted."""
        paths: set[str] = set()
        while True:
            try:
                paths |= self._events.get_nowait()
            except queue.Empty:
                return sorted(paths)

    def tick(self, echo: Echo) -> None:
        """Reload once for every batch of changes seen since the last tick."""
        paths = self.pending()
        if paths:
            self.reload(paths, echo)

    def reload(self, paths: list[str], echo: Echo) -> None:
        """Rebuild, then load what changed; ``paths`` (the changes seen, if any) are named first."""
        present = [p for p in paths if (self.build.watched / p).exists()] or paths  # not an editor's temp file
        shown = ", ".join(present[:3]) + (f" and {len(present) - 3} more" if len(present) > 3 else "")
        echo(f"Reload: {shown} changed; rebuilding {self.build.app}..." if paths else
             f"Reload: rebuilding {self.build.app}...")  # fmt: skip
        started = time.monotonic()
        failure = self.build.run()
        if failure is not None:
            echo(f"Reload: the build failed; still serving the previous build.\n{failure}")
            return
        after = model_hashes(self.build.output)
        diff = changes(self.hashes, after)
        self.hashes = after
        subset = self.subset

        def wanted(name: str) -> bool:
            return subset is None or name in subset

        load = [n for n in diff.changed if wanted(n)] + ([] if subset is not None else list(diff.added))
        unload = [n for n in diff.removed if wanted(n)]
        if not load and not unload:
            echo(f"Reload: rebuilt in {time.monotonic() - started:.1f} s; no model changed.")
            return
        echo(f"Reload: rebuilt in {time.monotonic() - started:.1f} s; loading {', '.join(load) or 'none'}" +
             (f", unloading {', '.join(unload)}" if unload else ""))  # fmt: skip
        self._apply(load, unload, [n for n in diff.unchanged if wanted(n)], echo)

    def _apply(self, load: list[str], unload: list[str], unchanged: list[str], echo: Echo) -> None:
        from tritonclient.utils import InferenceServerException

        started = time.monotonic()
        done, failed = [], []
        with self.server.client(timeout=_LOAD_TIMEOUT_S) as client:
            for name in unload:
                try:
                    client.unload_model(name)
                    done.append(f"unloaded {name}")
                except InferenceServerException as exc:
                    failed.append(f"  {name}: unloading failed: {reason_line(exc.message() or str(exc))}")
            for name in load:
                try:
                    client.load_model(name)
                    done.append(name)
                except InferenceServerException as exc:
                    failed.append(f"  {name}: {reason_line(exc.message() or str(exc))}")
        took = f"{time.monotonic() - started:.1f} s"
        if done:
            echo(f"Reload: {', '.join(done)} reloaded in {took}; unchanged: {', '.join(unchanged) or 'none'}.")
        if failed:
            echo("Reload: failed to load, so the previous build of each keeps serving (traceback in the log):")
            for line in failed:
                echo(line)


def check_models(repository: Path, wanted: Iterable[str]) -> list[str]:
    """The ``--model`` names, each a model of ``repository``; a :class:`RepogenError` names the others."""
    names = sorted(m.name for m in model_dirs(repository) if m.has_config)
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise RepogenError(
            f"--model {', '.join(unknown)}: no such model in {repository}; its models are {', '.join(names) or 'none'}."
        )
    return list(dict.fromkeys(wanted))
