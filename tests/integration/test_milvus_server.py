"""`polarmem serve --backend milvus`: real server processes (the CLI) over the session's real
Milvus, called over gRPC. Two servers share nothing but Milvus, as behind a load balancer."""

import uuid

import pytest

from milvus_serve import ServeProcess
from polarmem_server.faces.client import PolarMemClient

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`


def test_serve_backend_milvus_remember_recall_get_over_grpc(milvus_server, tmp_path):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    first = ServeProcess(milvus_server.uri, prefix, tmp_path).start()
    second = ServeProcess(milvus_server.uri, prefix, tmp_path).start()
    try:
        with PolarMemClient(first.address) as a, PolarMemClient(second.address) as b:
            assert a.health() == b.health() == "SERVING"
            a.create_namespace("photos", spaces=[("vis", 4)], encoder="none", concepts=["dog"])
            a.remember("photos", id="dog1", vectors={"vis": [1, 0, 0, 0]}, states={"dog": "has"})
            a.remember("photos", id="cat1", vectors={"vis": [0.9, 0.1, 0, 0]}, states={"cat": "has", "dog": "not_has"})
            b.remember("photos", id="dog2", vectors={"vis": [0.5, 0.5, 0, 0]}, states={"dog": "has", "ball": "has"})
            # `b` started before the namespace existed, and bound "ball" after `a` bound "cat"
            hits = b.recall("photos", vectors={"vis": [1, 0, 0, 0]}, required=["dog"], top_k=3).hits
            assert [(h.id, h.s_log) for h in hits] == [("dog1", 1), ("dog2", 1), ("cat1", -1)]
            # `a` reads `b`'s write: with `b`'s token (its own covers only its own, earlier writes;
            # `b`'s covers `a`'s too, being later)
            hits = a.recall(
                "photos",
                vectors={"vis": [1, 0, 0, 0]},
                required=["ball"],
                top_k=1,
                consistency_token=b.consistency_token,
            ).hits
            assert [h.id for h in hits] == ["dog2"]
            item = a.get_item("photos", "dog2", consistency_token=b.consistency_token).item
            assert item.id == "dog2" and sorted(item.has) == ["ball", "dog"]
            item = b.get_item("photos", "cat1").item
            assert list(item.has) == ["cat"] and list(item.not_has) == ["dog"]
            assert [n.name for n in b.list_namespaces()] == ["photos"]
    finally:
        assert first.stop() == 0, first.log()
        assert second.stop() == 0, second.log()
