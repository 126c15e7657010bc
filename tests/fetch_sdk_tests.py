"""Fetch claude-agent-sdk's own session tests, for tests/test_sdk_upstream.py.

``sessiondex`` claims to be a drop-in for the SDK's session functions; the SDK's own
tests are the fairest judge. They are not copied into this repository (they are the
SDK's code, and would go stale): this script downloads the sdist of the *installed*
SDK version with pip and unpacks just the two test files into
``.cache/sdk-tests/<version>/``. It does nothing when they are already there, so only
the first run needs the network.

The README's test command and ``.ci/run`` run it before pytest. It never fails the
build: offline, or without the SDK installed, it says why on stderr and exits 0, and
test_sdk_upstream.py then skips with that reason. ``$SESSIONDEX_SDK_TESTS`` (a
directory holding the two files, e.g. an unpacked sdist) is used instead when set.

    python tests/fetch_sdk_tests.py [--dest DIR] [--version X.Y.Z]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

DIST = "claude-agent-sdk"
FILES = ("test_sessions.py", "test_session_mutations.py")
CACHE = Path(__file__).resolve().parent.parent / ".cache" / "sdk-tests"


def installed_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DIST)
    except PackageNotFoundError:
        return None


def cache_dir(version: str, base: Path = CACHE) -> Path:
    return base / version


def has_files(folder: Path) -> bool:
    return all((folder / name).is_file() for name in FILES)


def unpack(sdist: Path, dest: Path) -> None:
    """Copy ``<top>/tests/<file>`` of the sdist to ``dest/<file>``, nothing else (member
    names are matched, never used as paths, so an odd archive cannot write elsewhere)."""
    found: dict[str, bytes] = {}
    with tarfile.open(sdist, "r:gz") as archive:
        for member in archive.getmembers():
            parts = member.name.split("/")
            if not (member.isfile() and len(parts) == 3 and parts[1] == "tests"):
                continue
            if parts[0] in ("", ".", "..") or parts[2] not in FILES or parts[2] in found:
                continue
            stream = archive.extractfile(member)
            if stream is not None:
                found[parts[2]] = stream.read()
    missing = [name for name in FILES if name not in found]
    if missing:
        raise RuntimeError(f"{sdist.name} has no tests/{', tests/'.join(missing)}")
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in found.items():
        partial = dest / f".{name}.part"
        partial.write_bytes(data)
        partial.replace(dest / name)  # a reader never sees half a file


def download(version: str, dest: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="sdk-sdist-") as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{DIST}=={version}",
                "-d",
                tmp,
            ],
            check=True,
        )
        sdists = sorted(Path(tmp).glob("*.tar.gz"))
        if not sdists:
            raise RuntimeError(f"pip downloaded no sdist of {DIST}=={version}")
        unpack(sdists[0], dest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=CACHE, help="cache root")
    parser.add_argument("--version", help="SDK version (default: the installed one)")
    args = parser.parse_args(argv)
    if os.environ.get("SESSIONDEX_SDK_TESTS"):
        print("fetch_sdk_tests: using $SESSIONDEX_SDK_TESTS", file=sys.stderr)
        return 0
    version = args.version or installed_version()
    if version is None:
        print(f"fetch_sdk_tests: {DIST} is not installed; nothing to fetch", file=sys.stderr)
        return 0
    dest = cache_dir(version, args.dest)
    if has_files(dest):
        return 0
    try:
        download(version, dest)
    except (OSError, RuntimeError, subprocess.CalledProcessError, tarfile.TarError) as exc:
        print(
            f"fetch_sdk_tests: could not fetch {DIST}=={version}'s tests ({exc}); "
            "tests/test_sdk_upstream.py will be skipped",
            file=sys.stderr,
        )
        return 0
    print(f"fetch_sdk_tests: {DIST} {version} tests in {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
