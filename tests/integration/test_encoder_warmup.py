"""No cold start (issue 32): a namespace's text encoder is loaded when the namespace is created or
opened, in the background, before any call needs it."""

import logging

from polarmem_server.library import encoder_warmup
from polarmem_server.library.memory import Memory, NamespaceSettings
from polarmem_server.scoring import encoder as encoder_module


def test_creating_or_opening_a_namespace_starts_loading_its_encoder(tmp_path, monkeypatch):
    loaded = []
    monkeypatch.setattr(encoder_warmup, "_started", set())
    monkeypatch.setattr(encoder_warmup, "load_encoder", lambda name: loaded.append(name))
    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings(name="plain", encoder="none", spaces=()))
    assert encoder_warmup._started == set()  # nothing to load
    memory.create_namespace(NamespaceSettings(name="notes"))  # the default: minilm
    assert encoder_warmup._started == {"minilm"}
    memory.close()
    monkeypatch.setattr(encoder_warmup, "_started", set())
    reopened = Memory(tmp_path / "data")  # a restart opens "notes": the load starts again, once
    assert encoder_warmup._started == {"minilm"}
    reopened.close()
    for thread in [t for t in __import__("threading").enumerate() if t.name.startswith("polarmem-encoder-warmup")]:
        thread.join(timeout=60)
    assert loaded == ["minilm", "minilm"]


def test_a_failed_background_load_is_logged_and_retried(monkeypatch, caplog):
    monkeypatch.setattr(encoder_warmup, "_started", set())

    def broken(name):
        raise encoder_module.EncoderUnavailable("the [embed] extra is missing")

    monkeypatch.setattr(encoder_warmup, "load_encoder", broken)
    with caplog.at_level(logging.WARNING, logger="polarmem.encoder"):
        thread = encoder_warmup.warm("minilm")
        thread.join(timeout=10)
    assert "cannot be loaded here" in caplog.text and "[embed]" in caplog.text
    assert encoder_warmup.warm("minilm") is None  # unavailable here: not retried on every namespace


def test_a_call_during_the_load_waits_for_it_and_past_its_deadline_says_why(monkeypatch):
    import threading
    import time

    import pytest

    from polarmem_server.errors import DeadlineExceeded

    release = threading.Event()
    monkeypatch.setattr(encoder_warmup, "_started", set())
    monkeypatch.setattr(encoder_warmup, "_loading", {})
    monkeypatch.setattr(encoder_warmup, "load_encoder", lambda name: release.wait(30))
    thread = encoder_warmup.warm("minilm")
    with pytest.raises(DeadlineExceeded, match="'minilm' is still loading"):
        encoder_warmup.wait_loaded("minilm", time.monotonic() + 0.2)
    release.set()
    encoder_warmup.wait_loaded("minilm", time.monotonic() + 30)  # returns once loaded
    thread.join(timeout=10)
    assert not thread.is_alive() and encoder_warmup._loading == {}
    encoder_warmup.wait_loaded("minilm", time.monotonic())  # loaded: never waits
