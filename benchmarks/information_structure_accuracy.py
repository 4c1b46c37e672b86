"""Accuracy of the information-structure detector against hand labels (docs/information-structure.md).

    python benchmarks/information_structure_accuracy.py [--labels benchmarks/information_structure_labels.json]
    python benchmarks/information_structure_accuracy.py --labels benchmarks/information_structure_labels_heldout.json

Per part (implicit calls, conditions, references): precision and recall over the labelled seeds,
counted per call (implicit) or per turn-item (conditions, references: min(detected, labelled) per turn
is a hit), plus the implicit-call share of the sample and of all 400 train seeds. Prints a table and
one JSON line.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from rich.console import Console
from rich.table import Table

from envs.dataset import load_split, load_tasks
from rods_agents.analysis.information_structure import information_structure

LABELS = Path(__file__).with_name("information_structure_labels.json")


def _pr(tp: int, fp: int, fn: int) -> tuple[float, float]:
    return (round(tp / (tp + fp), 3) if tp + fp else 1.0), (round(tp / (tp + fn), 3) if tp + fn else 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--labels", default=str(LABELS))
    args = ap.parse_args()
    data = json.loads(Path(args.labels).read_text())
    ids = list(data["labels"])
    drawn = {t.id for t in random.Random(data["sample_seed"]).sample(load_split("train"), data.get("sample_size", len(ids)))}
    assert set(ids) <= drawn, "the labelled ids are not from the seeded sample"
    stats = {k: [0, 0, 0] for k in ("implicit", "conditions", "references")}
    calls = implicit_labelled = implicit_detected = 0
    misses: list[str] = []
    for task in load_tasks(ids=ids):
        s = information_structure(task)
        labels = data["labels"][task.id]
        for ts in s.turns:
            lab = labels.get(str(ts.turn), {})
            want = set(lab.get("implicit", []))
            got = {c.index for c in ts.calls if not c.explicit}
            calls += len(ts.calls)
            implicit_labelled += len(want)
            implicit_detected += len(got)
            st = stats["implicit"]
            st[0] += len(want & got)
            st[1] += len(got - want)
            st[2] += len(want - got)
            for i in sorted(want ^ got):
                misses.append(f"{task.id} t{ts.turn} {ts.calls[i].method if i < len(ts.calls) else i}: "
                              f"{'false implicit' if i in got else 'missed implicit'}")
            for part, found in (("conditions", len(ts.conditions)), ("references", len(ts.references))):
                n = int(lab.get(part, 0))
                st = stats[part]
                st[0] += min(n, found)
                st[1] += max(0, found - n)
                st[2] += max(0, n - found)
                if n != found:
                    misses.append(f"{task.id} t{ts.turn} {part}: labelled {n}, detected {found}")
    train = load_split("train")
    total = sum(information_structure(t).counts()["calls"] for t in train)
    share_all = round(sum(information_structure(t).counts()["implicit"] for t in train) / total, 4)
    table = Table(title=f"Information-structure detector vs hand labels ({len(ids)} train seeds, {calls} calls)")
    for col in ("part", "labelled", "detected", "true positives", "precision", "recall"):
        table.add_column(col)
    out: dict = {"seeds": len(ids), "calls": calls}
    for part, (tp, fp, fn) in stats.items():
        p, r = _pr(tp, fp, fn)
        table.add_row(part, str(tp + fn), str(tp + fp), str(tp), f"{p:.3f}", f"{r:.3f}")
        out[part] = {"labelled": tp + fn, "detected": tp + fp, "tp": tp, "precision": p, "recall": r}
    out["implicit_share"] = {"sample_labelled": round(implicit_labelled / calls, 4),
                             "sample_detected": round(implicit_detected / calls, 4), "train_detected": share_all}
    console = Console()
    console.print(table)
    console.print(f"implicit-call share: labelled {out['implicit_share']['sample_labelled']:.3f}, detected "
                  f"{out['implicit_share']['sample_detected']:.3f} on the sample; detected {share_all:.3f} on all "
                  f"{len(train)} train seeds")
    for m in misses:
        console.print(f"  disagreement: {m}")
    console.print(json.dumps(out), soft_wrap=True, highlight=False)


if __name__ == "__main__":
    main()
