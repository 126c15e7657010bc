#!/usr/bin/env bash
# Install what `python -m bench` needs beyond `pip install -e '.[test]'`:
#   * ripgrep (`rg`), the search baseline, from the distribution's packages;
#   * claude-agent-sdk, the list_sessions()/get_session_info() baseline;
#   * claude-code-log 1.7.0, the peer of `python -m bench.peers`, in its own virtualenv.
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

# claude-code-log, the peer `python -m bench.peers` compares with, in a virtualenv of its
# own: its dependencies (Textual among them) would otherwise pin ours.
CCL_VERSION=1.7.0
CCL_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/sessiondex-bench/peers/claude-code-log-$CCL_VERSION"
if [ -x "$CCL_VENV/bin/claude-code-log" ]; then
    echo "claude-code-log: $CCL_VERSION (already installed in $CCL_VENV)"
else
    "$PYTHON" -m venv "$CCL_VENV"
    "$CCL_VENV/bin/pip" install -q "claude-code-log==$CCL_VERSION"
    echo "claude-code-log: $CCL_VERSION (installed in $CCL_VENV)"
fi
