"""Paths the user names for writing never land on the truth or the index (issue 14, item 2).

``export -o PATH --force`` and ``cleanup --apply --archive DIR`` refuse, with exit 2 and
one line, any path inside a configured config dir's ``projects/`` (directly, through a
symlink, through ``..``, relative, in a second config dir) and the index database with
its side files; nothing anywhere changes. ``-o -`` writes to standard output.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from tests.builders import ConfigTree

CWD = "/home/dev/out-proj"  # does not exist: no git repository
OLD = 1_700_000_000  # long expired: cleanup --apply would delete it


class World:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.tree = ConfigTree(base / "claude")
        self.tree2 = ConfigTree(base / "claude2")
        s = self.tree.session(CWD)
        s.meta("custom-title", customTitle="Exported work")
        s.user("export this session")
        s.assistant("exported answer")
        s.write(mtime=OLD)
        self.session = s
        # A session of its own: two trees built alike would give it the first one's ID,
        # a copy of it whose tie on mtime decides which one an export reads.
        t = self.tree2.session(CWD, session_id="5e1f0a2c-7b3d-4e8f-9a61-2c4d6e8f0a1b")
        t.user("second config dir")
        t.assistant("ok")
        t.write(mtime=OLD)
        self.other = t
        self.db = base / "cache" / "index.db"
        (base / "elsewhere").mkdir()
        os.symlink(s.project_dir, base / "link-to-project")
        os.symlink(s.path, base / "elsewhere" / "looks-harmless.md")
        # A link inside projects/ to a file outside: writing through it is safe, but an
        # output renamed into place would replace the link with a file in projects/.
        os.symlink(base / "elsewhere" / "outside.md", s.project_dir / "notes-link.md")
        result = self.run("index")
        assert result.exit_code == 0, result.output

    def run(self, *args: str) -> Any:
        return CliRunner().invoke(
            cli,
            [
                "--config-dir",
                str(self.tree.root),
                "--config-dir",
                str(self.tree2.root),
                "--db",
                str(self.db),
                *args,
            ],
        )

    def snapshot(self, index: bool = True) -> dict[str, tuple[bytes | str, int]]:
        """Every file and link under the test's base: content (or link target), mtime;
        without the index's folder unless ``index``."""
        out: dict[str, tuple[bytes | str, int]] = {}
        for dirpath, dirnames, filenames in os.walk(self.base):
            if not index and Path(dirpath) == self.db.parent:
                continue
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                if os.path.islink(path):
                    out[path] = (os.readlink(path), st.st_mtime_ns)
                elif os.path.isfile(path):
                    out[path] = (Path(path).read_bytes(), st.st_mtime_ns)
        return out


@pytest.fixture()
def world(tmp_path: Path) -> World:
    return World(tmp_path)


NEW_ID = "0f0f0f0f-0000-4000-8000-000000000f0f"

# (name, the path as a function of the world) — every one must be refused.
REFUSED: list[tuple[str, Callable[[World], str]]] = [
    ("own transcript", lambda w: str(w.session.path)),
    ("planted transcript", lambda w: str(w.session.project_dir / f"{NEW_ID}.jsonl")),
    ("file in the project dir", lambda w: str(w.session.project_dir / "notes.md")),
    ("projects/ itself", lambda w: str(w.tree.projects_dir / "x.md")),
    ("via a symlinked dir", lambda w: str(w.base / "link-to-project" / f"{NEW_ID}.jsonl")),
    ("a link to the transcript", lambda w: str(w.base / "elsewhere" / "looks-harmless.md")),
    (
        "via ..",
        lambda w: (
            str(w.base / "elsewhere" / ".." / "claude" / "projects" / w.session.project_dir.name)
            + f"/{NEW_ID}.jsonl"
        ),
    ),
    (
        "a link inside projects/ pointing out",
        lambda w: str(w.session.project_dir / "notes-link.md"),
    ),
    ("second config dir", lambda w: str(w.other.path)),
    ("the database", lambda w: str(w.db)),
    ("database -wal", lambda w: f"{w.db}-wal"),
    ("database -shm", lambda w: f"{w.db}-shm"),
    ("watch lock", lambda w: f"{w.db}.watch.lock"),
    ("database via ..", lambda w: str(w.base / "elsewhere" / ".." / "cache" / "index.db")),
]


def _assert_refused(world: World, result: Any, before: dict[str, Any], index: bool = True) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: ") and "Traceback" not in result.output
    assert world.snapshot(index) == before


