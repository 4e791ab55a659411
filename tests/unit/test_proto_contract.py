"""The protos as a contract for clients in other languages: `buf lint` (STANDARD and COMMENTS
rules, buf.yaml) passes on protos/, it does catch violations (a self-test on a small bad
proto), every file sets the language package options, and the installed package ships the
.proto files unchanged beside their generated stubs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTOS = sorted((ROOT / "protos").rglob("*.proto"))
LANGUAGE_OPTIONS = (
    "go_package",
    "java_package",
    "java_multiple_files",
    "csharp_namespace",
    "php_namespace",
    "ruby_package",
    "objc_class_prefix",
)


def buf() -> str:
    """The buf CLI of this environment (the buf-bin wheel puts it beside python)."""
    found = shutil.which("buf", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if found is None:
        pytest.fail("buf is not installed: `pip install -r requirements-dev.txt` (buf-bin) provides it")
    return found


def lint(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [buf(), "lint", "--error-format", "text"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BUF_CACHE_DIR": str(directory / ".buf-cache")},
    )


def test_buf_lint_passes_on_the_protos(tmp_path):
    shutil.copy(ROOT / "buf.yaml", tmp_path / "buf.yaml")
    shutil.copytree(ROOT / "protos", tmp_path / "protos")
    result = lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


BAD_PROTO = """syntax = "proto3";

package polarmem.v1;

// Documented.
service BadService {
  // Documented.
  rpc Fetch(Thing) returns (Thing);
}

enum Colour {
  RED = 0;
}

// Documented.
message Thing {
  string itemName = 1;
}
"""


def test_buf_lint_catches_each_kind_of_violation(tmp_path):
    """The same buf.yaml on a bad file: missing comments, an enum without its prefix and
    *_UNSPECIFIED zero value, a camelCase field, RPC messages not named <Rpc>Request / Response."""
    shutil.copy(ROOT / "buf.yaml", tmp_path / "buf.yaml")
    (tmp_path / "protos" / "polarmem" / "v1").mkdir(parents=True)
    (tmp_path / "protos" / "polarmem" / "v1" / "bad.proto").write_text(BAD_PROTO)
    result = lint(tmp_path)
    assert result.returncode != 0
    out = result.stdout
    for expected in (
        'Enum "Colour" should have a non-empty comment',
        'Enum value "RED" should have a non-empty comment',
        'Enum value name "RED" should be prefixed with "COLOUR_"',
        'Enum zero value name "RED" should be suffixed with "_UNSPECIFIED"',
        'Field name "itemName" should be lower_snake_case',
        'should be named "FetchRequest"',
        'should be named "FetchResponse"',
    ):
        assert expected in out, out


@pytest.mark.parametrize("proto", PROTOS, ids=lambda p: str(p.relative_to(ROOT / "protos")))
def test_every_file_sets_the_language_package_options(proto):
    text = proto.read_text()
    package = re.search(r"^package ([\w.]+);", text, re.M).group(1)
    for option in LANGUAGE_OPTIONS:
        assert re.search(rf"^option {option} = ", text, re.M), f"{proto.name}: option {option} is not set"
    parts = package.split(".")  # polarmem.common.v1 -> PolarMem.Common.V1 and friends agree with the package
    assert f'option java_package = "com.{package}";' in text
    assert (
        f'option csharp_namespace = "{".".join(p.capitalize() if p != "polarmem" else "PolarMem" for p in parts)}";'
        in text
    )
    assert f'/gen/go/{"/".join(parts)};' in text


def test_the_installed_package_ships_the_protos():
    """pip install polarmem-server puts each .proto beside its stubs (site-packages/polarmem/...),
    byte for byte the repository's."""
    installed = resources.files("polarmem")
    for proto in PROTOS:
        relative = proto.relative_to(ROOT / "protos" / "polarmem")
        shipped = installed.joinpath(*relative.parts)
        assert shipped.is_file(), f"{relative} is not in the installed package (CMakeLists.txt installs protos/)"
        assert shipped.read_bytes() == proto.read_bytes(), f"{relative}: the installed copy differs; reinstall"
