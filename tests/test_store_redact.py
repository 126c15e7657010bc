"""Redaction before push: real-looking secrets go, harmless look-alikes stay.

Every secret below is fake but well-formed (the shape a real one has); the look-alikes
are what transcripts are full of and must survive untouched.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from sessiondex.store.push import TOOL_OUTPUT_OMITTED, prepare, strip_tool_outputs
from sessiondex.store.redact import Finding, mask, redact_text, redact_value

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
    "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\n"
    "Z1BjP5CE/Wm/Rr500P\n-----END RSA PRIVATE KEY-----"
)

# (text, kind, the secret itself): the secret must vanish and [REDACTED:kind] appear.
SECRETS = [
    ("aws key AKIAIOSFODNN7EXAMPLE in a prompt", "aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "secret-assignment",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "maps key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY ok",
        "gcp-api-key",
        "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    ),
    (
        "client 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",
        "gcp-oauth-secret",
        "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",
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
        "lJzRc1YdHaAA2KCNJJ1tkYwF/+mKK6Ygw0NGe170Xu592euJv2wYUtBlV8z+qnlcNQSnIYVTkLWntUO1F8j8rQ==",
        "azure-storage-key",
        "lJzRc1YdHaAA2KCNJJ1tkYwF/+mKK6Ygw0NGe170Xu592euJv2wYUtBlV8z",
    ),
    (
        "secret abc8Q~Zr5mT1qW2eR3tY4uI5oP6aS7dF8gH9jK0l is set",
        "azure-client-secret",
        "abc8Q~Zr5mT1qW2eR3tY4uI5oP6aS7dF8gH9jK0l",
    ),
    (
        "gh auth: ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
        "github-token",
        "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
    ),
    (
        "export GH=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV",
        "github-token",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    ("token: glpat-xY9zAb3CdEfGh1JkLmNo", "gitlab-token", "glpat-xY9zAb3CdEfGh1JkLmNo"),
    (
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "slack-token",
        "AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    (
        "curl https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "slack-webhook",
        "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    (f"Authorization: Bearer {JWT}", "jwt", JWT),
    (f"the cookie was {JWT}", "jwt", JWT),
    (f"key file:\n{PEM}\nthat's it", "private-key", "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (cut)",
        "private-key",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    (
        "ANTHROPIC_API_KEY=sk-ant-api03-Xy7_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL-mnop",
        "anthropic-key",
        "sk-ant-api03-Xy7_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL-mnop",
    ),
    (
        "openai sk-proj-AbCdEfGhIjKlMnOpQrSt0123T3BlbkFJuVwXyZ0123456789abcdEF",
        "openai-key",
        "sk-proj-AbCdEfGhIjKlMnOpQrSt0123T3BlbkFJuVwXyZ0123456789abcdEF",
    ),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe-key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    (
        "//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "npm-token",
        "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ),
    (
        "DATABASE_URL=postgres://app:pa55word-XyZ@db.example.com:5432/app",
        "url-credentials",
        "pa55word-XyZ",
    ),
    ("Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "basic-auth", "YWxhZGRpbjpvcGVuc2VzYW1l"),
    ("password=hunter2secret", "secret-assignment", "hunter2secret"),
    ('DB_PASSWORD="s3cr3t-Pa55w0rd!"', "secret-assignment", "s3cr3t-Pa55w0rd!"),
    ('{"client_secret": "9aX-Qe7_Lm2Zp"}', "secret-assignment", "9aX-Qe7_Lm2Zp"),
    ("config:\n  db_password: Tr0ub4dor&3\n  user: app", "secret-assignment", "Tr0ub4dor&3"),
    (
        "SECRET_KEY := 9f86d081884c7d659a2feaa0c55ad015",
        "secret-assignment",
        "9f86d081884c7d659a2feaa0c55ad015",
    ),
    (
        "DEPLOY_SIGNING=q8Fz2LmN4pR7sT1vX9yB3cD6eG0hJ5kW",
        "high-entropy",
        "q8Fz2LmN4pR7sT1vX9yB3cD6eG0hJ5kW",
    ),
    (
        "  export SESSION_SALT='Zk3vQ9pL2mX7nB4cR8tY1wE6'",
        "high-entropy",
        "Zk3vQ9pL2mX7nB4cR8tY1wE6",
    ),
]

# Text that looks a bit like a secret and is not: it must come back unchanged.
LOOK_ALIKES = [
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it",
    "GIT_COMMIT=3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "session 550e8400-e29b-41d4-a716-446655440000 resumed",
    "RUN_ID=550e8400-e29b-41d4-a716-446655440000",
    f"GREETING={base64.b64encode(b'Hello world, this is a test of plain text').decode()}",
    f"the header is {base64.b64encode(b'ordinary words in base64, nothing secret').decode()}",
    "Reset your password in Settings, then sign in again.",
    "The password is stored in Vault; ask the on-call engineer.",
    "def login(user: str, password: str) -> Token:",
    "password = getpass.getpass()",
    "token = request.headers.get('Authorization')",
    "const tokenSearch = await response.search(tokenId);",
    "api_key = os.environ['OPENAI_API_KEY']",
    'password: "${DB_PASSWORD}"',
    "max_tokens=4096, output_tokens: 1200",
    "PWD=/home/dev/shop",
    "toolu_01ABCdefGHIjklMNOpqrSTU and msg_01XYZ and req_01abc",
    "see https://github.com/acme/shop/pull/412 and git@github.com:acme/shop.git",
    "A bearer token is sent in the Authorization header.",
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "sk-1 and sk_test are just names",
]


@pytest.mark.parametrize(("text", "kind", "secret"), SECRETS, ids=[k for _, k, _ in SECRETS])
def test_secret_is_redacted(text: str, kind: str, secret: str) -> None:
    findings: list[Finding] = []
    out = redact_text(text, findings)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert [f.kind for f in findings] == [kind]
    assert secret not in findings[0].preview


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alike_is_kept(text: str) -> None:
    findings: list[Finding] = []
    assert redact_text(text, findings) == text
    assert findings == []


def test_only_the_secret_goes() -> None:
    assert redact_text("run with password=hunter2secret --verbose") == (
        "run with password=[REDACTED:secret-assignment] --verbose"
    )


@pytest.mark.parametrize(
    ("secret", "preview"),
    [
        ("ghp_1234567890abcdefghijklmnopqrstuvwxyzAB", "ghp_… (42 chars)"),
        ("hunter2", "… (7 chars)"),
    ],
)
def test_preview_never_shows_the_secret(secret: str, preview: str) -> None:
    assert mask(secret) == preview


def test_records_are_walked_and_left_alone_when_clean() -> None:
    clean = {"type": "user", "message": {"content": [{"type": "text", "text": "hello there"}]}}
    assert redact_value(clean) == (clean, False)
    assert redact_value(clean)[0] is clean
    dirty = {
        "type": "assistant",
        "message": {
            "content": [{"type": "tool_use", "input": {"command": "export X=AKIAIOSFODNN7EXAMPLE"}}]
        },
    }
    out, changed = redact_value(dirty)
    assert changed and "AKIA" not in str(out) and "AKIA" in str(dirty)


def test_tool_outputs_are_left_out_but_their_pr_urls_kept() -> None:
    record = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {
                    "tool_use_id": "toolu_1",
                    "type": "tool_result",
                    "content": "https://github.com/acme/shop/pull/7\nAWS_SECRET=abc",
                }
            ],
        },
        "toolUseResult": {"stdout": "https://github.com/acme/shop/pull/7"},
        "uuid": "u1",
    }
    stripped, mentions, omitted = strip_tool_outputs(record)
    assert omitted == 1 and "toolUseResult" not in stripped
    assert stripped["message"]["content"][0]["content"] == TOOL_OUTPUT_OMITTED
    assert stripped["message"]["content"][0]["tool_use_id"] == "toolu_1"
    assert [m.url for m in mentions] == ["https://github.com/acme/shop/pull/7"]
    assert record["toolUseResult"]  # the original is not modified


def test_an_unchanged_line_is_stored_as_its_bytes() -> None:
    line = b'{"type":"user","b":1,  "a":"x"}'
    entry, omitted = prepare(
        line, {"type": "user", "b": 1, "a": "x"}, with_tools=False, findings=[]
    )
    assert entry.text == line.decode() and omitted == 0


def _line(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record)


@pytest.mark.parametrize(("text", "kind", "secret"), SECRETS, ids=[k for _, k, _ in SECRETS])
@pytest.mark.parametrize("where", ["prompt", "tool-input", "json-in-text"])
def test_a_secret_in_a_transcript_line_never_leaves(
    text: str, kind: str, secret: str, where: str
) -> None:
    """Through push's path: the line-level pre-check (which rules can apply to the
    record, read on the JSON-escaped line) must never skip a secret."""
    if where == "prompt":
        record: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": text}}
    elif where == "tool-input":
        record = {
            "type": "assistant",
            "message": {
                "content": [{"type": "tool_use", "name": "Bash", "input": {"command": text}}],
                "usage": {"input_tokens": 4, "output_tokens": 12},
            },
        }
    else:
        record = {"type": "user", "message": {"content": orjson.dumps({"note": text}).decode()}}
    findings: list[Finding] = []
    entry, _ = prepare(_line(record), record, with_tools=False, findings=findings)
    assert secret not in entry.text
    assert kind in {f.kind for f in findings}


@pytest.mark.parametrize(("text", "kind", "secret"), SECRETS, ids=[k for _, k, _ in SECRETS])
@pytest.mark.parametrize("where", ["object-key", "repeated-key"])
def test_a_secret_the_parsed_record_hides_never_leaves(
    text: str, kind: str, secret: str, where: str
) -> None:
    """Strings are keys too (a parsed .env or a headers map in a tool's input); and a
    key written twice in one line keeps only its last value when read, while the line's
    own bytes, stored when nothing was found, still hold the first."""
    if where == "object-key":
        record: dict[str, Any] = {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "input": {"env": {text: "ann"}}}]},
        }
        line = _line(record)
    else:
        record = {"type": "user", "message": {"role": "user", "content": "hello"}}
        shadowed = orjson.dumps(text).decode()
        line = (
            '{"type":"user","message":{"role":"user","content":' + shadowed + ',"content":"hello"}}'
        ).encode()
    findings: list[Finding] = []
    entry, _ = prepare(line, record, with_tools=False, findings=findings)
    assert secret not in entry.text and secret not in orjson.dumps(entry.record).decode()
    assert orjson.loads(entry.text) == entry.record  # what is stored reads back as the record


@pytest.mark.parametrize(
    ("record", "redacted"),
    [
        ({"type": "assistant", "message": {"usage": {"input_tokens": 4}}}, False),
        ({"type": "assistant", "input": {"password": "hunter2x", "tokenizer": "gpt2"}}, True),
        ({"type": "x", "GITHUB_TOKEN": "abc123def", "token_type": "bearer"}, True),
        ({"type": "x", "password": "${DB_PASSWORD}", "secret_name": "prod/db"}, False),
    ],
)
def test_fields_named_like_secrets(record: dict[str, Any], redacted: bool) -> None:
    entry, _ = prepare(_line(record), record, with_tools=False, findings=[])
    assert ("[REDACTED:secret-assignment]" in entry.text) is redacted
    assert "gpt2" in entry.text or "tokenizer" not in str(record)


def test_an_escaped_character_does_not_hide_a_secret() -> None:
    line = b'{"type":"user","message":{"content":"key \\u0041KIAIOSFODNN7EXAMPLE"}}'
    record = orjson.loads(line)
    entry, _ = prepare(line, record, with_tools=False, findings=[])
    assert "AKIAIOSFODNN7EXAMPLE" not in entry.text and "\\u0041KIA" not in entry.text


@pytest.mark.parametrize(
    "text",
    [
        "export SESSION_SALT=Zk3vQ9pL2mX7nB4cR8tY1wE6",  # a line at the very start
        '"Env": ["PATH=/usr/bin", "SESSION_SALT=Zk3vQ9pL2mX7nB4cR8tY1wE6"]',  # docker inspect
        '{\\"db\\": {\\"password\\": \\"Zk3vQ9pL\\\\\\\\2mX\\"}}',  # JSON pasted twice escaped
    ],
)
def test_line_rules_find_lines_inside_json(text: str) -> None:
    out = redact_text(text)
    assert "Zk3vQ9pL" not in out and "[REDACTED:" in out


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # a name of 64 characters after its keyword is still a name
        ("export API_TOKEN_" + "X" * 58 + "=s3cr3tvalue99", True),
        ("api_token_" + "x" * 54 + ": s3cr3tvalue99\n", True),
        # a word of keywords (helper 95: 60 KB of token_token_… took 27 s): no secret
        ("_".join(["token"] * 5000), False),
        ("hi " + "verylongtoken" * 2000, False),
    ],
)
def test_a_names_length_after_its_keyword_is_bounded(text: str, redacted: bool) -> None:
    """The name part of an assignment is at most 64 characters after its keyword, as
    the part read backwards is: unbounded, the pattern ran to the end of a long word
    from every keyword in it (quadratic; the speed is measured, not asserted, here)."""
    from sessiondex.store.redact import redact_text

    out = redact_text(text)
    assert ("[REDACTED:secret-assignment]" in out) is redacted, out
    if not redacted:
        assert out == text


@pytest.mark.parametrize("keyword", ["credentials", "credential", "api_key", "password"])
def test_the_push_path_redacts_what_the_rule_does_at_the_name_bound(keyword: str) -> None:
    """Helper 97: a name of ``credentials`` and 64 more characters was redacted by the
    rule and not on the push path, whose pre-check starts after the trigger
    ``credential`` (one character short of the keyword)."""
    import json

    from sessiondex.store.redact import candidate_rules, redact_text, redact_value

    text = f"export {keyword}{'x' * 64}=Zq8vL2mN4pR7tY1wK9sD3fG6hJ0\n"
    record = {"type": "user", "message": {"role": "user", "content": text}}
    assert "Zq8v" not in redact_text(text)
    pushed = redact_value(record, None, candidate_rules(json.dumps(record)))[0]
    assert "Zq8v" not in json.dumps(pushed)


def test_many_secrets_in_one_text_are_each_redacted_once() -> None:
    """The overlap check compares a span with its neighbour (bisection), not with every
    span found: a log of 20,000 ``token=`` lines took 8 s (speed measured, not asserted
    here); the answer is the same, every secret replaced once."""
    from sessiondex.store.redact import redact_text

    lines = [f"2026-11-01 INFO req {i} token=abcdef{i}xyz ok" for i in range(500)]
    out = redact_text("\n".join(lines) + "\n")
    assert out.count("[REDACTED:secret-assignment]") == 500
    assert "abcdef" not in out


@pytest.mark.parametrize(
    "text",
    [
        "İ DB_PASSWORD=Zx9vQ2mL7pR4tY8w",  # İ lowers to two characters: positions shifted
        "DB_PASSWORD\t=\tZx9vQ2mL7pR4tY8w",  # a JSON \t escape before the pre-check
        "token_中文 = Zx9vQ2mL7pR4tY8w",  # a \u escape on an ASCII-escaped line
        # helper 99: a form feed, an escaped Unicode space, a Kelvin sign in the keyword,
        # and a URL whose slashes a writer escaped (\/)
        "password\f=\fZx9vQ2mL7pR4tY8w",
        'password"\u3000: "Zx9vQ2mL7pR4tY8w"',
        "TO\u212aEN=Zx9vQ2mL7pR4tY8w",
        "git clone https://bob:Zx9vQ2mL7pR4tY8w@git.example.com/r.git",
        # helper 102: a tab or newline escape written in the text itself (JSON pasted as
        # text), doubled on the line the pre-check reads
        "apikey\\t=\\tZx9vQ2mL7pR4tY8w",
        "export token\\n=Zx9vQ2mL7pR4tY8w",
        '{"db_password"\\n:\\t"Zx9vQ2mL7pR4tY8w"}',
    ],
)
def test_a_secret_is_redacted_on_both_paths_whatever_comes_before_it(text: str) -> None:
    """Helper 98 (P1): these reached the team store. ``İ`` before a secret shifted the
    positions the lowered text was read back at; the push path's pre-check on the
    JSON line stopped at the escapes of a tab or a non-ASCII character, so no rule ran."""
    import json

    from sessiondex.store.push import prepare
    from sessiondex.store.redact import candidate_rules, redact_text, redact_value

    record = {
        "type": "user",
        "sessionId": "x",
        "uuid": "u",
        "timestamp": "2026-11-20T10:00:00.000Z",
        "message": {"role": "user", "content": text},
    }
    assert "Zx9v" not in redact_text(text)
    for line in (
        json.dumps(record),
        json.dumps(record, ensure_ascii=False),
        json.dumps(record).replace("/", "\\/"),
    ):
        pushed = redact_value(record, None, candidate_rules(line))[0]
        assert "Zx9v" not in json.dumps(pushed), line
    prepared, _ = prepare(json.dumps(record).encode(), record, with_tools=True, findings=[])
    assert "Zx9v" not in str(prepared)


def test_many_assignments_on_lines_are_each_redacted() -> None:
    """Helper 98: the line-head check searched back to the text's start for each match
    (20,000 lines: 2 s, 40,000: 8 s; measured, not asserted); only 200 characters back
    matter. The answer is the same."""
    from sessiondex.store.redact import redact_text

    text = "\n".join(f"DB_PASSWORD_{i}=Zx9vQ2mL7pR4tY8w{i:06d}" for i in range(500))
    assert redact_text(text).count("[REDACTED") == 500


class _CountingPattern:
    """A compiled pattern that counts where it was tried."""

    def __init__(self, pattern: Any) -> None:
        self.pattern, self.tried = pattern, 0
        self.groupindex = pattern.groupindex

    def match(self, text: str, pos: int) -> Any:
        self.tried += 1
        return self.pattern.match(text, pos)


# (text, where the env-line rule may start: the first ``=`` of a line whose head is a
# name, as in ``export API_KEY=``), redacted
LINE_HEAD_CASES = {
    "a run of '=' (helper 99: 100,000 took 5.4 s)": ("=" * 20_000, 0, False),
    "'ab=' repeated": ("ab=" * 10_000, 1, False),
    "an env line, then '=' after its value": (
        "DEPLOY_REF=Zq8vL2mN4pR7tY1wK9sD3fG6hJ0==\n" + "=" * 500,
        1,
        True,
    ),
    "two env lines": (
        "DEPLOY_REF=Zq8vL2mN4pR7tY1wK9sD3fG6hJ0\nBUILD_REF=Xw3vL2mN4pR7tY1wK9sD3fG6hJ9",
        2,
        True,
    ),
    "prose with '='": ("so x = y and y == z, then 2+2=4", 0, False),
}


@pytest.mark.parametrize("case", list(LINE_HEAD_CASES))
def test_a_line_rule_is_tried_only_where_its_line_head_holds(case: str) -> None:
    """A rule for whole lines (``high-entropy``: ``NAME=value``) is tried only at a
    trigger whose line head is the rule's: at every ``=`` of a run of them, its value
    class (which holds ``=``) scanned to the run's end, quadratic in its length. The
    work is counted, not timed."""
    from dataclasses import replace

    from sessiondex.store.redact import _compiled, _matches

    text, tried, redacted = LINE_HEAD_CASES[case]
    (rule,) = [c for c in _compiled() if c.rule.kind == "high-entropy"]
    counting = replace(rule, pattern=_CountingPattern(rule.pattern))
    _matches(counting, text, text)
    assert counting.pattern.tried == tried
    assert ("[REDACTED:high-entropy]" in redact_text(text)) is redacted


def test_the_push_pre_check_agrees_with_its_pattern_read_at_every_trigger() -> None:
    """The pre-check reads the name after a trigger once per run of name characters
    (a line of ``token`` repeated 200,000 times took 2.9 s, each trigger scanning 72
    characters and backtracking); it must answer as the pattern tried after every
    trigger does, on lines mixing keywords, name characters, operators and quotes."""
    import random
    import re

    from sessiondex.store.redact import _KEYWORDS, _NEAR_ASSIGNMENT, NEAR_NAME_MAX, _near

    near = re.compile(_NEAR_ASSIGNMENT)
    every_trigger = re.compile(rf"[\w.-]{{0,{NEAR_NAME_MAX}}}" + _NEAR_ASSIGNMENT)

    def by_pattern(line: str) -> bool:
        return any(
            every_trigger.match(line, at + len(keyword))
            for keyword in _KEYWORDS
            for at in (m.start() for m in re.finditer(re.escape(keyword), line))
        )

    pieces = ["token", "password", "secret", "_", "x" * 30, ".", "-", "=", ":", ":=", "=>"]
    pieces += ['"', "'", "\\", "\\n", " ", "\t", "4", "abc", "tok"]
    rng = random.Random(19)
    lines = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    lines += ["token" * 20 + "=x", "token" * 15 + "=x", "a" * 80 + "token" + "b" * 72 + "=v"]
    disagree = [line for line in lines if _near(near, line, _KEYWORDS) != by_pattern(line)]
    assert disagree == []
    assert sum(map(by_pattern, lines)) > 300  # both answers occur


def test_the_push_pre_check_reads_a_run_of_keywords_once() -> None:
    """Counted, not timed: the pattern is tried only where the run of name characters
    after a trigger is short enough, not after each of 200,000 triggers."""
    import re

    from sessiondex.store.redact import _KEYWORDS, _NEAR_ASSIGNMENT, _near

    counting = _CountingPattern(re.compile(_NEAR_ASSIGNMENT))
    assert not _near(counting, "token" * 200_000, _KEYWORDS)  # type: ignore[arg-type]
    assert counting.tried <= 2 * len(_KEYWORDS) * 15


def test_shape_rules_tried_at_word_starts_find_what_a_scan_found() -> None:
    """The rules for a token's shape (``ghp_…``, ``eyJ….eyJ….…``) are tried at their
    triggers that start a word, each match kept whole, rather than scanned for at
    every trigger and judged after: a run of ``eyJ`` was quadratic (helper 102: 1 MB
    over 30 s). On seeded mixes of triggers and token characters they find every match
    the scan found."""
    import random

    from sessiondex.store.redact import _compiled, _matches, _word_start

    rules = [c for c in _compiled() if c.rule.starts is _word_start]
    assert len(rules) >= 10
    pieces = ["eyJ", "ghp_", "sk-", "xoxb-", "AKIA", "npm_", "AIza", "T3BlbkFJ", "sk_live_"]
    pieces += ["A" * 12, "b9" * 9, "-", "_", ".", " ", "x", "Q7" * 20]
    rng = random.Random(102)
    for _ in range(1500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        for c in rules:
            scanned = {m.span() for m in c.pattern.finditer(text) if _word_start(text, m.start())}
            tried = {m.span() for m in _matches(c, text, text)}
            assert scanned <= tried, (c.rule.kind, text)


def test_a_run_of_one_trigger_is_tried_once() -> None:
    """Counted, not timed: in ``eyJ`` repeated 100,000 times only the first starts a
    word; in ``eyJ-`` repeated, where the pattern fails at the first, it fails at every
    later one inside the same run."""
    import re
    from dataclasses import replace

    from sessiondex.store.redact import _compiled, _matches

    (jwt,) = [c for c in _compiled() if c.rule.kind == "jwt"]
    for text in ("eyJ" * 100_000, "eyJ-" * 100_000):  # in the second each starts a word
        counting = replace(jwt, pattern=_CountingPattern(jwt.pattern))
        _matches(counting, text, text)
        assert counting.pattern.tried == 1, text[:8]
    assert isinstance(jwt.pattern, re.Pattern)


# (text, secrets that must go): a value over VALUE_JUDGED_MAX goes unjudged; a trigger
# at the end of an accepted secret still starts the one after it
ACCEPTED_CASES = {
    "a long value is redacted unjudged": ("password=$" + "Q" * 300, ["$" + "Q" * 300]),
    "a secret reached from inside the one before": (
        "password=Zq8vL2mN4pR7tY1wK9sxtoken =Xw3vL2mN4pR7tY1wK9s",
        ["Zq8vL2mN4pR7tY1wK9sxtoken", "Xw3vL2mN4pR7tY1wK9s"],
    ),
    "a rejected value still lets the secret inside it go": (
        "token=$(cat f)&password=hunter2xyz",
        ["hunter2xyz"],
    ),
}


@pytest.mark.parametrize("case", list(ACCEPTED_CASES))
def test_assignments_inside_an_accepted_secret(case: str) -> None:
    text, secrets = ACCEPTED_CASES[case]
    out = redact_text(text)
    assert all(secret not in out for secret in secrets), out
    assert out.count("[REDACTED:secret-assignment]") == len(secrets)


def test_a_run_of_assignments_is_tried_near_its_end_only() -> None:
    """Counted, not timed: in ``password=`` repeated 20,000 times the first keyword's
    value is accepted (over VALUE_JUDGED_MAX, unjudged), and only keywords within
    reach of its end are tried again (helper 102: each was, and judged: quadratic)."""
    from dataclasses import replace

    from sessiondex.store.redact import _compiled, _matches

    text = "password=" * 20_000
    rule = next(c for c in _compiled() if c.rule.kind == "secret-assignment")
    counting = replace(rule, pattern=_CountingPattern(rule.pattern))
    _matches(counting, text, text)
    assert counting.pattern.tried <= 20


def test_a_run_of_openai_key_prefixes_is_no_scan_of_the_run_at_each() -> None:
    """Counted, not timed: in ``sk-`` repeated each prefix starts a word, and the key's
    ``T3BlbkFJ`` marker was looked for over the whole run from each (quadratic: 80 KB
    took 1.7 s); it lies within 256 characters in every key format."""
    import re

    from sessiondex.store.redact import _compiled

    (openai,) = [c for c in _compiled() if c.rule.kind == "openai-key"]
    first = re.search(r"\{16,(\d+)\}T3BlbkFJ", openai.rule.pattern)
    assert first is not None and int(first.group(1)) <= 256
    key = "sk-proj-" + "a1B2" * 18 + "ab" + "T3BlbkFJ" + "Zq8v" * 18
    assert redact_text(f"key {key} end") == "key [REDACTED:openai-key] end"