@pytest.mark.parametrize(("name", "where"), REFUSED, ids=[n for n, _ in REFUSED])
def test_export_refuses_paths_over_transcripts_or_the_index(
    world: World, name: str, where: Callable[[World], str]
) -> None:
    before = world.snapshot()
    result = world.run(
        "export", world.session.session_id, "-o", where(world), "--force", "--cwd", CWD
    )
    _assert_refused(world, result, before)


@pytest.mark.parametrize(("name", "where"), REFUSED, ids=[n for n, _ in REFUSED])
def test_cleanup_archive_refuses_the_same_paths(
    world: World, name: str, where: Callable[[World], str]
) -> None:
    before = world.snapshot()
    result = world.run("cleanup", "--days", "1", "--apply", "--archive", where(world))
    _assert_refused(world, result, before)


# Outside projects/ but inside a config dir: fine for one exported file, never for an
# archive (Claude Code's housekeeping prunes backups/, uploads/, debug/… by age, and an
# archive may be the only copy left) — as ``archive --to`` refuses them.
ARCHIVE_REFUSED: list[tuple[str, Callable[[World], str]]] = [
    ("config dir backups/", lambda w: str(w.tree.root / "backups" / "claude-archive")),
    ("config dir itself", lambda w: str(w.tree.root)),
    ("second config dir debug/", lambda w: str(w.tree2.root / "debug")),
]


@pytest.mark.parametrize(("name", "where"), ARCHIVE_REFUSED, ids=[n for n, _ in ARCHIVE_REFUSED])
@pytest.mark.parametrize("command", ["cleanup", "archive"])
def test_archives_never_go_inside_a_config_dir(
    world: World, name: str, where: Callable[[World], str], command: str
) -> None:
    before = world.snapshot()
    if command == "cleanup":
        result = world.run("cleanup", "--days", "1", "--apply", "--archive", where(world))
    else:
        result = world.run("archive", "--to", where(world), "--cwd", CWD)
    _assert_refused(world, result, before)


def test_a_relative_path_inside_projects_is_refused(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(world.session.project_dir)
    before = world.snapshot()
    result = world.run("export", world.session.session_id, "-o", "out.md", "--cwd", CWD)
    _assert_refused(world, result, before)


def test_export_to_stdout_and_to_an_ordinary_path(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(world.base)
    result = world.run("export", world.session.session_id, "-o", "-", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# Exported work")
    assert not (world.base / "-").exists()
    # Beside the index, under a name that is not the index's, is fine.
    target = world.db.parent / "notes.md"
    result = world.run("export", world.session.session_id, "-o", str(target), "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert target.read_text().startswith("# Exported work")


@pytest.mark.parametrize("where", ["its own transcript", "beside it", "its projects/"])
def test_export_by_path_protects_the_config_dir_the_transcript_came_from(
    world: World, where: str
) -> None:
    """A transcript read by path may come from a config dir not in use: its projects/ is
    Claude Code's all the same (``export <it> -o <it> --force`` replaced a transcript
    with its own JSON export)."""
    third = ConfigTree(world.base / "claude3")
    t = third.session(CWD)
    t.user("a third config dir, never configured")
    t.write(mtime=OLD)
    target = {
        "its own transcript": t.path,
        "beside it": t.project_dir / "notes.md",
        "its projects/": third.projects_dir / "x.md",
    }[where]
    before = world.snapshot(index=False)  # reading by path may refresh the index
    result = world.run("export", str(t.path), "-o", str(target), "--force", "--format", "json")
    _assert_refused(world, result, before, index=False)


def test_export_never_writes_over_the_transcript_it_reads(world: World) -> None:
    """Outside any config dir too: a transcript kept in a plain folder."""
    loose = world.base / "elsewhere" / f"{NEW_ID}.jsonl"
    loose.write_bytes(world.session.path.read_bytes())
    before = world.snapshot(index=False)
    result = world.run("export", str(loose), "-o", str(loose), "--force", "--format", "json")
    _assert_refused(world, result, before, index=False)


@pytest.mark.parametrize(
    ("parent", "says"),
    [("missing", "does not exist"), ("a-file", "is not a directory")],
)
def test_an_output_in_a_folder_that_cannot_be_one_says_which(
    world: World, parent: str, says: str
) -> None:
    """Helper 93: ``export -o settings.json/x.md`` (a file as the folder) said the
    directory "does not exist"."""
    (world.base / "a-file").write_text("not a folder\n")
    target = world.base / parent / "x.md"
    result = world.run("export", world.session.session_id, "-o", str(target), "--cwd", CWD)
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == f"Error: {world.base / parent} {says}"
