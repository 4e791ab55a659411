"""--backend / --milvus-* settings: flags, environment and TOML reach ServerConfig, and combinations
that cannot work are one-line ConfigErrors naming the setting (no Milvus needed)."""

import pytest

from polarmem_server.api.config import ConfigError, load_config
from polarmem_server.faces.cli import build_parser


def test_local_is_the_default_and_milvus_settings_map_one_to_one(tmp_path):
    assert load_config({}, env={}).backend == "local"
    config = load_config(
        {
            "backend": "milvus",
            "milvus_uri": "https://m.example:19530",
            "milvus_token": "u:p",
            "milvus_timeout": 3.5,
            "milvus_prefix": "prod",
        },
        env={},
    )
    settings = config.milvus_settings()
    assert (settings.uri, settings.token, settings.timeout_s, settings.prefix) == (
        "https://m.example:19530",
        "u:p",
        3.5,
        "prod",
    )
    assert load_config({"backend": "milvus"}, env={}).milvus_settings().uri == "http://127.0.0.1:19530"
    assert load_config({"backend": "milvus"}, env={}).milvus_settings().layout == "collection"
    assert load_config({"backend": "milvus", "milvus_layout": "shared"}, env={}).milvus_settings().layout == "shared"
    assert load_config({"backend": "milvus", "milvus_layout": "pooled"}, env={}).milvus_settings().layout == "pooled"


def test_environment_and_config_file_and_flags(tmp_path):
    env = {"POLARMEM_BACKEND": "milvus", "POLARMEM_MILVUS_URI": "http://10.0.0.5:19530", "POLARMEM_MILVUS_TLS": "yes"}
    config = load_config({}, env=env)
    assert (config.backend, config.milvus_uri, config.milvus_tls) == ("milvus", "http://10.0.0.5:19530", True)
    toml = tmp_path / "polarmem.toml"
    toml.write_text('[server]\nbackend = "milvus"\nmilvus_prefix = "team_a"\nmilvus_timeout = 4\n')
    config = load_config({}, env={}, config_file=str(toml))
    assert (config.backend, config.milvus_prefix, config.milvus_timeout) == ("milvus", "team_a", 4.0)
    args = build_parser().parse_args(
        [
            "serve",
            "--backend",
            "milvus",
            "--milvus-uri",
            "http://h:1",
            "--milvus-tls",
            "true",
            "--milvus-ca-pem",
            "/ca.pem",
            "--milvus-timeout",
            "2",
        ]
    )
    assert (args.backend, args.milvus_uri, args.milvus_tls, args.milvus_ca_pem, args.milvus_timeout) == (
        "milvus",
        "http://h:1",
        "true",
        "/ca.pem",
        2.0,
    )


@pytest.mark.parametrize(
    "flags, words",
    [
        ({"backend": "mongo"}, "setting backend: use 'local' or 'milvus'"),
        ({"milvus_uri": "http://h:19530"}, "setting milvus_uri: the milvus_* settings need backend milvus"),
        ({"milvus_prefix": "x"}, "setting milvus_prefix: the milvus_* settings need backend milvus"),
        ({"backend": "milvus", "recover": "point-in-time"}, "setting recover: is for the local RocksDB store"),
        ({"backend": "milvus", "backup_dir": "/b"}, "setting backup_dir: is for the local backend's snapshots"),
        ({"backend": "milvus", "durability": "async"}, "setting durability: is for the local store"),
        ({"backend": "milvus", "processes": 2}, "setting processes: is for the local backend"),
        ({"backend": "milvus", "milvus_timeout": 0}, "setting milvus_timeout: must be > 0"),
        (
            {"backend": "milvus", "milvus_layout": "partition-key"},
            "setting milvus_layout: use 'collection', 'shared' or 'pooled'",
        ),
        ({"milvus_layout": "shared"}, "setting milvus_layout: the milvus_* settings need backend milvus"),
        ({"backend": "milvus", "milvus_ca_pem": "/ca.pem"}, "setting milvus_ca_pem: it is for TLS"),
        ({"graph_checkpoint_s": -1}, "setting graph_checkpoint_s: must be >= 0 seconds"),
        ({"graph_checkpoint_s": float("nan")}, "setting graph_checkpoint_s: must be >= 0 seconds"),
        ({"backend": "milvus", "graph_checkpoint_s": 60}, "setting graph_checkpoint_s: is for the local backend"),
    ],
)
def test_combinations_that_cannot_work_are_one_line_config_errors(flags, words):
    with pytest.raises(ConfigError) as caught:
        load_config(flags, env={})
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_bad_milvus_uri_and_prefix_name_their_setting(tmp_path):
    pytest.importorskip("pymilvus")
    from polarmem_server.api.server import PolarMemServer
    from servertools import make_config

    for flags, words in (
        ({"milvus_uri": "127.0.0.1:19530"}, "setting milvus_uri: milvus uri must start with http://"),
        ({"milvus_prefix": "9x"}, "setting milvus_prefix: milvus prefix must be letters"),
    ):
        config = load_config({"backend": "milvus", **flags}, env={})
        server = PolarMemServer(
            make_config(
                tmp_path, backend=config.backend, milvus_uri=config.milvus_uri, milvus_prefix=config.milvus_prefix
            )
        )
        with pytest.raises(ConfigError, match=words):
            server.start()


def test_unreachable_milvus_at_start_is_a_config_error_naming_the_uri(tmp_path):
    pytest.importorskip("pymilvus")
    from polarmem_server.api.server import PolarMemServer
    from milvus_server import free_port
    from servertools import make_config

    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    server = PolarMemServer(make_config(tmp_path, backend="milvus", milvus_uri=uri, milvus_timeout=1.0))
    with pytest.raises(ConfigError, match=f"setting milvus_uri: Milvus at {uri} is unreachable"):
        server.start()
