#!/usr/bin/env bash
# The Python client's tests for Maven (pom.xml in this directory), or by hand from the repository root:
#   bash clients/python/run-tests.sh            # venv under clients/python/target, install, pytest; records the exit code
#   bash clients/python/run-tests.sh --verify   # fails (exit 1) unless the recorded run passed
# The package is installed into target/venv (with the system's site packages: pytest, numpy) and the tests import
# that installed copy, not the source tree. They start the packaged agent and metadata plane (KVPOOL_AGENT_JAR,
# KVPOOL_META_JAR, JAVA_HOME; conftest.py). Extra arguments go to pytest (e.g. -k layerwise).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=$here/target
rc_file=$target/pytest.rc

if [ "${1:-}" = "--verify" ]; then
  rc=$(cat "$rc_file" 2>/dev/null || echo missing)
  if [ "$rc" != 0 ]; then
    echo "kvpool python tests: FAILED (pytest exit code $rc; 5 means no tests ran) - see the pytest output above," \
         "$target/pytest-report.xml and the services' logs under $target/pytest-tmp" >&2
    exit 1
  fi
  echo "kvpool python tests: passed ($target/pytest-report.xml)"
  exit 0
fi

mkdir -p "$target"
rm -f "$rc_file"
record() { echo "$1" > "$rc_file"; exit 0; }  # verify decides; integration-test only records
fail() { echo "kvpool python tests: $*" >&2; record 1; }

py=${KVPOOL_PYTHON:-python3}
command -v "$py" > /dev/null || fail "no $py on the PATH (the tests need Python 3.9+ with pytest and numpy; -Dkvpool.python.skip=true skips them)"
rm -rf "$target/venv" "$target/pytest-tmp"
"$py" -m venv --system-site-packages "$target/venv" || fail "cannot create a venv with $py"
vpy=$target/venv/bin/python
# Installed offline. With setuptools and wheel at hand: no index, no build isolation. Without wheel (Python 3.11's
# venv has setuptools 65 only), pip's isolated build fetches setuptools through pip's configured index, which on the
# build machines is the local wheel mirror (file:///opt/pypi/simple); --no-deps either way: the package needs nothing.
if "$vpy" -c 'import setuptools, wheel' 2> /dev/null; then
  "$vpy" -m pip install -q --no-deps --no-index --no-build-isolation "$here" || fail "pip install of $here failed"
else
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$vpy" -m pip install -q --no-deps "$here" \
    || fail "pip install of $here failed (no 'wheel' for an offline build without isolation, and pip's index did not give setuptools)"
fi
# the optional xxhash extra (vllm_block_keys(..., algo="xxhash_cbor")) from the same index; without a wheel that one
# test is skipped, not failed
"$vpy" -c 'import xxhash' 2> /dev/null || PIP_DISABLE_PIP_VERSION_CHECK=1 "$vpy" -m pip install -q xxhash 2> /dev/null \
  || echo "kvpool python tests: no xxhash wheel; the xxhash_cbor test is skipped" >&2
# from the package's directory, so that neither the repository nor src/ is on sys.path: the import must be the
# installed package (test_installed.py checks where it came from)
cd "$here/tests" || fail "no tests directory"
KVPOOL_PY_REQUIRE_INSTALLED=1 "$vpy" -m pytest -q -rs -p no:cacheprovider --rootdir "$here" -c "$here/pyproject.toml" \
  --basetemp "$target/pytest-tmp" --junitxml "$target/pytest-report.xml" "$here/tests" "$@"
record $?
