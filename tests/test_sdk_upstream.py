"""claude-agent-sdk's own session tests, run against ``sessiondex`` with only the import
changed.

``from claude_agent_sdk import X`` → ``from sessiondex import X`` is the promise; the
SDK's ``tests/test_sessions.py`` and ``tests/test_session_mutations.py`` (from the sdist
of the installed version, fetched by tests/fetch_sdk_tests.py or found in
``$SESSIONDEX_SDK_TESTS``) are the judge. Each file is rewritten into tmp_path: every
public name it imports from the SDK, including ones taken through a private module path,
comes from ``sessiondex`` instead. The files then run in a pytest subprocess, minus:

* tests of the SDK's private helpers (``_sanitize_path``, ``_try_append``, …): they test
  the SDK's code, not ours; found by reading each test, not by a hand-kept list;
* the deliberate divergences in :data:`DIVERGENCES`, each explained there and in
  docs/sdk-compat.md.

Private helpers the test fixtures use (``_sanitize_path`` to name a project dir) still
come from the installed SDK. The subprocess gets its own HOME and cache dir, so the
default index lives in tmp_path, and is shared by all the SDK's tests: each points
``CLAUDE_CONFIG_DIR`` somewhere new, which is the roots-change-between-calls case.
"""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests import fetch_sdk_tests
from tests.fetch_sdk_tests import FILES, cache_dir, has_files, installed_version

TARGET = "sessiondex"

#: node id → why sessiondex answers differently, on purpose (docs/sdk-compat.md).
DIVERGENCES = {
    "test_sessions.py::TestListSessions::test_custom_title_wins_summary": (
        "puts customTitle inside a {'type':'summary'} record; sessiondex reads each field "
        "only from records of its own type (a custom title from 'custom-title' records), "
        "so a key nested in another record, or in a tool input, is never a title"
    ),
}


def _source_dir() -> Path | None:
    given = os.environ.get("SESSIONDEX_SDK_TESTS")
    if given:
        for folder in (Path(given), Path(given) / "tests"):
            if has_files(folder):
                return folder
        return None
    version = installed_version()
    if version is None:
        return None
    folder = cache_dir(version)
    return folder if has_files(folder) else None


def _public_names() -> set[str]:
    import sessiondex

    return set(sessiondex.__all__)


