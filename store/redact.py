"""Redaction of secrets before anything leaves the machine (``push``).

Transcripts hold API keys, tokens and passwords that people paste into prompts and
that tools print. Before ``push`` sends a record, every string in it is scanned and
each secret is replaced with ``[REDACTED:<kind>]``; only the secret goes, not its
surroundings (``password=[REDACTED:secret-assignment]``), so the session still reads.

Why our own rules and not ``detect-secrets`` (Yelp's, the best-known maintained
detector on PyPI): measured on this machine, its ``scan_line`` costs ~1.3 ms per line
of ordinary prose (all of its ~25 plugins run on every line), about a thousand times
what these rules cost, which would make ``push`` of a 440 MB history take many
minutes; it reports values, not positions, and for several plugins only the prefix
(``ghp``, ``glpat``, the ``BEGIN … PRIVATE KEY`` header), which cannot drive a
replacement; in line mode its entropy plugins flag every word; and it has no Google
API key rule. The shapes below follow its plugins and gitleaks' public rules, each
anchored on a literal prefix so Python's regex engine can skip ahead; the tests hold
a table of real-looking secrets and of harmless look-alikes (git SHAs, UUIDs, base64
of ordinary text, "password" in prose).

Two rules are not shapes but judgements, and say so: ``secret-assignment`` (a value
assigned to a name like ``password``, ``secret``, ``token``, ``api_key``) and
``high-entropy`` (a random-looking value in an env-like ``NAME=value`` line).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

MARK = "[REDACTED:{kind}]"


@dataclass(frozen=True)
class Finding:
    """One redaction: its kind and a masked preview (never the secret in full)."""

    kind: str
    preview: str


def mask(secret: str) -> str:
    """A preview that identifies a secret to its owner without giving it away: its
    first four characters (usually the token's public prefix) when it is long enough
    for that to leave most of it hidden, and its length."""
    shown = secret[:4] if len(secret) >= 16 else ""
    return f"{shown}… ({len(secret)} chars)"


# ----------------------------------------------------------------------------- checks
def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _is_base64_text(value: str) -> bool:
    """Base64 (or base64url) of printable text: encoded prose, not a key."""
    padded = value + "=" * (-len(value) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return bool(text) and all(ch.isprintable() or ch in "\n\t" for ch in text)


_HEX = re.compile(r"[0-9a-fA-F-]+\Z")


def _random_looking(value: str) -> bool:
    """High entropy and mixed case with digits: a generated secret, not a word, a
    path, a hex digest (git SHAs, checksums) or a UUID."""
    if len(value) < 20 or _HEX.match(value):
        return False
    classes = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
        )
    )
    if classes < 3 or _entropy(value) < 4.0:
        return False
    return not _is_base64_text(value)


# Values that name a type, a placeholder or a keyword of code, not a secret
# (``password: str``, ``token = None``, ``const token = await fetch(...)``).
_NOT_SECRETS = frozenset(
    "none null nil true false undefined string str bytes int integer number bool boolean "
    "optional required secret password token redacted example changeme your_password "
    "secretstr any object await new function async lambda require import return yield "
    "this self typeof const let var".split()
)
# Names that contain a keyword but hold no secret (``max_tokens``, ``token_count``,
# ``password_file``, ``access_key_id``).
_HARMLESS_NAME_END = re.compile(
    r"(?:tokens|count|type|name|names|length|len|limit|size|id|ids|file|path|dir|field|"
    r"env|var|header|prefix|url|uri|hint|policy|prompt|expiry|expires|ttl|min|max)\Z",
    re.IGNORECASE,
)
_CODE_VALUE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z")  # self.password, os.environ


def _assigned_secret(name: str, value: str) -> bool:
    """Whether ``name = value`` assigns a secret (not a type, placeholder or code)."""
    if _HARMLESS_NAME_END.search(name):
        return False
    if value.lower().strip("*.") in _NOT_SECRETS or set(value) <= set("*xX.-_"):
        return False
    if value[0] in "$<{%([*`" or value.startswith(("process.env", "os.getenv", "os.environ")):
        return False
    return not (any(ch in value for ch in "()[]") or _CODE_VALUE.match(value.rstrip("…")))


# ----------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class Rule:
    """``pattern`` finds a candidate; the group named ``s`` (else the whole match) is
    the secret; ``check(match)``, when given, must agree. A rule runs only on text that
    contains one of its ``triggers`` (case-folded when ``fold``): a substring test runs
    at memory speed, while a regex costs ~15 ns per character even when it finds
    nothing, and most text holds no secret at all."""

    kind: str
    triggers: tuple[str, ...]
    pattern: str
    check: Callable[[re.Match[str]], bool] | None = None
    fold: bool = False
    # Match only where a trigger occurs (``pattern`` starts with it), for triggers that
    # are common words ("token", "password"): a scan of every position would cost more.
    anchored: bool = False
    # Where a rule's triggers are common (every assistant line says "input_tokens"), the
    # record is a candidate only where this also matches right after a trigger and the
    # name characters after it (``[\w.-]``, at most ``NEAR_NAME_MAX``) in its JSON line:
    # a superset of what ``pattern`` needs, read on the escaped text.
    near: str | None = None
    # For an anchored rule: whether a match may start at a trigger (the text, the
    # trigger's position), checked before ``pattern`` is tried there. A trigger inside a
    # run that the pattern scans to its end (each ``=`` of 100,000, which the
    # high-entropy value class holds: 5.4 s; each ``eyJ`` of a run of them: quadratic
    # too) is ruled out in constant time.
    starts: Callable[[str, int], bool] | None = None
    # For an anchored rule without a check: characters such that where ``pattern``
    # fails at a trigger, it fails at every later trigger inside the run of them that
    # starts there (the same run end, the same text after it), which are skipped. In a
    # run of ``eyJ-`` each ``eyJ`` starts a word, and the JWT pattern scanned the run
    # from each for its ``.``: quadratic.
    fails_inside: str | None = None


_KEYWORDS = (
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "access-key",
    "private_key",
    "private-key",
    "credential",
    "auth_key",
    "auth-key",
)
_KEYWORD_RE = r"(?i:passw(?:or)?d|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|auth[_-]?key)"
_VALUE = r"[^\s\"'`,;]{4,}"
# The name characters an assignment rule reads on either side of its keyword
# (``DB_PASSWORD_FILE``): bounded, so a long word of keywords is no scan from each.
NAME_MAX = 64
# After a keyword in a JSON line: an assignment (``=``, ``:=``, ``=>``), a colon after an
# escaped quote or none (``\\"password\\": ``, ``password: ``), or a JSON key with a
# string value (``"password":"``) - but not a key with a number (``"input_tokens":4``).
# Up to NEAR_NAME_MAX name characters after the trigger: a trigger may be shorter than
# the keyword the rule reads (``credential`` in ``credentials``), and the rule takes
# NAME_MAX after it.
# On the JSON line white space may be a ``\\t``/``\\n``/``\\r`` escape: the pre-check must
# let through what the rule, on the decoded text, reads (a line with other escapes is
# given every rule: ``_UNREAD_ESCAPES``).
_UNREAD_ESCAPES = ("\\u", "\\f", "\\b", "\\/")
# (``\\+``: a backslash escaped in the text itself, ``\\t`` on the line, reads as the
# rule's ``\t`` once the text's own escapes are undone: helper 102)
_JSON_SPACE = r"(?:\s|\\+[tnr])*"
NEAR_NAME_MAX = NAME_MAX + 8
_NEAR_ASSIGNMENT = (
    rf"(?:{_JSON_SPACE}(?::=|=>|=)|(?:\\+[\"']?|')?{_JSON_SPACE}:|\"{_JSON_SPACE}:{_JSON_SPACE}\")"
)


def _full_name(match: re.Match[str]) -> str:
    """The whole name a keyword sits in (``DB_PASSWORD`` for a match at ``PASSWORD``)."""
    text, start = match.string, match.start("n")
    begin = start
    while (
        begin > 0
        and start - begin < NAME_MAX
        and (text[begin - 1].isalnum() or text[begin - 1] in "_.-")
    ):
        begin -= 1
    return text[begin : match.end("n")]


def _word_start(text: str, at: int) -> bool:
    """A match at ``at`` does not begin inside a longer word (``\\b`` in the pattern
    would stop the regex engine from skipping ahead to the literal prefix)."""
    return at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")


def _env_line_head(text: str, at: int) -> bool:
    return _line_head(text, at, _ENV_HEAD)


# The end of a line: a newline, or inside JSON text a ``\\n`` escape or the end of a
# string (``"API_KEY=..."``).
_LINE_END = r"(?:(?m:$)|(?=\\[nr])|(?=\\?\"))"

# What may precede the match on its line: a YAML key (``  - db_password:``), an env
# assignment (``export API_KEY=``).
_YAML_HEAD = re.compile(r"[ \t-]*[\w.-]*")
_ENV_HEAD = re.compile(r"[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]{1,63}[ \t]*")


def _line_head(text: str, start: int, head: re.Pattern[str]) -> bool:
    """Whether the text between the line's start and ``start`` is ``head``: a rule that
    holds for whole lines only, without a ``^`` the engine would try at every position."""
    # a line starts after a newline, or inside JSON text after a ``\\n`` escape or at
    # a string's opening quote (``"Env": ["API_KEY=..."]``); only the last 200
    # characters matter, so only they are searched (a search back to the start of the
    # text for every match made a text of 20,000 assignments quadratic: 8 s)
    low = max(0, start - 201)
    escape = text.rfind("\\n", low, start)
    begin = max(
        text.rfind("\n", low, start) + 1,
        escape + 2 if escape >= 0 else 0,
        text.rfind('"', low, start) + 1,
    )
    if begin == 0 and low > 0:
        return False  # no line start within reach
    return start - begin <= 200 and head.fullmatch(text, begin, start) is not None


RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        ("PRIVATE KEY",),
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    Rule(
        "aws-access-key",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        anchored=True,
        starts=_word_start,
    ),
    Rule(
        "gcp-api-key",
        ("AIza",),
        r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
        anchored=True,
        starts=_word_start,
    ),
    Rule("gcp-oauth-secret", ("GOCSPX-",), r"GOCSPX-[0-9A-Za-z_-]{28}(?![0-9A-Za-z_-])"),
    Rule(
        "azure-storage-key",
        ("AccountKey=", "SharedAccessKey="),
        r"(?:AccountKey|SharedAccessKey)=(?P<s>[A-Za-z0-9+/]{40,}={0,2})",
    ),
    Rule(
        "azure-client-secret",
        ("Q~",),
        r"(?<![\w~.-])[0-9A-Za-z_~.-]{3}\dQ~[0-9A-Za-z_~.-]{31,34}(?![\w~.-])",
    ),
    Rule("azure-sas-signature", ("sig=",), r"[?&]sig=(?P<s>[A-Za-z0-9%+/]{30,}={0,2})"),
    Rule(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])",
        anchored=True,
        starts=_word_start,
    ),
    Rule(
        "gitlab-token",
        (
            "glpat-",
            "gldt-",
            "glrt-",
            "glptt-",
            "glft-",
            "glsoat-",
            "glcbt-",
            "glimt-",
            "glagent-",
            "gloas-",
        ),
        r"gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|agent|oas)-[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])",
        anchored=True,
        starts=_word_start,
    ),
    Rule(
        "slack-token",
        ("xox",),
        r"xox[abposre]-[A-Za-z0-9-]{10,}",
        anchored=True,
        starts=_word_start,
    ),
    Rule(
        "slack-webhook",
        ("hooks.slack.com",),
        r"hooks\.slack\.com/(?:services|workflows)/(?P<s>[A-Za-z0-9/_-]{20,})",
    ),
    Rule(
        "anthropic-key",
        ("sk-ant-",),
        r"sk-ant-[a-z]+\d*-[A-Za-z0-9_-]{20,}",
        anchored=True,
        starts=_word_start,
    ),
    Rule(
        "openai-key",
        ("sk-",),
        # (the marker within 256 characters, as in every key format: unbounded, each
        # ``sk-`` of a run of them backtracked over the run looking for it, quadratic)
        r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,256}T3BlbkFJ[A-Za-z0-9_-]{16,}"
        r"|sk-[A-Za-z0-9]{48}(?![A-Za-z0-9])",
        anchored=True,
        starts=_word_start,
    ),
    Rule(
        "stripe-key",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        r"[rs]k_(?:live|test)_[0-9A-Za-z]{20,}(?![A-Za-z0-9])",
        anchored=True,
        starts=_word_start,
    ),
    Rule(
        "npm-token",
        ("npm_",),
        r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        anchored=True,
        starts=_word_start,
    ),
    Rule("pypi-token", ("pypi-AgE",), r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    Rule(
        "jwt",
        ("eyJ",),
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        anchored=True,
        starts=_word_start,
        fails_inside=r"[A-Za-z0-9_-]*",
    ),
    Rule(
        "url-credentials",
        ("://",),
        r"://[^\s:/@\"'<>]{1,100}:(?P<s>[^\s:/@\"'<>]{3,200})@",
        lambda m: _assigned_secret("password", m.group("s")),
    ),
    Rule("bearer-token", ("bearer",), r"(?i:bearer)\s+(?P<s>[A-Za-z0-9._~+/-]{20,}=*)", fold=True),
    Rule(
        "basic-auth",
        ("basic",),
        r"(?i:authorization:\s*basic)\s+(?P<s>[A-Za-z0-9+/]{8,}={0,2})",
        fold=True,
    ),
    # NAME = value, NAME := value, NAME => value, "name": "value", and a YAML line
    # ``name: value``; a bare "password: ..." inside prose is not an assignment. The
    # match starts at the keyword (a leading ``[\w.-]*`` would make the engine
    # backtrack over every long word); the check reads the name's start backwards. The
    # rest of the name is at most NAME_MAX characters, as the part read backwards is: an
    # unbounded ``[\w.-]*`` ran to the end of a long word from every keyword in it,
    # so ``token_token_…`` (60 KB) took 27 s.
    Rule(
        "secret-assignment",
        _KEYWORDS,
        rf"(?P<n>{_KEYWORD_RE}[\w.-]{{0,{NAME_MAX}}})"
        rf"(?:\s*(?::=|=>|=)\s*[\"']?|[\"']\s*:\s*[\"']|[\"']?\s*:\s*[\"'])(?P<s>{_VALUE})",
        lambda m: (
            len(m.group("s")) > VALUE_JUDGED_MAX or _assigned_secret(_full_name(m), m.group("s"))
        ),
        fold=True,
        anchored=True,
        near=_NEAR_ASSIGNMENT,
    ),
    Rule(
        "secret-assignment",
        _KEYWORDS,
        rf"(?P<n>{_KEYWORD_RE}[\w.-]{{0,{NAME_MAX}}}):[ \t]+(?P<s>{_VALUE})[ \t]*{_LINE_END}",
        # The line head after the pattern: the name is bounded, so a failed match is
        # short, and most keywords are followed by no ``: value``.
        lambda m: (
            _line_head(m.string, m.start(), _YAML_HEAD)
            and _assigned_secret(_full_name(m), m.group("s"))
        ),
        fold=True,
        anchored=True,
        near=_NEAR_ASSIGNMENT,
    ),
    Rule(
        "high-entropy",
        ("=",),
        r"=[ \t]*[\"']?(?P<s>[A-Za-z0-9+/=_.~-]{20,})[\"']?[ \t]*" + _LINE_END,
        lambda m: _random_looking(m.group("s")),
        anchored=True,
        starts=_env_line_head,
    ),
)


@dataclass(frozen=True)
class _Compiled:
    rule: Rule
    pattern: re.Pattern[str]
    triggers: re.Pattern[str]  # any of the rule's triggers, searched in one C call
    near: re.Pattern[str] | None
    fails_inside: re.Pattern[str] | None = None

    def haystack(self, text: str, folded: list[str | None]) -> str:
        if not self.rule.fold:
            return text
        lowered = folded[0]
        if lowered is None:
            lowered = folded[0] = same_length_lower(text)
        return lowered


def same_length_lower(text: str) -> str:
    """``text.lower()`` with every character where it was: matches found in it are
    read back at the same positions of ``text``. A few characters lower to two (``İ``
    to ``i̇``), which shifted every position after them, so a secret after one was not
    the span redacted; they are left as they are (no keyword holds them)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(low := c.lower()) != 1 else low for c in text)


