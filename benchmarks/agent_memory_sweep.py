"""The dev sweep that chose the agent recall's settings (cpp/include/polarmem/answer_recall.hpp
kAgentRule, swept through the core entry's agent_rule: library/core_recall.py CoreRecall): the library in process (the same recall
the MCP tool calls), every combination on the DEV splits of tests/data/agent_memory and
tests/data/conversations, scored as benchmarks/agent_memory.py scores them. Held-out data is
never read here.

    .venv/bin/python benchmarks/agent_memory_sweep.py

Writes benchmarks/results/agent-memory-sweep-dev.json."""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_memory import DATA, count_conversation, count_question, jsonl, summarise, summarise_conversation  # noqa: E402

from polarmem_server.library import CoreRecall  # noqa: E402
from polarmem_server.domain.items import ItemInput  # noqa: E402
from polarmem_server.domain.settings import NamespaceSettings  # noqa: E402
from polarmem_server.library.memory import Memory  # noqa: E402

COVERAGE = (1.0, 0.75, 0.5)
BONUS = (0.05, 0.1, 0.2, 0.3)
PENALTY = (1.0, 0.1)
OUT = Path(__file__).resolve().parent / "results" / "agent-memory-sweep-dev.json"


def load(memory: Memory, name: str, notes: list[dict]) -> None:
    memory.create_namespace(NamespaceSettings(name=name))
    for note in sorted(notes, key=lambda n: (n["date"], n["id"])):
        memory.remember(name, ItemInput(id=note["id"], kind="text", text=note["text"]))


def main() -> int:
    memory = Memory(Path(tempfile.mkdtemp(prefix="polarmem-sweep-")))
    notes = [n for n in jsonl(DATA / "agent_memory" / "notes.jsonl") if n["split"] == "dev"]
    questions = [q for q in jsonl(DATA / "agent_memory" / "questions.jsonl") if q["split"] == "dev"]
    load(memory, "notes", notes)
    observations = jsonl(DATA / "conversations" / "observations.jsonl")
    asked = [q for q in jsonl(DATA / "conversations" / "questions.jsonl") if q["split"] == "dev"]
    for conversation in sorted({q["conversation"] for q in asked}):
        load(memory, f"conv-{conversation}", [o for o in observations if o["conversation"] == conversation])
    turns_of = {o["id"]: set(o["turn_ids"]) for o in observations}
    rows = []
    for coverage, bonus, penalty in itertools.product(COVERAGE, BONUS, PENALTY):
        CoreRecall(agent_rule=(coverage, bonus, penalty)).attach(memory)  # the core's entry with this rule
        counts: dict = defaultdict(int)
        for q in questions:
            result = memory.recall("notes", q["question"], k=5, mode="answer")
            count_question(counts, q, [(h.item_id, h.status) for h in result.hits], result.answer_summary)
        conversation_counts: dict = defaultdict(int)
        for q in asked:
            top5 = memory.recall(f"conv-{q['conversation']}", q["question"], k=5, mode="answer").hits
            top10 = memory.recall(f"conv-{q['conversation']}", q["question"], k=10, mode="answer").hits
            count_conversation(
                conversation_counts, q, [(h.item_id, h.status) for h in top5], [h.item_id for h in top10], turns_of
            )
        row = {
            "topic_coverage": coverage,
            "verified_bonus": bonus,
            "contradiction_penalty": penalty,
            "agent_notes": summarise(counts),
            "conversations": summarise_conversation(conversation_counts),
        }
        rows.append(row)
        notes_row, conversation_row = row["agent_notes"], row["conversations"]
        print(
            coverage,
            bonus,
            penalty,
            "| first",
            notes_row["right_note_first"],
            "top5",
            notes_row["right_note_in_top5"],
            "contra",
            notes_row["contradiction_shown_unlabelled_or_verified"],
            "pno",
            notes_row["presence_no_shown_as_verified_absence"],
            "absentV",
            notes_row["absent_questions_with_a_verified_hit"],
            "| conv@5",
            conversation_row["evidence_recall_at5"],
            "advV",
            conversation_row["adversarial_with_a_verified_hit"],
            "evV",
            conversation_row["evidence_in_top5_labelled_verified"],
            flush=True,
        )
    memory.close()
    OUT.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
