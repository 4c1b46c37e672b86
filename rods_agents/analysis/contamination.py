"""Near-duplicate detection over user text and call sequences, combined.

``similarity(a, b) = 0.5 * jaccard(word 3-grams of the user turns) + 0.5 * containment(calls of a in b)``
where calls are compared parsed (:func:`rods_agents.analysis.variant_quality.parsed_call`: name plus the
arguments bound to parameter names, so ``sort('a')``, ``sort(file_name='a')`` and a copy without the
spaces after commas are one call). Call overlap alone is a poor
signal: distinct BFCL scenarios on opposite sides of the train/test split already share most of
their calls (bfcl-multi-turn.md §9), so text and structure are compared together, and the
rejection threshold is calibrated against that natural train-vs-test baseline: it sits above the
largest similarity any real train task has to any test task (plus a margin), so a legitimate
sample is not rejected for looking like the benchmark in general, while a planted near-copy of a
test task (same calls, lightly edited text) is.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from envs.task import Task
from rods_agents.analysis.lookups import without_lookups
from rods_agents.analysis.novelty import SIBLING_TEXT_COPY, mask_digits, masked_text, ngrams
from rods_agents.analysis.variant_quality import parsed_call, parsed_ground_truth

_WORD = re.compile(r"[a-z0-9_.']+")
MARGIN = 0.05
FLOOR = 0.6


@dataclass(frozen=True)
class Fingerprint:
    task_id: str
    text: frozenset[str]
    calls: frozenset[str]
    scenario: int | None = None
    text5: frozenset = frozenset()  # word 5-grams, entities and digits masked (novelty.masked_text)
    masked_calls: tuple = ()  # parsed calls with digits masked, sorted (a multiset)


def _norm_call(call: str) -> str:
    name, args = parsed_call(call)
    return f"{name}({args})"


def text_print(task: Task) -> Fingerprint:
    """What :func:`similarity` reads (word 3-grams and calls), without the novelty fields the dedupe needs: the
    test index and the train baseline are compared by similarity alone, so they skip masking every task's text."""
    words = _WORD.findall(" ".join(m.content for turn in task.turns for m in turn).lower())
    grams = frozenset(" ".join(words[i:i + 3]) for i in range(max(0, len(words) - 2))) or frozenset(words)
    calls = frozenset(_norm_call(c) for turn in task.ground_truth for c in turn)
    return Fingerprint(task.id, grams, calls, task.scenario)


def fingerprint(task: Task) -> Fingerprint:
    """The near-duplicate fingerprint of ``task`` as judged: the lookups written into its ground truth afterwards
    (``ls()``, ``get_user_id(user=...)``) are the same in many siblings and say nothing about its substance."""
    task = without_lookups(task)
    masked = tuple(sorted(f"{m}({mask_digits(a)})" for turn in parsed_ground_truth(task) for m, a in turn))
    base = text_print(task)
    return Fingerprint(task.id, base.text, base.calls, task.scenario, frozenset(ngrams(masked_text(task), mask=True)),
                       masked)


def similarity(a: Fingerprint, b: Fingerprint) -> float:
    text = len(a.text & b.text) / len(a.text | b.text) if (a.text or b.text) else 1.0
    calls = len(a.calls & b.calls) / len(a.calls) if a.calls else 1.0
    return 0.5 * text + 0.5 * calls


@lru_cache(maxsize=1)
def test_index() -> tuple[Fingerprint, ...]:
    from envs.dataset import load_split

    return tuple(text_print(t) for t in load_split("test"))


def nearest(fp: Fingerprint, index: tuple[Fingerprint, ...] | list[Fingerprint]) -> tuple[float, str | None]:
    best, best_id = 0.0, None
    for other in index:
        s = similarity(fp, other)
        if s > best:
            best, best_id = s, other.task_id
    return best, best_id


