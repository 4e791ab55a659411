"""One default for a namespace's vocabulary, whichever face makes it: open (every content word
of a text note is a concept), closed only when asked; namespaces stored closed stay closed."""

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.service import settings_from
from polarmem_server.domain.settings import DEFAULT_OPEN_VOCABULARY, NamespaceSettings
from polarmem_server.library.namespace_autocreate import template_settings


def test_the_library_the_api_and_auto_created_namespaces_share_the_open_default():
    assert DEFAULT_OPEN_VOCABULARY is True
    assert NamespaceSettings("notes").open_vocabulary is True
    assert settings_from("notes", pb.NamespaceConfig()).open_vocabulary is True  # an unset field: the default
    assert template_settings("notes").open_vocabulary is True


def test_a_closed_vocabulary_is_asked_for_and_kept():
    assert settings_from("fixed", pb.NamespaceConfig(open_vocabulary=False)).open_vocabulary is False
    closed = NamespaceSettings("fixed", open_vocabulary=False).validate()
    # a stored false is a closed namespace (as every one stored before the field existed), not the default
    assert NamespaceSettings.from_record(closed.to_record(created_ms=1)).open_vocabulary is False
    assert NamespaceSettings.from_record(NamespaceSettings("notes").to_record(created_ms=1)).open_vocabulary is True


def test_an_older_clients_unset_field_reads_as_the_default():
    """A client on the protos where the field was a plain bool sends nothing for false: the bytes
    of its request parse as unset here, hence open."""
    older = pb.NamespaceConfig(encoder="none").SerializeToString()  # what it sent for open_vocabulary=False
    assert settings_from("old", pb.NamespaceConfig.FromString(older)).open_vocabulary is True
    assert (
        settings_from(
            "new", pb.NamespaceConfig.FromString(pb.NamespaceConfig(open_vocabulary=False).SerializeToString())
        ).open_vocabulary
        is False
    )
