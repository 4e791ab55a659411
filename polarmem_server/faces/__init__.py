"""The faces users touch: CLI, clients, quickstart, evaluation."""
