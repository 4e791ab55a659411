"""No token, no start (issue 49, item 2).

Before: an empty tokens file, `[tokens]` alone or a misspelt `[token]` gave an open server with no
log line, and emptying the file then SIGHUP opened a running one ("reloaded: 0 token(s)")."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from polarmem_server.api.auth import Authorizer, load_grants
from polarmem_server.api.config import ConfigError
from polarmem_server.api.server import PolarMemServer
from polarmem_server.errors import InvalidArgument
from servertools import make_config

ENTRYPOINT = Path(__file__).resolve().parents[2] / "deploy" / "docker" / "entrypoint.py"
GOOD = '[tokens.ops]\ntoken = "s3cret-token"\nrole = "admin"\n'
EMPTY_FORMS = {
    "empty": "",
    "lone_table": "[tokens]\n",
    "misspelt_table": '[token.ops]\ntoken = "x"\nrole = "admin"\n',
    "comment_only": "# tokens go here\n",
    "tokens_not_a_table": 'tokens = "abc"\n',
}


@pytest.mark.parametrize("form", sorted(EMPTY_FORMS))
def test_a_tokens_file_without_a_token_is_refused_naming_the_file(tmp_path, form):
    path = tmp_path / "tokens.toml"
    path.write_text(EMPTY_FORMS[form])
    with pytest.raises(InvalidArgument, match=str(path)):
        load_grants(path)
    with pytest.raises(ConfigError) as refused:
        PolarMemServer(make_config(tmp_path, tokens_file=str(path))).start()
    assert str(path) in str(refused.value) and "tokens_file" in str(refused.value)


def test_a_reload_that_would_yield_no_token_keeps_the_old_ones_and_logs_an_error(tmp_path, caplog):
    path = tmp_path / "tokens.toml"
    path.write_text(GOOD)
    authorizer = Authorizer(path=path)
    before = authorizer.grants
    for form in EMPTY_FORMS.values():
        path.write_text(form)
        with caplog.at_level(logging.INFO, logger="polarmem.auth"):
            caplog.clear()
            assert not authorizer.reload()
        assert authorizer.enabled and authorizer.grants == before
        assert any(r.levelno == logging.ERROR and str(path) in r.getMessage() for r in caplog.records)
        assert not any("reloaded:" in r.getMessage() or "token(s)" in r.getMessage() for r in caplog.records)


def entrypoint(args, **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("POLARMEM_")}
    environment.update(env)
    environment["PATH"] = f"{Path(sys.executable).parent}:{environment.get('PATH', '')}"  # the installed `polarmem`
    return subprocess.run(
        [sys.executable, str(ENTRYPOINT), *args], capture_output=True, text=True, env=environment, timeout=60
    )


def test_the_docker_entrypoint_refuses_a_public_address_without_tokens(tmp_path):
    refused = entrypoint([], POLARMEM_ADDRESS="0.0.0.0:0", POLARMEM_DATA_DIR=str(tmp_path / "d"))
    assert refused.returncode == 2 and "POLARMEM_ALLOW_UNAUTHENTICATED=yes" in refused.stderr
    assert not (tmp_path / "d").exists()  # nothing was started
    flag = entrypoint(["--address", "[::]:0"], POLARMEM_DATA_DIR=str(tmp_path / "d"))
    assert flag.returncode == 2 and "[::]:0" in flag.stderr


def test_the_docker_entrypoint_lets_through_tokens_loopback_or_an_explicit_yes(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(GOOD)
    # `serve --help` stands for the server: what matters is that the entrypoint hands over to it
    for args, env in ((["--help"], {"POLARMEM_ADDRESS": "0.0.0.0:0"}),):
        assert entrypoint(args, **env).returncode == 0
    from importlib import util

    spec = util.spec_from_file_location("entrypoint", ENTRYPOINT)
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.refusal([], {"POLARMEM_ADDRESS": "0.0.0.0:50051", "POLARMEM_TOKENS_FILE": str(tokens)}) is None
    assert module.refusal([], {"POLARMEM_ADDRESS": "127.0.0.1:50051"}) is None
    assert module.refusal(["--address", "localhost:1"], {"POLARMEM_ADDRESS": "0.0.0.0:1"}) is None
    assert module.refusal([], {"POLARMEM_ADDRESS": "0.0.0.0:50051"}) is not None
    allowed = entrypoint(["--allow-unauthenticated", "--help"], POLARMEM_ADDRESS="0.0.0.0:0")
    assert allowed.returncode == 0 and "usage" in allowed.stdout.lower()
    allowed_env = entrypoint(["--help"], POLARMEM_ADDRESS="0.0.0.0:0", POLARMEM_ALLOW_UNAUTHENTICATED="yes")
    assert allowed_env.returncode == 0
