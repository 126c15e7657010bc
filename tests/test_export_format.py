"""export: the format comes from --format or FILE's extension; an extension that names
no format is a usage error, never Markdown written into x.pdf."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_show import _run, _session


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
