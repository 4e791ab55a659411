"""The local backend: RocksDB (the source of truth) plus the compiled in-memory index rebuilt from it."""
