#!/usr/bin/env bash
# The Python package's suite: builds python/ (PyO3 bindings, maturin) into a virtualenv
# and runs python/tests with pytest (no network: folder remotes, stdio MCP).
#
#   ci/python/run.sh
#
# Creates a virtualenv under target/python-venv (or $PYTHON_VENV), installs the pins of
# ci/python/requirements.txt (maturin, pytest, anthropic, mcp), builds the memdir binary
# (the three-way test drives `memdir mcp` and `memdir memory-tool`), then installs the
# package with `pip install ./python` in cargo's dev profile, sharing target/ with the
# root crate: a release build would compile every dependency a second time, optimized
# (spec/python.md#building says how long each takes). Prints pytest's `N passed`
# last; exits non-zero on any failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${PYTHON_VENV:-$target/python-venv}"
req="$root/ci/python/requirements.txt"

. "$root/ci/venv.sh"
venv_with "$venv" "$req"

# python/ is its own package (not in the root's workspace): its format and lints
# are checked here, as .ci/run checks the root's.
cargo fmt --check --manifest-path python/Cargo.toml
CARGO_TARGET_DIR="$target" cargo clippy --quiet --locked --all-targets \
    --manifest-path python/Cargo.toml -- -D warnings

cargo build --quiet --locked --bin memdir

# maturin (the build backend) from the venv, no build isolation: nothing is fetched
# at build time. The dev profile and the shared target dir keep the build small.
PATH="$venv/bin:$PATH" CARGO_TARGET_DIR="$target" "$venv/bin/python" -m pip install \
    --quiet --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps \
    --config-settings=build-args="--profile dev" "$root/python"

cd "$root/python"
MEMDIR_BIN="$target/debug/memdir" exec "$venv/bin/python" -m pytest -p no:cacheprovider tests