def rewrite_imports(source: str, public: set[str]) -> tuple[str, list[str]]:
    """``source`` with every public name imported from ``claude_agent_sdk`` (any module
    of it) imported from ``sessiondex``; returns the text and the names moved."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    moved: list[str] = []
    edits: list[tuple[int, int, str]] = []
    for node in tree.body:
        if not (isinstance(node, ast.ImportFrom) and node.module):
            continue
        module = node.module
        if module != "claude_agent_sdk" and not module.startswith("claude_agent_sdk."):
            continue
        names = [(a.name, a.asname) for a in node.names]
        ours = [n for n in names if module == "claude_agent_sdk" or n[0] in public]
        theirs = [n for n in names if n not in ours]
        if not ours:
            continue

        def clause(items: list[tuple[str, str | None]]) -> str:
            return ", ".join(f"{n} as {a}" if a else n for n, a in items)

        text = f"from {TARGET} import {clause(ours)}\n"
        if theirs:
            text = f"from {module} import {clause(theirs)}\n" + text
        edits.append((node.lineno - 1, node.end_lineno or node.lineno, text))
        moved.extend(n for n, _ in ours)
    for start, end, text in reversed(edits):
        lines[start:end] = [text]
    return "".join(lines), moved


def private_helper_tests(source: str, filename: str) -> list[str]:
    """Node ids of tests whose body names one of the SDK's private helpers directly:
    they test the SDK's internals. (Fixtures reach ``_sanitize_path`` through a
    module-level helper; those tests are about public functions and stay.)"""
    tree = ast.parse(source)
    private = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("claude_agent_sdk.")
        for alias in node.names
        if (alias.asname or alias.name).startswith("_")
    }
    found = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name.startswith(
                "test"
            ):
                names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
                if names & private:
                    found.append(f"{filename}::{cls.name}::{fn.name}")
    return found


def _defined(source: str, node_id: str) -> bool:
    """Whether ``file::Class::test`` still names a test in ``source``."""
    _file, cls_name, fn_name = node_id.split("::")
    for cls in ast.parse(source).body:
        if isinstance(cls, ast.ClassDef) and cls.name == cls_name:
            return any(getattr(fn, "name", None) == fn_name for fn in cls.body)
    return False


def test_readme_and_ci_fetch_the_tests_before_pytest() -> None:
    """The README's test command is what ``.ci/run`` runs, and both fetch the SDK's
    tests first, so a fresh checkout runs them instead of skipping."""
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    ci = (root / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in readme.splitlines()
    assert ci.index("tests/fetch_sdk_tests.py") < ci.index("-m pytest")


def _sdist(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_unpack_takes_only_the_two_test_files(tmp_path: Path) -> None:
    sdist = _sdist(
        tmp_path / "sdk.tar.gz",
        {
            "../tests/test_sessions.py": b"E",
            "sdk-1.0/tests/test_sessions.py": b"A",
            "sdk-1.0/tests/test_session_mutations.py": b"B",
            "sdk-1.0/tests/conftest.py": b"C",
            "sdk-1.0/src/tests/test_sessions.py": b"D",
        },
    )
    dest = tmp_path / "out"
    fetch_sdk_tests.unpack(sdist, dest)
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == {
        "test_sessions.py": b"A",
        "test_session_mutations.py": b"B",
    }


def test_unpack_refuses_an_sdist_without_the_tests(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path / "sdk.tar.gz", {"sdk-1.0/tests/test_sessions.py": b"A"})
    with pytest.raises(RuntimeError, match="test_session_mutations.py"):
        fetch_sdk_tests.unpack(sdist, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_fetch_uses_the_cache_and_never_fails_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SESSIONDEX_SDK_TESTS", raising=False)
    calls: list[str] = []

    def offline(version: str, dest: Path) -> None:
        calls.append(version)
        raise OSError("network unreachable")

    monkeypatch.setattr(fetch_sdk_tests, "download", offline)
    assert fetch_sdk_tests.main(["--dest", str(tmp_path), "--version", "9.9.9"]) == 0
    assert calls == ["9.9.9"] and "network unreachable" in capsys.readouterr().err
    cached = cache_dir("9.9.9", tmp_path)
    cached.mkdir(parents=True)
    for name in FILES:
        (cached / name).write_text("", encoding="utf-8")
    assert fetch_sdk_tests.main(["--dest", str(tmp_path), "--version", "9.9.9"]) == 0
    assert calls == ["9.9.9"]  # present: no second download


def test_rewrite_moves_public_names_only() -> None:
    source = (
        "from claude_agent_sdk import (\n    list_sessions,\n    SessionMessage,\n)\n"
        "from claude_agent_sdk._internal.sessions import _sanitize_path, get_session_messages\n"
        "from claude_agent_sdk._internal.sessions import _simple_hash as h\n"
        "import os\n"
    )
    text, moved = rewrite_imports(
        source, {"list_sessions", "SessionMessage", "get_session_messages"}
    )
    assert text == (
        "from sessiondex import list_sessions, SessionMessage\n"
        "from claude_agent_sdk._internal.sessions import _sanitize_path\n"
        "from sessiondex import get_session_messages\n"
        "from claude_agent_sdk._internal.sessions import _simple_hash as h\n"
        "import os\n"
    )
    assert moved == ["list_sessions", "SessionMessage", "get_session_messages"]


@pytest.mark.long
def test_sdk_session_tests_pass_against_sessiondex(tmp_path: Path) -> None:
    pytest.importorskip("claude_agent_sdk", reason="the SDK's test fixtures import its helpers")
    source_dir = _source_dir()
    if source_dir is None:
        pytest.skip(
            "claude-agent-sdk's session tests not found: run `python tests/fetch_sdk_tests.py` "
            "(downloads the installed version's sdist once) or set $SESSIONDEX_SDK_TESTS "
            "to a directory holding test_sessions.py and test_session_mutations.py"
        )
    public = _public_names()
    work = tmp_path / "sdk"
    (work / "tests").mkdir(parents=True)
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    # As for every test of ours (conftest.py): no writer of the SDK's tests rewrites a
    # transcript, so an append to a file written a moment ago need not wait the 0.25 s a
    # rewrite by Claude Code may take to land (~5 s of the run, a dozen mutation tests).
    (work / "tests" / "conftest.py").write_text(
        "from sessiondex.transcripts import write\n\nwrite.REWRITE_SETTLE_SECONDS = 0.02\n",
        encoding="utf-8",
    )
    deselect: list[str] = []
    for name in FILES:
        original = (source_dir / name).read_text(encoding="utf-8")
        text, moved = rewrite_imports(original, public)
        assert moved, f"{name}: no public SDK import found to redirect"
        assert not rewrite_imports(text, public)[1], f"{name}: a public import left behind"
        (work / "tests" / name).write_text(text, encoding="utf-8")
        deselect += [f"tests/{i}" for i in private_helper_tests(original, name)]
        for node_id in DIVERGENCES:
            if node_id.startswith(f"{name}::"):
                assert _defined(original, node_id), f"stale divergence {node_id}: not in {name}"
                deselect.append(f"tests/{node_id}")

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIONDEX_DB", "CLAUDE_CONFIG_DIR")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1")
    report = work / "report.xml"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", "pytest.ini"]
    args += ["--rootdir", str(work), f"--junitxml={report}"]
    for node_id in deselect:
        args += ["--deselect", node_id]
    args += [f"tests/{name}" for name in FILES]
    done = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=600)

    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    cases = ET.parse(report).getroot().iter("testcase")
    outcome: dict[str, str] = {}
    for case in cases:
        node = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome[node] = "failed"
        elif case.find("skipped") is not None:
            outcome[node] = "skipped"
        else:
            outcome[node] = "passed"
    failed = sorted(n for n, o in outcome.items() if o == "failed")
    skipped = sorted(n for n, o in outcome.items() if o == "skipped")
    assert done.returncode == 0 and not failed, (
        f"{len(failed)} of the SDK's tests fail against sessiondex: {failed}\n"
        + done.stdout[-6000:]
    )
    assert not skipped, f"SDK tests skipped: {skipped}"
    # The bulk really ran: a rewrite that silently emptied the files would pass vacuously.
    assert sum(o == "passed" for o in outcome.values()) >= 100, done.stdout[-2000:]
