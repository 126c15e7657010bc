"""export: the format comes from --format or FILE's extension; an extension that names
no format is a usage error, never Markdown written into x.pdf."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import ConfigTree, run_cli_after_mounts, run_cli_in_bind_mount
from tests.test_show import CWD, _run, _session


@pytest.mark.parametrize(
    ("name", "options", "code", "starts"),
    [
        ("x.pdf", [], 2, None),
        ("x.PDF", [], 2, None),
        ("x.docx", [], 2, None),
        ("notes.md.bak", [], 2, None),
        ("x.pdf", ["--format", "md"], 0, "# scenario plain"),  # said explicitly: as asked
        ("x.md", ["--format", "html"], 0, "<!DOCTYPE html>"),
        ("x.HTML", [], 0, "<!DOCTYPE html>"),
        ("x.htm", [], 0, "<!DOCTYPE html>"),
        ("x.markdown", [], 0, "# scenario plain"),
        ("x.txt", [], 0, "# scenario plain"),
        ("x.json", [], 0, "[\n"),
        ("notes", [], 0, "# scenario plain"),  # no extension: Markdown
    ],
)
def test_export_format_choice(
    tmp_path: Path, name: str, options: list[str], code: int, starts: str | None
) -> None:
    tree, s, _ = _session(tmp_path, "plain")
    target = tmp_path / name
    result = _run(tree, tmp_path, "export", s.session_id, "-o", str(target), *options)
    assert result.exit_code == code, result.output
    if starts is None:
        extension = name.rsplit(".", 1)[1].lower()
        assert result.stderr == (
            f"Error: Invalid value for '-o' / '--output': unknown extension '.{extension}'"
            " (export writes .html, .htm, .json, .md, .markdown or .txt;"
            " or pass --format md|html|json)\n"
        )
        assert not target.exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".x")] == []
    else:
        assert target.read_text(encoding="utf-8").startswith(starts)


def _fifo(path: Path) -> None:
    import os

    os.mkfifo(path)


def _socket(path: Path) -> None:
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()


def _link_to_fifo(path: Path) -> None:
    _fifo(path.with_name("real-fifo"))
    path.symlink_to(path.with_name("real-fifo"))


@pytest.mark.parametrize(
    ("make", "kind"),
    [(_fifo, "a FIFO"), (_socket, "a socket"), (_link_to_fifo, "a FIFO")],
    ids=["fifo", "socket", "link-to-fifo"],
)
def test_export_force_never_replaces_a_special_file(tmp_path: Path, make: Any, kind: str) -> None:
    """--force renamed the new file over whatever the name was: as root,
    ``-o /dev/null --force`` replaced /dev/null itself (a device; FIFOs and sockets
    stand in for it here, made without root)."""
    import stat

    tree, s, _ = _session(tmp_path, "plain")
    target = tmp_path / "out.md"
    make(target)
    before = target.lstat().st_mode
    result = _run(tree, tmp_path, "export", s.session_id, "-o", str(target), "--force")
    assert result.exit_code == 2, result.output
    assert f"is {kind}, not a file" in result.stderr
    assert target.lstat().st_mode == before and not stat.S_ISREG(before)


def test_an_error_quoting_a_typed_path_is_cleaned(tmp_path: Path) -> None:
    """ "already exists" printed the -o path raw: an escape sequence in it reached the
    terminal (CliRunner keeps colours and escapes with color=True, as a terminal gets)."""
    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    tree, s, _ = _session(tmp_path, "plain")
    name = tmp_path / "a\x1b[2Jb.md"
    name.write_text("mine")
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "index.db"), "export",
         s.session_id, "-o", str(name)],
        color=True,
    )  # fmt: skip
    assert result.exit_code == 1
    assert "\x1b" not in result.stderr and "a^[[2Jb.md already exists" in result.stderr


def _two_sessions(tmp_path: Path) -> tuple[ConfigTree, Any, Any]:
    """A config dir with two sessions of one project: the one exported, and the one a
    bad -o would overwrite."""
    tree = ConfigTree(tmp_path / "claude")
    s, other = tree.session(cwd=CWD), tree.session(cwd=CWD)
    for session in (s, other):
        session.user("hello")
        session.write()
    return tree, s, other


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("out/lk/../{key}/{other}.jsonl", "is inside"),  # another session's transcript
        ("out/lk/../../../index.db", "is the index's own file"),
        ("out/lk/../fifo", "is a FIFO"),
        ("out/to-file.md", "is a symbolic link"),  # /dev/stdout is such a link
    ],
    ids=["transcript", "index", "fifo", "link-name"],
)
def test_export_resolves_dot_dot_after_a_symlinked_folder_as_the_kernel_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, said: str
) -> None:
    """``out/lk/../x``, with ``lk`` a link into ``projects/<key>``, names ``projects/x``
    for the kernel, but ``abspath`` folded it to ``out/x``: every path rule passed, and
    --force overwrote a transcript, the index or a FIFO."""
    import os

    tree, s, other = _two_sessions(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "lk").symlink_to(s.project_dir)
    os.mkfifo(s.project_dir.parent / "fifo")
    (out / "real.md").write_text("mine")
    (out / "to-file.md").symlink_to(out / "real.md")
    monkeypatch.chdir(tmp_path)
    before = {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")}
    path = target.format(key=s.project_dir.name, other=other.session_id)
    result = _run(tree, tmp_path, "export", s.session_id, "-o", path, "--format", "md", "--force")
    assert result.exit_code == 2, result.output
    assert said in result.stderr
    assert {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")} == before
    assert (out / "to-file.md").is_symlink() and (out / "real.md").read_text() == "mine"


@pytest.mark.parametrize("target", ["transcript", "index", "one-project-folder"])
def test_export_into_projects_mounted_at_another_path_is_refused(
    tmp_path: Path, target: str
) -> None:
    """A folder bind-mounted at a second path (a container volume) shares no path with
    projects/ for realpath to see: export -o through it replaced a transcript."""
    tree, s, other = _two_sessions(tmp_path)
    db_dir = tmp_path / "data"
    db_dir.mkdir()
    mounted = tmp_path / "mounted"
    source, out = {
        "transcript": (tree.projects_dir, f"{s.project_dir.name}/{other.session_id}.jsonl"),
        "index": (db_dir, "index.db"),
        # neither a path nor an ancestor in common with projects/
        "one-project-folder": (s.project_dir, f"{other.session_id}.jsonl"),
    }[target]
    before = {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")}
    args = ["--config-dir", str(tree.root), "--db", str(db_dir / "index.db"), "export"]
    result = run_cli_in_bind_mount(
        source,
        mounted,
        [*args, s.session_id, "-o", str(mounted / out), "--format", "md", "--force"],
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "mounted at another path" in result.stderr or "index's own file" in result.stderr
    assert {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")} == before


@pytest.mark.parametrize(
    ("case", "refused"),
    [
        ("project-folder-is-its-own-volume", True),
        ("covered-mount", True),
        ("fresh-tmpfs-over-a-bind", False),
        ("overlay-with-its-upper-layer-in-projects", True),
        ("overlay-with-its-upper-layer-on-the-index", True),
        ("overlay-with-a-relative-upper-layer", True),
        ("overlay-mounted-on-a-project-folder", True),
        ("overlay-mounted-on-a-project-folder-lower-layer", True),
    ],
)
def test_export_through_stacked_and_nested_mounts(tmp_path: Path, case: str, refused: bool) -> None:
    """A project folder on a volume of its own, reached through a bind of it, was not
    seen as inside projects/ (its device is not projects/'s); a mount covered by a later
    one above it fooled the lookup into another file system, both ways."""
    tree, s, other = _two_sessions(tmp_path)
    m = tmp_path / "m"
    data = tmp_path / "data"  # the index's folder
    data.mkdir()
    project = s.project_dir
    vol = tree.projects_dir / "-vol"
    vol.mkdir()
    setups = {
        # projects/-vol is a tmpfs of its own, bound again at m/v; write a transcript there
        "project-folder-is-its-own-volume": (
            f"mkdir -p {m}/v && mount -t tmpfs t {vol} && cp {other.path} {vol}/"
            f" && mount --bind {vol} {m}/v",
            m / "v" / other.path.name,
        ),
        # a tmpfs at m/hk/<id>, then a bind of the project folder over m/hk: the path
        # m/hk/<id>/… reaches the session's folder, not the covered tmpfs
        "covered-mount": (
            f"mkdir -p {m}/hk/{s.session_id} && mount -t tmpfs t {m}/hk/{s.session_id}"
            f" && mount --bind {project} {m}/hk && mkdir -p {project}/{s.session_id}",
            m / "hk" / s.session_id / "notes.md",
        ),
        # every write through an overlay lands in its upper layer: here a project folder
        "overlay-with-its-upper-layer-in-projects": (
            f"mkdir -p {m}/low {m}/work {m}/ov && mount -t overlay overlay"
            f" -o lowerdir={m}/low,upperdir={project},workdir={m}/work {m}/ov",
            m / "ov" / other.path.name,
        ),
        "overlay-with-its-upper-layer-on-the-index": (
            f"mkdir -p {m}/low {m}/work {m}/ov && mount -t overlay overlay"
            f" -o lowerdir={m}/low,upperdir={data},workdir={m}/work {m}/ov",
            m / "ov" / "index.db",
        ),
        # mount(8) resolved a relative upperdir from its own cwd: no one can tell now
        "overlay-with-a-relative-upper-layer": (
            f"mkdir -p {m}/low {m}/work {m}/ov && cd {tree.projects_dir} && mount -t overlay"
            f" overlay -o lowerdir={m}/low,upperdir={project.name},workdir={m}/work {m}/ov",
            m / "ov" / other.path.name,
        ),
        # a project folder that is an overlay: writing straight into its upper layer
        "overlay-mounted-on-a-project-folder": (
            f"mkdir -p {m}/low {m}/up {m}/work && mount -t overlay overlay"
            f" -o lowerdir={m}/low,upperdir={m}/up,workdir={m}/work {project}",
            m / "up" / "dddddddd-4444-4000-8000-000000000004.jsonl",
        ),
        # ... and into its lower layer, where a transcript not copied up lives alone
        "overlay-mounted-on-a-project-folder-lower-layer": (
            f"mkdir -p {m}/low {m}/up {m}/work && mount -t overlay overlay"
            f" -o lowerdir={m}/low,upperdir={m}/up,workdir={m}/work {project}",
            m / "low" / "dddddddd-4444-4000-8000-000000000004.jsonl",
        ),
        # a bind of projects/ at m/fx/p, then a fresh tmpfs over m/fx: m/fx/p is new
        "fresh-tmpfs-over-a-bind": (
            f"mkdir -p {m}/fx/p && mount --bind {tree.projects_dir} {m}/fx/p"
            f" && mount -t tmpfs t {m}/fx && mkdir {m}/fx/p",
            m / "fx" / "p" / "out.md",
        ),
    }
    setup, target = setups[case]
    before = {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")}
    args = ["--config-dir", str(tree.root), "--db", str(data / "index.db"), "export"]
    result = run_cli_after_mounts(
        setup, [*args, s.session_id, "-o", str(target), "--format", "md", "--force"]
    )
    assert result.returncode == (2 if refused else 0), (result.stdout, result.stderr)
    assert {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")} == before


def test_mountinfo_paths_are_unescaped_as_the_kernel_and_overlay_escape_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mountinfo writes a space, tab, newline and backslash as \\ooo, and overlay
    writes a comma in a layer's path as a backslash and the comma: the upper layer
    'my cfg,x' was looked for as 'my cfg\\,x' and the check fell back to its parent."""
    import builtins
    import io

    from sessiondex.actions import paths

    line = (
        "90 30 0:50 / /m/ov rw - overlay overlay rw,lowerdir=/m/low,"
        "upperdir=/t/my\\040cfg\\134\\054x/projects/-w,workdir=/m/work\n"
        "91 30 0:51 /sub /m/b\\040c rw - ext4 /dev/x rw\n"
    )
    real_open = builtins.open
    monkeypatch.setattr(
        builtins,
        "open",
        lambda f, *a, **k: (
            io.StringIO(line) if f == "/proc/self/mountinfo" else real_open(f, *a, **k)
        ),
    )
    ov, bind = paths._mounts()
    assert (ov.point, ov.upper, ov.lower) == ("/m/ov", "/t/my cfg,x/projects/-w", ("/m/low",))
    assert (bind.point, bind.root, bind.upper) == ("/m/b c", "/sub", "")