@cache
def _compiled() -> tuple[_Compiled, ...]:
    """Compiled on first use (start-up time is a benchmark figure)."""
    return tuple(
        _Compiled(
            rule,
            re.compile(rule.pattern),
            re.compile("|".join(map(re.escape, rule.triggers))),
            re.compile(rule.near) if rule.near else None,
            re.compile(rule.fails_inside) if rule.fails_inside else None,
        )
        for rule in RULES
    )


# Strings shorter than this hold no secret any rule can find: skip them (most strings
# of a record are ids, timestamps, versions).
MIN_LENGTH = 10


# How far before the end of a secret it accepted a trigger of an anchored rule can still
# start a match whose secret lies beyond it: a keyword (at most 11 characters), the
# NAME_MAX name characters after it and an operator (at most 3), with room to spare. A
# trigger further inside starts a secret inside the one accepted, which wins anyway.
_REACH = NAME_MAX + 32
# A value longer than this after a secret's name is redacted without being judged:
# judging reads it whole, and a run of ``password=`` repeated was judged at each keyword
# (quadratic: 80 KB in 3.5 s). Such a value is no type, placeholder or code anyway.
VALUE_JUDGED_MAX = 256


def _matches(c: _Compiled, text: str, haystack: str) -> list[re.Match[str]]:
    """The rule's matches in ``text`` that its check (if any) accepts, in order."""
    check = c.rule.check
    if not c.rule.anchored:
        return [m for m in c.pattern.finditer(text) if check is None or check(m)]
    found = []
    starts = c.rule.starts
    # A match accepted is kept whole, as ``finditer`` keeps one: a trigger inside it
    # starts nothing (tried, each rescanned the run to its end: a run of 16,000 ``xoxb-``
    # took 0.7 s), but for the last ``_REACH`` characters of a rule with a check. A
    # match its check rejects may hold one it accepts: triggers inside it are tried.
    reach = 0 if check is None else _REACH
    accepted_end = 0
    for hit in c.triggers.finditer(haystack):
        at = hit.start()
        if at < accepted_end - reach or (starts is not None and not starts(text, at)):
            continue
        match = c.pattern.match(text, at)
        if match is not None and (check is None or check(match)):
            found.append(match)
            accepted_end = match.end()
        elif match is None and c.fails_inside is not None and check is None:
            run = c.fails_inside.match(text, at)
            accepted_end = max(accepted_end, run.end() if run is not None else at)
    return found


