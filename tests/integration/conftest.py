"""A real server on 127.0.0.1:0 with RocksDB in a temp dir, and clients over real channels."""

import grpc
import pytest

from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.api.server import PolarMemServer
from servertools import DIM, make_config


@pytest.fixture
def server(tmp_path):
    srv = PolarMemServer(make_config(tmp_path, backup_dir=str(tmp_path))).start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server):
    with PolarMemClient(server.address) as c:
        yield c


@pytest.fixture
def ns(client):
    client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    return "t"


@pytest.fixture
def stub(server):
    """A raw MemoryService stub on the server (for requests the clients would check first)."""
    with grpc.insecure_channel(server.address) as channel:
        yield pb_grpc.MemoryServiceStub(channel)
