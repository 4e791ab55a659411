"""The Milvus backend: the storage seam (storage/backend.py) over a Milvus 2.3 server or cluster,
so any number of PolarMem processes serve the same namespaces (docs/deployment.md)."""
