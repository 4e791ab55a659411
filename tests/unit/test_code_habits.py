"""docs/configuration.md stays the one table of every setting: each `polarmem serve` setting, each
client connection setting and each POLARMEM_* variable the code reads is listed there (read from
the source, so a new setting or variable without a row fails here)."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TABLE = (REPO / "docs" / "configuration.md").read_text()
# Where the code reads the environment by name: os.environ / getenv / env.get calls, NAME_ENV constants.
READS = re.compile(
    r"(environ|getenv|\benv\.get\(|\benv\[|_ENV\s*=|require_tool\(|find_tool\()[^\n]*?\b(POLARMEM_[A-Z0-9_]+)"
)
SOURCES = ("polarmem_server", "cpp/src", "cpp/front", "cpp/bindings", "deploy", "tests", "benchmarks")


def dataclass_fields(path: str, name: str) -> list[str]:
    tree = ast.parse((REPO / path).read_text())
    cls = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name)
    return [st.target.id for st in cls.body if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)]


def variables_read() -> set[str]:
    names = set()
    for root in SOURCES:
        for path in (REPO / root).rglob("*"):
            if path.suffix in (".py", ".cpp", ".hpp") and "third_party" not in path.parts:
                names.update(match.group(2) for match in READS.finditer(path.read_text(errors="replace")))
    return names


def test_every_server_setting_has_a_row():
    fields = dataclass_fields("polarmem_server/api/config.py", "ServerConfig")
    assert len(fields) > 20
    missing = [f for f in fields if f"`--{f.replace('_', '-')}` · `POLARMEM_{f.upper()}` · `{f}`" not in TABLE]
    assert not missing, f"docs/configuration.md lacks a row for the serve settings {missing}"


def test_every_client_setting_has_a_row():
    fields = dataclass_fields("polarmem_server/faces/connection.py", "Connection")
    missing = [f for f in fields if f"`POLARMEM_{f.upper()}` · `[client] {f}`" not in TABLE]
    assert not missing, f"docs/configuration.md lacks a row for the client settings {missing}"


def test_every_environment_variable_read_has_a_row():
    read = variables_read()
    assert {"POLARMEM_SIMD", "POLARMEM_MINILM_RUNTIME", "POLARMEM_CONFIG"} <= read  # the scan finds them
    missing = sorted(name for name in read if f"`{name}`" not in TABLE)
    assert not missing, f"docs/configuration.md lacks a row for {missing}"
