"""A tiny Qwen3-architecture causal LM with a locally trained tokenizer, built once and cached.

Why: the CPU training recipe and the real-vLLM tests need a model that runs in seconds on 2 cores, yet looks like the
GPU recipe's Qwen3 to every tool in the chain (TRL's chat-template checks, vLLM's CPU attention, the Hermes
tool-call parser). Nothing is downloaded: the model comes from a config, the byte-level BPE tokenizer is trained on
BFCL train-split transcripts rendered through the chat template, and the template is TRL's own
``qwen3_instruct_2507.jinja`` read byte for byte (TRL recognises templates only by exact string).

vLLM's CPU attention rejects head_dim 16, so heads are 32 wide. An optional warm-up (plain LM steps on ground-truth
transcripts, loss on assistant tokens only) makes the model emit ``<tool_call>`` blocks some of the time, so rollouts
exercise the tool path instead of being pure noise.

:func:`ensure_tiny_model` keys the cache folder by a hash of the spec, this file's source and the library versions
that shape the result; it builds into a temporary folder and renames it into place, under a file lock, so concurrent
processes never see a half-written model and never build it twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata as md
import json
import logging
import os
import random
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

logger = logging.getLogger(__name__)

TEMPLATE_NAME = "qwen3_instruct_2507"
"""TRL chat template used verbatim: Hermes ``<tool_call>{json}</tool_call>``, the GPU recipe's Qwen3-Instruct-2507."""

PAD_TOKEN = "<|endoftext|>"
EOS_TOKEN = "<|im_end|>"
SPECIAL_TOKENS = (PAD_TOKEN, "<|im_start|>", EOS_TOKEN)
# Single tokens, as in Qwen's vocabulary: vLLM's hermes parser looks `<tool_call>`/`</tool_call>` up as token ids.
ADDED_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>",
                "<think>", "</think>")
# Qwen2/Qwen3's pre-tokenizer split pattern (digits one at a time).
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
              r"|\s+(?!\S)|\s+")
MANIFEST = "rods_tiny_model.json"
END_OF_TURN_TEXT = "Done."


class TinyModelSpec(BaseModel):
    """Everything that determines the built model (its hash names the cache folder)."""

    model_config = ConfigDict(frozen=True)

    seed: int = 0
    vocab_size: int = Field(2048, description="BPE vocabulary size including the special and added tokens")
    hidden_size: int = Field(64, description="two 32-wide heads: half the attention and a quarter of the MLP of 128 "
                                             "wide, so a GRPO step on ~3.7k-token prompts takes half the time on CPU")
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    head_dim: int = Field(32, ge=32, description="vLLM's CPU attention supports 32, 64, 80, ...; 16 is rejected")
    max_position_embeddings: int = 16384
    corpus_split: str = Field("train", description="BFCL split whose transcripts train the tokenizer and warm-up")
    corpus_tasks: int | None = Field(None, description="use only the first N tasks of the split (None = all)")
    warmup_steps: int = Field(0, ge=0, description="plain LM steps on ground-truth transcripts; 0 = random weights")
    warmup_batch_size: int = 8
    warmup_window: int = Field(384, description="tokens per warm-up sample: the sink, then the context before a turn")
    warmup_sink: int = Field(16, description="first prompt tokens kept in every sample (an attention sink)")
    warmup_lr: float = 3e-3
    warmup_whole_every: int = Field(0, ge=0, description="every N-th warm-up step trains one whole transcript (0: never)")
    warmup_whole_max_tokens: int = 8192


# ---------------------------------------------------------------------------------------------------- corpus
def chat_template() -> str:
    """TRL's template file, byte for byte (``add_response_schema`` matches it by exact string)."""
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / f"{TEMPLATE_NAME}.jinja").read_text(encoding="utf-8")


def _arguments(env: Any, call: str) -> tuple[str, dict[str, Any]]:
    """Name and keyword arguments of a ground-truth call (positional ones named from the method signature)."""
    from envs.executor import parameter_names, parse_call

    parsed = parse_call(call)
    args = dict(parsed.kwargs)
    if parsed.args:
        params = parameter_names(env.owner(parsed.name), parsed.name)
        args = {**dict(zip(params, parsed.args, strict=False)), **args}
    return parsed.name, args


def transcripts(split: str = "train", limit: int | None = None) -> Iterator[tuple[list[dict], list[dict]]]:
    """(messages, tools) per BFCL task: user turns, ground-truth calls as one tool-call message, the executed
    results as tool messages, then a short closing answer. Tools are those offered at turn 0."""
    from envs.dataset import load_split
    from envs.executor import Environment
    from envs.tools import tools_for_turn

    tasks = sorted(load_split(split), key=lambda t: t.id)  # type: ignore[arg-type]
    for task in tasks[:limit]:
        env = Environment(task.involved_classes, task.initial_config, task.long_context)
        messages: list[dict] = []
        for t, calls in enumerate(task.ground_truth):
            messages += task.user_messages(t)
            if calls:
                named = [_arguments(env, c) for c in calls]
                messages.append({"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": n, "arguments": a}} for n, a in named]})
                messages += [{"role": "tool", "content": r} for r in env.run(calls)]
            messages.append({"role": "assistant", "content": END_OF_TURN_TEXT})
        yield messages, tools_for_turn(task, 0)


