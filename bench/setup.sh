#!/usr/bin/env bash
# Install what `python -m bench` needs beyond `pip install -e '.[test]'`:
#   * ripgrep (`rg`), the search baseline, from the distribution's packages;
#   * claude-agent-sdk, the list_sessions()/get_session_info() baseline.
# Idempotent: each step is skipped when its tool is already there.
# Usage: bench/setup.sh [PYTHON]
#   PYTHON defaults to the interpreter `python -m bench` will run under: the active
#   virtualenv's, else the checkout's .venv (the README's install), else it stops and
#   asks, rather than installing into the system's Python.
set -euo pipefail

PYTHON="${1:-}"
if [ -z "$PYTHON" ]; then
    HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
        PYTHON="$VIRTUAL_ENV/bin/python"
    elif [ -x "$HERE/.venv/bin/python" ]; then
        PYTHON="$HERE/.venv/bin/python"
    else
        echo "bench/setup.sh: no virtualenv found (activate one, or create .venv with the README's" >&2
        echo "first command), or name the interpreter: bench/setup.sh /path/to/python" >&2
        exit 2
    fi
fi

if command -v rg >/dev/null 2>&1; then
    echo "ripgrep: $(rg --version | head -n 1) (already installed)"
else
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    # Refresh the package lists only when the first attempt cannot find the package.
    $SUDO apt-get install -y ripgrep || { $SUDO apt-get update && $SUDO apt-get install -y ripgrep; }
    echo "ripgrep: $(rg --version | head -n 1)"
fi

if "$PYTHON" -c "import claude_agent_sdk" >/dev/null 2>&1; then
    echo "claude-agent-sdk: $("$PYTHON" -c 'import claude_agent_sdk; print(claude_agent_sdk.__version__)') (already installed)"
else
    "$PYTHON" -m pip install claude-agent-sdk
fi
