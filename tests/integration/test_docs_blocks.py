"""Every code block of README.md and docs/*.md runs (issue 32): the conventions are in tests/docblocks.py.

One test per block, in document order; the blocks of a document share a working directory, a shell
environment, a Python interpreter and the servers they start. A block marked
`<!-- docs-test: skip (REASON) -->` is reported as skipped with REASON. Later blocks build on earlier
ones, so select whole documents (`-k agents`), not single blocks."""

from __future__ import annotations

import collections
import subprocess
import sys
import time
from pathlib import Path

import pytest

import docblocks

BLOCKS = docblocks.all_blocks()
RUNNABLE = [b for b in BLOCKS if b.kind]
LAST_OF_DOCUMENT = {b.path: b for b in RUNNABLE}


@pytest.fixture(scope="module")
def sessions():
    opened: dict[str, docblocks.DocumentSession] = {}
    failed: dict[str, str] = {}
    yield opened, failed
    for session in opened.values():
        session.close()


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_doc_block(block, sessions, tmp_path_factory):
    opened, failed = sessions
    try:
        if block.skip_reason:
            pytest.skip(f"{block.id}: {block.skip_reason}")
        if block.path in failed:
            pytest.fail(f"not run: {failed[block.path]} failed earlier in this document")
        session = opened.get(block.path)
        if session is None:
            workdir = tmp_path_factory.mktemp(Path(block.path).stem.replace(".", "-"))
            session = opened[block.path] = docblocks.DocumentSession(block.path, workdir)
        error = None
        try:
            session.run(block)
        except docblocks.BlockFailed as exc:
            failed[block.path], error = block.id, str(exc)
        if error:
            pytest.fail(error, pytrace=False)
    finally:
        if LAST_OF_DOCUMENT[block.path] is block and block.path in opened:
            opened.pop(block.path).close()  # its servers stop now, not at the end of the module


def test_documents_have_blocks_and_directives_only_on_blocks_that_run():
    """Every fence is found (an unclosed one raises); a skip directive on a block that never runs is a mistake."""
    kinds = collections.Counter(b.kind or f"not run ({b.language or 'no language'})" for b in BLOCKS)
    assert kinds["shell"] and kinds["python"], kinds
    for block in BLOCKS:
        assert not (block.skip_reason and not block.kind), f"{block.id}: a skip directive on a block that never runs"


def test_extract_and_skip_directive(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# t\n\n```bash\necho one\n```\n\n<!-- docs-test: skip (needs a GPU) -->\n\n```python\nimport torch\n```\n"
        "```text\noutput\n```\n    ```sh\n    echo indented\n    ```\n```console\n$ echo hi\nhi\n```\n"
    )
    blocks = docblocks.extract(tmp_path / "README.md", tmp_path)
    assert [(b.line, b.language, b.kind, b.skip_reason) for b in blocks] == [
        (3, "bash", "shell", None),
        (9, "python", "python", "needs a GPU"),
        (12, "text", None, None),
        (15, "sh", "shell", None),
        (18, "console", "shell", None),
    ]
    assert blocks[3].code == "echo indented\n" and blocks[4].code == "echo hi\n"
    (tmp_path / "docs" / "x.md").write_text("<!-- docs-test: sometimes -->\n```bash\ntrue\n```\n")
    with pytest.raises(ValueError, match="unknown docs-test directive"):
        docblocks.extract(tmp_path / "docs" / "x.md", tmp_path)


def test_substitution_and_shared_state(tmp_path):
    session = docblocks.DocumentSession("README.md", tmp_path)
    try:
        text = session.substitute(
            "polarmem serve --address 0.0.0.0:50051 --metrics-port 9464 --data-dir /var/lib/polarmem"
        )
        assert "50051" not in text and "9464" not in text and "0.0.0.0" not in text
        assert f"127.0.0.1:{session.ports['50051']}" in text and str(tmp_path / "var/lib/polarmem") in text
        assert session.env["POLARMEM_ADDRESS"] == f"127.0.0.1:{session.ports['50051']}"
        assert session.env["POLARMEM_METRICS_PORT"] == session.ports["9464"]
        block = docblocks.Block("README.md", 1, "bash", "export GREETING=hi\nsleep 300 &\n")
        session.run(block)
        out = session.run(docblocks.Block("README.md", 2, "bash", 'echo "$GREETING"\n'))
        assert out.strip() == "hi"
        session.run(docblocks.Block("README.md", 3, "python", "x = 41\n"))
        assert session.run(docblocks.Block("README.md", 4, "python", "print(x + 1)\n")).strip() == "42"
        with pytest.raises(docblocks.BlockFailed, match="NameError"):
            session.run(docblocks.Block("README.md", 5, "python", "print(undefined_name)\n"))
        with pytest.raises(docblocks.BlockFailed, match="exit status 3"):
            session.run(docblocks.Block("README.md", 6, "bash", "false || exit 3\n"))
    finally:
        session.close()


def test_wait_ready_after_serve_in_the_background(tmp_path):
    """`polarmem serve &` then at once `polarmem wait-ready`: the next command finds the server SERVING."""
    session = docblocks.DocumentSession("wait-ready", tmp_path)  # runs the shell and stops the server after
    try:
        out = session.run(
            docblocks.Block(
                "wait-ready",
                1,
                "bash",
                "polarmem serve --data-dir ./data --metrics-port -1 &\n"
                "polarmem wait-ready --wait-s 60\n"
                "polarmem namespace create notes --encoder none\n",
            )
        )
        assert f"SERVING: {session.env['POLARMEM_ADDRESS']}" in out and "notes" in out
    finally:
        session.close()


def test_wait_ready_times_out_with_a_clear_message():
    address = f"127.0.0.1:{docblocks.free_port()}"  # nothing listens there
    start = time.monotonic()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "polarmem"), "wait-ready", "--address", address, "--wait-s", "1.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"error: the server at {address} is not SERVING after 1.5 s (last answer: UNAVAILABLE" in done.stderr
    assert time.monotonic() - start < 30
