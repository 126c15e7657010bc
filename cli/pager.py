"""Long ``show`` output in a pager, the way ``git log`` pages.

The pager is ``$PAGER``, else the config file's ``pager``, else ``less``; an empty value,
``cat`` or a program that is not installed means no pager, and a command with shell
syntax runs through ``sh -c``, as git runs it. Like git, ``LESS=FRX`` is set when
``LESS`` is unset (quit if the text fits, pass colours through, leave the text on the
screen) and ``LV=-c`` for ``lv``. Colours go only to a pager that shows them: ``less`` with ``-R``/``-r`` in its
arguments or ``$LESS`` (so with our default too), ``lv -c``, and pagers made for colour
(``most``, ``bat``, ``moar``, ``ov``); any other pager gets plain text rather than
``ESC[36m`` printed literally (click's own pager would colour whatever ``less`` gets).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

LESS_DEFAULT = "FRX"
LV_DEFAULT = "-c"
_COLOUR_PAGERS = {"most", "bat", "batcat", "moar", "moor", "ov"}


@dataclass(frozen=True)
class Pager:
    """How to page: the command (None: print directly), its environment, and whether
    it shows colours."""

    command: list[str] | None
    env: dict[str, str] = field(default_factory=dict)
    color: bool = True


# What only a shell reads in a pager command: git runs $PAGER with ``sh -c`` when it
# holds any of these (``LESS=-R less``, ``~/bin/pager``, ``less | tee log``).
_SHELL_CHARACTERS = set("|&;<>()$`\\\"'*?[]#~=%")


def choose_pager(configured: str | None, environ: Mapping[str, str] | None = None) -> Pager:
    """The pager for ``configured`` (``$PAGER`` or the config file's, already chosen
    by precedence; None: ``less``). As git does, a command that holds shell syntax runs
    through ``sh -c``; whether it shows colour is read from its first program and the
    variables set before it."""
    env = dict(os.environ if environ is None else environ)
    text = "less" if configured is None else configured
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    assigned: dict[str, str] = {}
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        key, value = words.pop(0).split("=", 1)
        assigned[key] = value
    if not words or os.path.basename(words[0]) == "cat":
        return Pager(None, env, True)
    program = words[0]
    if (
        "$" not in program
        and shutil.which(os.path.expanduser(program), path=env.get("PATH")) is None
    ):
        return Pager(None, env, True)  # not installed: print, as git does without less
    # (a program named through a variable is the shell's to find)
    command = ["sh", "-c", text] if _SHELL_CHARACTERS & set(text) else words
    name = os.path.basename(words[0])
    if name == "less":
        env.setdefault("LESS", LESS_DEFAULT)
        color = _less_shows_colour([assigned.get("LESS", env["LESS"]), *words[1:]])
    elif name == "lv":
        env.setdefault("LV", LV_DEFAULT)
        color = "-c" in assigned.get("LV", env["LV"]).split() or "-c" in words[1:]
    else:
        color = name in _COLOUR_PAGERS
    return Pager(command, env, color)


def _less_shows_colour(options: Iterable[str]) -> bool:
    """``-R``/``-r`` (or their long names) among less's options, and not reset by a
    later ``-+R``. ``$LESS`` may omit the dash (``LESS=FRX``); a prompt option's text
    could fool this, which costs only the colours."""
    shown = False
    for text in options:  # the last option that says wins, as less reads them
        for word in text.split():
            if word.startswith("--"):
                if word.lower() in ("--raw-control-chars", "--raw-control-chars=on"):
                    shown = True
            elif word.startswith("+"):
                continue  # a command to run at start (+G), not options
            elif word.startswith(("-P", "P")):
                continue  # a prompt's text (-Pprompt): its letters are no options
            else:
                # Options run together ("FRX-+R"): "-" starts a group, "-+" resets the
                # letter after it.
                reset = False
                for i, char in enumerate(word):
                    if char == "+" and word[i - 1 : i] == "-":
                        reset = True
                    elif char in "Rr":
                        shown, reset = not reset, False
                    elif char != "-":
                        reset = False
    return shown


def page(chunks: Iterable[str], pager: Pager) -> None:
    """Write ``chunks`` through ``pager`` (or straight to stdout without one) and wait
    for it. Quitting the pager early is not an error; Ctrl-C goes to the pager."""
    if pager.command is None:
        for chunk in chunks:
            sys.stdout.write(chunk)
        sys.stdout.flush()
        return
    import signal

    sys.stdout.flush()
    try:
        process = subprocess.Popen(
            pager.command,
            stdin=subprocess.PIPE,
            env=pager.env,
            encoding="utf-8",
            errors="replace",
        )
    except OSError:  # the pager is not installed: print, as git does without less
        page(chunks, Pager(None))
        return
    assert process.stdin is not None
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for chunk in chunks:
            process.stdin.write(chunk)
    except BrokenPipeError:
        pass  # the pager was quit before the end
    finally:
        try:
            process.stdin.close()
        except BrokenPipeError:
            pass
        process.wait()
        signal.signal(signal.SIGINT, previous)