def _spans(text: str, rules: tuple[_Compiled, ...] | None = None) -> list[tuple[int, int, str]]:
    """Non-overlapping ``(start, end, kind)`` of the secrets in ``text``, in order; the
    first rule wins where two overlap (shapes come before judgements)."""
    import bisect

    found: list[tuple[int, int, str]] = []  # kept sorted: no two overlap
    starts: list[int] = []
    folded: list[str | None] = [None]
    for c in _compiled() if rules is None else rules:
        haystack = c.haystack(text, folded)
        if c.triggers.search(haystack) is None:
            continue
        for match in _matches(c, text, haystack):
            start, end = match.span("s") if "s" in c.pattern.groupindex else match.span()
            # The spans are disjoint and sorted, so only the last one starting before
            # ``end`` can overlap: a bisection, not a look at every span found (a log of
            # 20,000 secrets took 8 s to compare each with all the others).
            at = bisect.bisect_left(starts, end)
            if at and found[at - 1][1] > start:
                continue
            starts.insert(at, start)
            found.insert(at, (start, end, c.rule.kind))
    return found


def candidate_rules(line: str) -> tuple[_Compiled, ...]:
    """The rules whose triggers occur anywhere in a record's JSON text: the others
    cannot match any of its strings, so most records are not walked at all.

    A JSON line shows a string's characters as they are, except for quotes,
    backslashes and control characters (none of them in a trigger) and, when a writer
    escapes them, other characters as ``\\uXXXX`` and ``/`` as ``\\/``. A line with any
    ``\\u`` escape (a character the lowered line does not lower, a space the pre-check
    does not see), a form feed or backspace escape, or ``\\/`` is checked against every
    rule: Claude Code writes none of them (its lines are UTF-8, not ASCII-escaped), so
    this costs nothing there, and the rules read the decoded text.
    """
    if any(escape in line for escape in _UNREAD_ESCAPES):
        return _compiled()
    # ``in`` tests, not the rules' trigger regexes: over a whole line a substring
    # search runs several times faster, and a line is one call per rule.
    lowered = None
    found = []
    near_found: dict[tuple[str, bool, tuple[str, ...]], bool] = {}  # rules that share one
    for c in _compiled():
        if c.rule.fold:
            if lowered is None:
                lowered = line.lower()
            haystack = lowered
        else:
            haystack = line
        if c.near is None:
            if any(t in haystack for t in c.rule.triggers):
                found.append(c)
        else:
            key = (c.near.pattern, c.rule.fold, c.rule.triggers)
            if key not in near_found:
                near_found[key] = _near(c.near, haystack, c.rule.triggers)
            if near_found[key]:
                found.append(c)
    return tuple(found)