def nearest_scores(fps: Sequence[Fingerprint], index: Sequence[Fingerprint]) -> list[float]:
    """``nearest(fp, index)[0]`` for each of ``fps``, exactly, from shared-gram and shared-call counts over an inverted
    index instead of a set intersection and union per pair: the train baseline compares 400 x 400 tasks at every
    start of a run (5.7 s of a 4-seed ``rods synthesize``, most of it those 160k pairs)."""
    grams: defaultdict[str, list[int]] = defaultdict(list)
    calls: defaultdict[str, list[int]] = defaultdict(list)
    for j, other in enumerate(index):
        for g in other.text:
            grams[g].append(j)
        for c in other.calls:
            calls[c].append(j)
    out = []
    for fp in fps:
        shared_text, shared_calls = Counter(), Counter()
        for g in fp.text:
            shared_text.update(grams.get(g, ()))
        for c in fp.calls:
            shared_calls.update(calls.get(c, ()))
        best = 0.0
        for j, other in enumerate(index):
            union = len(fp.text) + len(other.text) - shared_text[j]
            text = shared_text[j] / union if union else 1.0
            call = shared_calls[j] / len(fp.calls) if fp.calls else 1.0
            best = max(best, 0.5 * text + 0.5 * call)
        out.append(best)
    return out


@lru_cache(maxsize=1)
def natural_baseline() -> dict[str, float]:
    """Largest and 99th-percentile similarity of real train tasks to their nearest test task."""
    from envs.dataset import load_split

    scores = sorted(nearest_scores([text_print(t) for t in load_split("train")], test_index()))
    return {"max": round(scores[-1], 4), "p99": round(scores[int(0.99 * (len(scores) - 1))], 4),
            "median": round(scores[len(scores) // 2], 4)}


def contamination_threshold() -> float:
    return round(max(FLOOR, natural_baseline()["max"] + MARGIN), 4)


def duplicate_threshold() -> float:
    """Threshold between a variant and its seed or another accepted sample (same calibration)."""
    return contamination_threshold()


def sibling_copy(a: Fingerprint, b: Fingerprint) -> str | None:
    """Why two variants of one scenario (the four categories share it, so sibling seeds' variants count) are
    near-copies, or None: 'sibling text 0.83' when they share more than ``SIBLING_TEXT_COPY`` of the shorter
    text's word 5-grams (digits masked), 'sibling calls' when they make the same calls once digits are masked
    (:func:`rods_agents.analysis.novelty.near_copy`)."""
    if a.scenario is None or a.scenario != b.scenario:
        return None
    if a.text5 and b.text5:
        shared = len(a.text5 & b.text5) / min(len(a.text5), len(b.text5))
        if shared > SIBLING_TEXT_COPY:
            return f"sibling text {shared:.2f}"
    return "sibling calls" if a.masked_calls and a.masked_calls == b.masked_calls else None


def duplicate_reason(a: Fingerprint, b: Fingerprint, same_config: bool) -> str | None:
    """Why two synthesized samples are duplicates, or None: they make (almost) the same calls and either start
    from the same config or say nearly the same thing (renamed entities make calls differ), or they are
    near-copies among the variants of one scenario (:func:`sibling_copy`). The run's rejection row carries it,
    so a user can tell a sibling clash from a repeated plan."""
    sibling = sibling_copy(a, b)
    if sibling:
        return sibling
    if not a.calls:
        return None
    calls = len(a.calls & b.calls) / len(a.calls)
    if calls < 0.9:
        return None
    if same_config:
        return f"calls {calls:.2f}, same config"
    text = len(a.text & b.text) / len(a.text | b.text) if (a.text or b.text) else 1.0
    return f"calls {calls:.2f}, text {text:.2f}" if text >= 0.5 else None


def same_substance(a: Fingerprint, b: Fingerprint, same_config: bool) -> bool:
    """Whether :func:`duplicate_reason` finds a reason."""
    return duplicate_reason(a, b, same_config) is not None
