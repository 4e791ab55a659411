"""Where a negation ends, read on the captions of the bundled dev set (10,000 COCO val2014 images,
50,017 captions; polarmem_server/data/README.md): the set every parse setting is chosen on.

COCO captions seldom negate, so most of what the parse reads as negated in them comes from a
negation's scope running past where it ends ("a man without a shirt riding a surfboard" read as
NOT_HAS surfboard): a fabricated state that a hard Recall would then use to push the item down.
Two readings, with `text.parse(...).polarity()`, as the server reads a text note:

* **labels** — the vocabulary is the 80 COCO categories (a namespace that declared them). A
  NOT_HAS read on a category the image's annotations hold is wrong; on one they lack, right (the
  annotations are the reference: a caption that says "no cars" of an image annotated with a car
  counts as wrong too, so the floor is not 0); HAS on a category the annotations hold or lack
  is counted too (a mention the parse misses, "a cat's face", lowers the first);
* **open** — every content word of the captions is a concept (an open vocabulary): the captions
  with any concept read as negated, and each one's negated concepts, so that two runs (two
  builds of the parse) can be compared caption by caption with --compare.

Writes benchmarks/results/<label>.json. Not a test.

    python benchmarks/coco_negation.py --label coco_negation
    python benchmarks/coco_negation.py --label coco_negation --compare benchmarks/results/coco_negation_before.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from polarmem_server.domain import text
from polarmem_server.domain.vocabulary import Vocabulary
from polarmem_server.faces.evaluation import dev_rows

HERE = Path(__file__).resolve().parent


def polarity(caption: str, vocabulary: Vocabulary) -> dict[str, bool]:
    """Concept name -> negated, as the server reads the caption."""
    return {vocabulary.name(c): is_negated for c, is_negated in text.parse(caption, vocabulary).polarity().items()}


def negated(caption: str, vocabulary: Vocabulary) -> list[str]:
    return sorted(name for name, is_negated in polarity(caption, vocabulary).items() if is_negated)


def read_labels(rows: list[dict]) -> dict:
    categories = sorted({c for r in rows for c in (*r["has"], *r["not_has"])})
    vocabulary = Vocabulary(categories)
    wrong, right = [], []
    has_on_present = has_on_absent = 0
    for r in rows:
        has = set(r["has"])
        for caption in r["captions"]:
            for name, is_negated in sorted(polarity(caption, vocabulary).items()):
                if is_negated:
                    (wrong if name in has else right).append({"caption": caption, "concept": name})
                else:
                    has_on_present += name in has
                    has_on_absent += name not in has
    return {
        "categories": len(categories),
        "not_has_on_present": len(wrong),
        "not_has_on_absent": len(right),
        "has_on_present": has_on_present,
        "has_on_absent": has_on_absent,
        "wrong": wrong,
        "right": right,
    }


def read_open(rows: list[dict]) -> dict:
    captions = [c for r in rows for c in r["captions"]]
    vocabulary = Vocabulary(sorted({w for c in captions for w in text.content_terms(c)}))
    read = {c: n for c in captions if (n := negated(c, vocabulary))}
    return {
        "concepts": len(vocabulary),
        "captions_with_negated": len(read),
        "negated_states": sum(map(len, read.values())),
        "negated": read,
    }


def compare(now: dict, before: dict) -> list[dict]:
    changed = []
    for caption in sorted(set(now) | set(before)):
        a, b = set(before.get(caption, ())), set(now.get(caption, ()))
        if a != b:
            changed.append({"caption": caption, "no_longer_negated": sorted(a - b), "newly_negated": sorted(b - a)})
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="coco_negation")
    parser.add_argument("--compare", type=Path, help="an earlier run's result file: list the captions read otherwise")
    args = parser.parse_args(argv)
    rows = dev_rows()
    report = {
        "data": "polarmem_server/data (COCO val2014 dev, 10,000 images)",
        "captions": sum(len(r["captions"]) for r in rows),
        "labels": read_labels(rows),
        "open": read_open(rows),
    }
    labels, open_ = report["labels"], report["open"]
    print(
        f"labels: NOT_HAS on a present category {labels['not_has_on_present']}, on an absent one "
        f"{labels['not_has_on_absent']}; HAS on a present category {labels['has_on_present']:,}, on an absent one "
        f"{labels['has_on_absent']:,} ({report['captions']:,} captions, {labels['categories']} categories)"
    )
    print(
        f"open: {open_['captions_with_negated']} captions with a negated concept, {open_['negated_states']} negated "
        f"states ({open_['concepts']:,} concepts)"
    )
    if args.compare:
        before = json.loads(args.compare.read_text())
        report["compared_with"] = str(args.compare)
        report["changed"] = compare(open_["negated"], before["open"]["negated"])
        report["labels_before"] = {k: before["labels"][k] for k in ("not_has_on_present", "not_has_on_absent")}
        print(
            f"against {args.compare}: labels {report['labels_before']} before; {len(report['changed'])} captions "
            f"read otherwise in the open vocabulary"
        )
        for c in report["changed"]:
            print(f"  {c['caption']!r}: no longer negated {c['no_longer_negated']}, newly {c['newly_negated']}")
    out = HERE / "results" / f"{args.label}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
