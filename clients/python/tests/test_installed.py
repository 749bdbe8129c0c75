"""The suite tests the package as pip installed it (run-tests.sh, Maven), not the source tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import kvpool_client


@pytest.mark.skipif(os.environ.get("KVPOOL_PY_REQUIRE_INSTALLED") != "1",
                    reason="run from the source tree (run-tests.sh sets KVPOOL_PY_REQUIRE_INSTALLED=1)")
def test_the_installed_package_is_under_test() -> None:
    pkg = Path(kvpool_client.__file__).resolve().parent
    assert "site-packages" in pkg.parts, pkg
    assert (pkg / "py.typed").is_file()  # PEP 561: type checkers use the package's hints
    assert not (Path(__file__).resolve().parents[1] / "src") in pkg.parents