@cache
def _name_run() -> re.Pattern[str]:
    return re.compile(r"[\w.-]*")


def _near(near: re.Pattern[str], haystack: str, triggers: tuple[str, ...]) -> bool:
    """Whether ``near`` matches after some trigger and at most ``NEAR_NAME_MAX`` name
    characters. ``near`` starts with no name character, so it can only match where the
    run of them after the trigger ends: one run end serves every trigger inside the run
    (a line of ``token`` repeated 200,000 times was 400,000 scans of 72 characters,
    backtracked: 2.9 s)."""
    run_start = run_end = -1
    for trigger in triggers:
        at = haystack.find(trigger)
        while at >= 0:
            after = at + len(trigger)
            if not run_start <= after <= run_end:
                run = _name_run().match(haystack, after)
                run_start, run_end = after, run.end() if run is not None else after
            if run_end - after <= NEAR_NAME_MAX and near.match(haystack, run_end):
                return True
            at = haystack.find(trigger, at + 1)
    return False


def _replace_spans(
    text: str, spans: list[tuple[int, int, str]], findings: list[Finding] | None
) -> str:
    out: list[str] = []
    last = 0
    for start, end, kind in spans:
        out.append(text[last:start])
        out.append(MARK.format(kind=kind))
        if findings is not None:
            findings.append(Finding(kind, mask(text[start:end])))
        last = end
    out.append(text[last:])
    return "".join(out)


