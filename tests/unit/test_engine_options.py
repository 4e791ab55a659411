"""Engine constructor options read from a server configuration (verification.engine_options):
dtype, engine_backend and engine_max_length, each with an engine default."""

from __future__ import annotations

import pytest

from polarmem_server.api.config import ServerConfig
from polarmem_server.scoring.verification import engine_options


def test_engine_defaults():
    assert engine_options(ServerConfig(engine="transformers", device="cpu")) == {"device": "cpu"}
    assert engine_options(ServerConfig(engine="tensorrt_llm")) == {"backend": "pytorch"}
    assert engine_options(ServerConfig(engine="lexical")) == {}
    assert engine_options(ServerConfig(engine="lexical", dtype="bfloat16")) == {}


def test_settings_reach_the_engine():
    assert engine_options(ServerConfig(engine="transformers", dtype="bfloat16", engine_max_length=512)) == {
        "device": "cpu",
        "dtype": "bfloat16",
        "max_length": 512,
    }
    assert engine_options(
        ServerConfig(engine="tensorrt_llm", dtype="float16", engine_backend="tensorrt", engine_max_length=4096)
    ) == {"backend": "tensorrt", "dtype": "float16", "max_length": 4096}


def test_bad_dtype_names_the_setting():
    with pytest.raises(ValueError, match="dtype must be one of float32, bfloat16, float16"):
        engine_options(ServerConfig(engine="transformers", dtype="fp16"))
