"""Draws docs/evaluation/dev/quality_vs_accuracy.png from adaptive_default_weights.json (run from the repository root)."""
import json
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

d = json.load(open("docs/evaluation/dev/adaptive_default_weights.json"))
acc = [0.70, 0.80, 0.90, 0.95]
series = [("paper (otsu + hard)", "the paper's rule: Otsu + hard", "tab:orange", "s"),
          ("declared (rule without confidence)", "rule auto, without confidence", "tab:gray", "^"),
          ("declared", "rule auto (as shipped)", "tab:blue", "o")]
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, metric, label in ((axes[0], "conflict@3", "Conflict@3 (lower is better)"),
                          (axes[1], "ndcg@10", "nDCG@10 (higher is better)")):
    for key, name, colour, marker in series:
        cells = [d["cells"][f"SIMULATED {a:.2f}|{key}"][metric] for a in acc]
        y = [c[0] for c in cells]
        err = [[c[0] - c[1] for c in cells], [c[2] - c[0] for c in cells]]
        ax.errorbar(acc, y, yerr=err, label=name, color=colour, marker=marker, capsize=3)
    ax.set_xlabel("simulated verifier accuracy (declared to the namespace)")
    ax.set_ylabel(label)
    ax.set_xticks(acc)
    ax.grid(alpha=0.3)
axes[0].legend(fontsize=8)
fig.suptitle("COCO dev set, held-out half (4,891 items), 300 queries, through the real server; 95 % intervals", fontsize=10)
fig.tight_layout()
fig.savefig("docs/evaluation/dev/quality_vs_accuracy.png", dpi=110)