_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_UNESCAPED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescape(text: str) -> str:
    """JSON string escapes undone (``\\n`` → newline, ``\\"`` → ``"``): the view of
    JSON pasted as text (``cat credentials.json``, a config dump in a prompt)."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] == "u":
            return chr(int(code[1:], 16))
        return _UNESCAPED.get(code, code)

    return _ESCAPE.sub(one, text)


def redact_text(
    text: str, findings: list[Finding] | None = None, rules: tuple[_Compiled, ...] | None = None
) -> str:
    """``text`` with every secret replaced by ``[REDACTED:kind]``; each is added to
    ``findings`` when given. ``rules``: only these (see :func:`candidate_rules`).

    Text holding JSON escapes (JSON pasted as text) is read a second time with them
    undone, so that line rules see its lines and quoted values their quotes; a secret
    found there is replaced wherever it occurs, in its escaped form.
    """
    if len(text) < MIN_LENGTH:
        return text
    spans = _spans(text, rules)
    out = _replace_spans(text, spans, findings) if spans else text
    if "\\" not in out:
        return out
    view = _unescape(out)
    if view == out:
        return out
    for start, end, kind in _spans(view, rules):
        secret = view[start:end]
        if "[REDACTED:" in secret:
            continue
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        form = escaped if escaped in out else secret
        if form in out:
            out = out.replace(form, MARK.format(kind=kind))
            if findings is not None:
                findings.append(Finding(kind, mask(secret)))
    return out


_SECRET_FIELD = re.compile(
    r"(?:password|passwd|secret|token|apikey|accesskey|privatekey|credentials?|authkey)\Z"
)


def _secret_field(key: object, value: str) -> bool:
    """A JSON field that holds a secret by its name (``{"password": "hunter2"}`` in a
    tool input): the name ends with a keyword (``api_key``, ``GITHUB_TOKEN``, not
    ``tokenizer``), and the value is not a type, placeholder or code."""
    if not isinstance(key, str) or len(value) < 4 or value.startswith("[REDACTED:"):
        return False
    name = "".join(ch for ch in key.lower() if ch.isalnum())
    return _SECRET_FIELD.search(name) is not None and _assigned_secret(key, value)


def redact_value(
    value: Any,
    findings: list[Finding] | None = None,
    rules: tuple[_Compiled, ...] | None = None,
) -> tuple[Any, bool]:
    """A JSON value with every string redacted, object keys included: ``(value,
    changed)``. Unchanged parts are the same objects (nothing is copied when nothing is
    found)."""
    if rules is not None and not rules:
        return value, False
    if isinstance(value, str):
        new = redact_text(value, findings, rules)
        return new, new is not value
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        keyed = rules is None or any(c.rule.kind == "secret-assignment" for c in rules)
        for k, v in value.items():
            if keyed and isinstance(v, str) and _secret_field(k, v):
                new_v, did = MARK.format(kind="secret-assignment"), True
                if findings is not None:
                    findings.append(Finding("secret-assignment", mask(v)))
            else:
                new_v, did = redact_value(v, findings, rules)
            # Keys are strings of the record too: a parsed .env or a headers map in a
            # tool's input has the secret as its key.
            new_k = redact_text(k, findings, rules) if isinstance(k, str) else k
            out[new_k] = new_v
            changed = changed or did or new_k is not k
        return (out if changed else value), changed
    if isinstance(value, list):
        items = [redact_value(v, findings, rules) for v in value]
        if any(did for _, did in items):
            return [v for v, _ in items], True
        return value, False
    return value, False
