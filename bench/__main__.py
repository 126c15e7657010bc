"""``python -m bench``: run every benchmark figure (see bench/runner.py and bench/README.md)."""

from bench.runner import main

raise SystemExit(main())
