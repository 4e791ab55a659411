"""Entry of a replica started again by the supervisor: ``python -m polarmem_server.api.replica_main SPEC``.

SPEC is the JSON file replica_supervisor.py wrote into the group's private directory: the
server's configuration, the replica's index, the shared port and the primary's pid.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from polarmem_server.api.config import ServerConfig
    from polarmem_server.api.processes import ReplicaRole, replica_config
    from polarmem_server.api.server import serve_replica

    spec = json.loads(Path(argv[0]).read_text())
    config = replica_config(ServerConfig(**spec["config"]), spec["index"], spec["port"])
    return serve_replica(config, ReplicaRole(spec["index"], Path(spec["directory"]), spec["primary_pid"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
