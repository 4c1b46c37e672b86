"""A capable-model trial of the LLM backbone through the hand-answered queue (../shared/tools/llm_queue).

Two steps, around a ``rods synthesize --backbone llm`` run against the queue server:

    python scripts/llm_trial.py draw --n 10 --seed 13 --out trial/seeds.jsonl
    ... rods synthesize --seeds trial/seeds.jsonl --backbone llm ... --out trial/run
    python scripts/llm_trial.py show --queue /tmp/llmq     # the next request to answer, by hand
    python scripts/llm_trial.py stats --run trial/run --queue /tmp/llmq

``draw`` picks seeds from the train split with a seeded random choice (never the test split) and
writes them as BFCL JSONL. ``stats`` prints acceptance, LLM calls and tokens per accepted variant (a
table, then one JSON line). Tokens are counted on the queue's request and response files with a real
tokenizer: the tiny model's byte-level BPE (``trainer/tiny_model.py``, trained on BFCL transcripts;
no Qwen tokenizer is available offline), plus characters / 4 for comparison.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def draw(n: int, seed: int, out: Path) -> list[str]:
    """``n`` train seeds by ``random.Random(seed).sample`` over the sorted train ids; written as BFCL JSONL."""
    from envs.dataset import load_split

    tasks = {t.id: t for t in load_split("train")}
    ids = random.Random(seed).sample(sorted(tasks), n)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(tasks[i].to_bfcl()) + "\n" for i in ids))
    tmp.replace(out)
    return ids


def _request_text(request: dict) -> str:
    """What the model reads: every message's content, plus the schema it must answer in."""
    body = request.get("body", {})
    parts = [str(m.get("content") or "") for m in body.get("messages", [])]
    for key in ("tools", "response_format"):
        if body.get(key):
            parts.append(json.dumps(body[key]))
    return "\n".join(parts)


def _stage(request: dict) -> str:
    text = _request_text(request)
    for marker, stage in (("## Draft plan", "plan"), ("strict quality judge", "judge"), ("Drafts:", "rewrite"),
                          ("Propose ONE minimal edit", "patch")):
        if marker in text:
            return stage
    return "other"


def stats(run: Path, queue: Path, tokenizer: Path | None = None) -> dict:
    """Acceptance, calls and tokens per accepted variant of a finished run, from its files and the queue's."""
    from transformers import AutoTokenizer

    from trainer.tiny_model import ensure_tiny_model

    tok = AutoTokenizer.from_pretrained(str(tokenizer or ensure_tiny_model()))
    accepted = [json.loads(x) for x in (run / "accepted.jsonl").read_text().splitlines() if x.strip()]
    rejected = [json.loads(x) for x in (run / "rejected.jsonl").read_text().splitlines() if x.strip()]
    samples = len(accepted) + len(rejected)
    calls_acc = [int((a.get("provenance") or {}).get("llm_calls", 0)) for a in accepted]
    calls_all = sum(calls_acc) + sum(int(r.get("llm_calls", 0)) for r in rejected)
    prompt_tok = completion_tok = prompt_chars = completion_chars = 0
    by_stage: dict[str, int] = {}
    for req in sorted((queue / "queue").glob("*.request.json")):
        resp = req.with_name(req.name.replace(".request.", ".response."))
        request = json.loads(req.read_text() or "{}")
        if not request or not resp.exists():
            continue
        text, answer = _request_text(request), resp.read_text()
        prompt_tok += len(tok(text)["input_ids"])
        completion_tok += len(tok(answer)["input_ids"])
        prompt_chars += len(text)
        completion_chars += len(answer)
        by_stage[_stage(request)] = by_stage.get(_stage(request), 0) + 1
    n_acc = max(1, len(accepted))
    out = {"samples": samples, "accepted": len(accepted), "acceptance": round(len(accepted) / max(1, samples), 3),
           "calls_total": calls_all, "calls_per_accepted": round(calls_all / n_acc, 2),
           "calls_of_accepted_samples_mean": round(sum(calls_acc) / n_acc, 2), "calls_by_stage": by_stage,
           "tokens_total_tiny_bpe": prompt_tok + completion_tok,
           "tokens_per_accepted_tiny_bpe": round((prompt_tok + completion_tok) / n_acc),
           "prompt_tokens_per_accepted_tiny_bpe": round(prompt_tok / n_acc),
           "completion_tokens_per_accepted_tiny_bpe": round(completion_tok / n_acc),
           "tokens_per_accepted_chars_div_4": round((prompt_chars + completion_chars) / 4 / n_acc),
           "tokenizer": f"tiny-model byte-level BPE, vocab {len(tok)}",
           "rejection_reasons": sorted({r for x in rejected for r in x.get("reasons", [])})}
    return out


def show(queue: Path) -> str:
    """The oldest unanswered request: its number, the schema the answer must follow, and the prompt."""
    for req in sorted((queue / "queue").glob("*.request.json")):
        if req.with_name(req.name.replace(".request.", ".response.")).exists():
            continue
        request = json.loads(req.read_text() or "{}")
        if not request:
            continue
        body = request.get("body", {})
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name") or \
            ",".join(t.get("function", {}).get("name", "?") for t in body.get("tools") or [])
        prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
        answer = req.with_name(req.name.replace(".request.", ".response."))
        return f"# {req.name}: answer with one {schema} JSON object in {answer}\n\n{prompt}"
    return "# no unanswered request"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("draw", help="draw seeds from the train split with a seeded random choice")
    d.add_argument("--n", type=int, default=10)
    d.add_argument("--seed", type=int, default=13)
    d.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("stats", help="acceptance, calls and tokens per accepted variant of a finished run")
    s.add_argument("--run", type=Path, required=True)
    s.add_argument("--queue", type=Path, required=True, help="QUEUE_ROOT of the queue server")
    s.add_argument("--tokenizer", type=Path, default=None, help="tokenizer folder (default: the tiny model's)")
    w = sub.add_parser("show", help="print the oldest unanswered request of the queue (schema name and prompt)")
    w.add_argument("--queue", type=Path, required=True, help="QUEUE_ROOT of the queue server")
    args = parser.parse_args()
    if args.cmd == "show":
        print(show(args.queue))  # noqa: T201 - a script's output
        return
    if args.cmd == "draw":
        for i in draw(args.n, args.seed, args.out):
            print(i)  # noqa: T201 - a script's output
        return
    result = stats(args.run, args.queue, args.tokenizer)
    for k, v in result.items():
        print(f"{k:45s} {v}")  # noqa: T201 - a script's output
    print(json.dumps(result))  # noqa: T201 - a script's output


if __name__ == "__main__":
    main()