# ---------------------------------------------------------------------------------------------------- tokenizer
def _wrap(tok_obj: Any, template: str) -> Any:
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=tok_obj, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN,
                                  padding_side="left", chat_template=template, model_max_length=131072)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED_TOKENS])
    return tok


def train_tokenizer(texts: list[str], vocab_size: int, template: str) -> Any:
    """Byte-level BPE with Qwen's pre-tokenizer, trained on ``texts`` (special/added tokens cut out first)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    cut = re.compile("|".join(re.escape(t) for t in SPECIAL_TOKENS + ADDED_TOKENS))
    pieces = [p for text in texts for p in cut.split(text) if p]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(ADDED_TOKENS), special_tokens=list(SPECIAL_TOKENS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), min_frequency=2)
    tok.train_from_iterator(pieces, trainer=trainer)
    return _wrap(tok, template)


# ---------------------------------------------------------------------------------------------------- model
def model_config(spec: TinyModelSpec, tok: Any) -> Any:
    from transformers import Qwen3Config

    im_end, pad = tok.convert_tokens_to_ids(EOS_TOKEN), tok.convert_tokens_to_ids(PAD_TOKEN)
    return Qwen3Config(
        vocab_size=len(tok), hidden_size=spec.hidden_size, intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers, num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads, head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings, tie_word_embeddings=True,
        bos_token_id=pad, eos_token_id=im_end, pad_token_id=pad, dtype="float32")


def _segments(tok: Any, messages: list[dict], tools: list[dict]) -> list[tuple[list[int], bool]]:
    """Token ids of a transcript cut at assistant turns; the flag marks assistant (trained) tokens."""
    out: list[tuple[list[int], bool]] = []
    done = ""
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        head = tok.apply_chat_template(messages[:i], tools=tools, tokenize=False, add_generation_prompt=True)
        full = tok.apply_chat_template(messages[: i + 1], tools=tools, tokenize=False)
        out.append((tok.encode(head[len(done):], add_special_tokens=False), False))
        body = full[len(head):].rstrip("\n")  # the assistant text through <|im_end|>
        out.append((tok.encode(body, add_special_tokens=False), True))
        done = head + body
    return out


def warm_up(model: Any, tok: Any, corpus: list[tuple[list[dict], list[dict]]], spec: TinyModelSpec) -> dict:
    """Plain next-token training on BFCL ground-truth transcripts; loss on assistant tokens only.

    Most steps train a batch of short windows (the prompt's first ``warmup_sink`` tokens + the context just before an
    assistant turn); every ``warmup_whole_every``-th step trains one whole transcript, tools block included. Measured
    on 2 shared cores: short windows alone learn the Hermes format (well-formed calls after a short context) in ~200
    steps / 60 s but degenerate behind a real ~5k-token tools block; whole transcripts cost ~10x more per step; the
    mix (120 steps, every 3rd whole, ~110 s) makes ~75% of samples on real prompts open a ``<tool_call>`` block,
    still with invalid names. Hence ``warmup_steps=0`` by default: tests must not rely on the model's choices.
    """
    import torch

    samples: list[tuple[list[int], list[int]]] = []
    whole: list[tuple[list[int], list[int]]] = []
    sink = spec.warmup_sink
    for messages, tools in corpus:
        ids: list[int] = []
        labels: list[int] = []
        whole_len = 0
        for seg, trained in _segments(tok, messages, tools):
            if len(ids) + len(seg) <= spec.warmup_whole_max_tokens:
                whole_len = len(ids) + len(seg)
            ids += seg
            labels += seg if trained else [-100] * len(seg)
            if trained:  # the prompt's first tokens + the context just before this turn, the turn trained
                start = max(sink, len(ids) - (spec.warmup_window - sink))
                samples.append((ids[:sink] + ids[start:], [-100] * min(sink, len(ids)) + labels[start:]))
        if any(x != -100 for x in labels[:whole_len]):
            whole.append((ids[:whole_len], labels[:whole_len]))
    rng = random.Random(spec.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.warmup_lr, weight_decay=0.0)
    model.train()
    losses = []
    for step in range(spec.warmup_steps):
        if spec.warmup_whole_every and step % spec.warmup_whole_every == spec.warmup_whole_every - 1:
            batch = [rng.choice(whole or samples)]  # a whole transcript: the real prompt length, tools block included
        else:
            batch = rng.sample(samples, min(spec.warmup_batch_size, len(samples)))
        width = max(len(s[0]) for s in batch)
        input_ids = torch.full((len(batch), width), tok.pad_token_id)
        label_t = torch.full((len(batch), width), -100)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for r, (ids, labels) in enumerate(batch):
            input_ids[r, : len(ids)] = torch.tensor(ids)
            label_t[r, : len(ids)] = torch.tensor(labels)
            mask[r, : len(ids)] = 1
        loss = model(input_ids=input_ids, attention_mask=mask, labels=label_t).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    model.eval()
    return {"samples": len(samples), "loss_first": losses[0] if losses else None,
            "loss_last": losses[-1] if losses else None}


def build_tiny_model(out_dir: Path, seed: int = 0, spec: TinyModelSpec | None = None, **overrides: Any) -> Path:
    """Build the model and tokenizer into ``out_dir`` (``save_pretrained``, safetensors) and return it.

    ``spec`` fields may be overridden by keyword (e.g. ``warmup_steps=200``); ``seed`` seeds weights and warm-up.
    Deterministic for a given spec and library versions.
    """
    import torch
    from transformers import GenerationConfig, Qwen3ForCausalLM

    spec = (spec or TinyModelSpec()).model_copy(update={"seed": seed, **overrides})
    spec = TinyModelSpec.model_validate(spec.model_dump())  # re-validate overrides
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    template = chat_template()
    corpus = list(transcripts(spec.corpus_split, spec.corpus_tasks))
    bare = _wrap(_bare_tokenizer(), template)
    texts = [bare.apply_chat_template(m, tools=tools, tokenize=False) for m, tools in corpus]
    tok = train_tokenizer(texts, spec.vocab_size, template)
    timings["tokenizer_s"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    torch.manual_seed(spec.seed)
    model = Qwen3ForCausalLM(model_config(spec, tok)).to(torch.float32)
    model.generation_config = GenerationConfig(
        eos_token_id=[tok.eos_token_id, tok.pad_token_id], pad_token_id=tok.pad_token_id,
        bos_token_id=tok.pad_token_id)
    timings["init_s"] = time.perf_counter() - t1
    warm: dict[str, Any] = {}
    if spec.warmup_steps:
        t2 = time.perf_counter()
        warm = warm_up(model, tok, corpus, spec)
        timings["warmup_s"] = time.perf_counter() - t2

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tok.save_pretrained(out_dir)
    timings["total_s"] = time.perf_counter() - t0
    manifest = {"spec": spec.model_dump(), "versions": _versions(), "template": TEMPLATE_NAME,
                "parameters": sum(p.numel() for p in model.parameters()), "vocab": len(tok),
                "corpus_transcripts": len(corpus), "warmup": warm,
                "timings": {k: round(v, 2) for k, v in timings.items()}}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    logger.info("built tiny model in %.1f s: %s", timings["total_s"], out_dir)
    return out_dir


def _bare_tokenizer() -> Any:
    """An untrained byte-level tokenizer, only to render the chat template before the real one exists."""
    from tokenizers import Tokenizer, models

    tok = Tokenizer(models.BPE())
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    return tok


# ---------------------------------------------------------------------------------------------------- cache
def _versions() -> dict[str, str]:
    out = {}
    for dist in ("torch", "transformers", "tokenizers", "trl", "bfcl-eval"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "none"
    return out


def cache_key(spec: TinyModelSpec) -> str:
    """Hash of the spec, this module's source and the library versions that shape the built files."""
    payload = json.dumps({"spec": spec.model_dump(), "source": Path(__file__).read_text(encoding="utf-8"),
                          "versions": _versions()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def default_cache_dir() -> Path:
    """``$RODS_CACHE/tiny-model`` if set, else ``<repo>/.cache/tiny-model`` (git-ignored), else
    ``~/.cache/rods/tiny-model``: the one rule of :func:`rods_agents.run.disk_cache.cache_dir`."""
    from rods_agents.run.disk_cache import cache_dir

    return cache_dir("tiny-model")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_tiny_model(cache_dir: Path | None = None, spec: TinyModelSpec | None = None) -> Path:
    """Path of the cached tiny model for ``spec`` (default :class:`TinyModelSpec`), building it on first use.

    Safe under concurrency: a file lock serialises builders, and the model appears at its final path only through an
    atomic rename of a fully written temporary folder.
    """
    spec = spec or TinyModelSpec()
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    final = root / f"qwen3-tiny-{cache_key(spec)}"
    if (final / MANIFEST).exists():
        return final
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f".{final.name}.lock"):
        if (final / MANIFEST).exists():  # another process finished while we waited
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
        try:
            build_tiny_model(tmp, seed=spec.seed, spec=spec)
            tmp.chmod(0o755)  # mkdtemp makes it 0700
            if final.exists():  # a leftover without a manifest: never a finished build
                shutil.rmtree(final)
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final
