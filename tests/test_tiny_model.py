"""The tiny local model that the CPU recipe and the real-vLLM tests share: loads offline, generates, passes TRL's
chat-template checks, fits vLLM's CPU attention (head_dim >= 32), is built deterministically and only once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from trainer import tiny_model
from trainer.tiny_model import MANIFEST, TinyModelSpec, build_tiny_model, chat_template, ensure_tiny_model

SMALL = {"corpus_tasks": 24, "vocab_size": 1024}  # a cheap build for the tests that build their own


@pytest.fixture(scope="session")
def model_dir() -> Path:
    return ensure_tiny_model()


@pytest.fixture(scope="session")
def tok(model_dir):
    return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)


def test_config_fits_vllm_cpu_and_bfcl_prompts(model_dir):
    cfg = AutoConfig.from_pretrained(model_dir, local_files_only=True)
    assert cfg.model_type == "qwen3"
    assert cfg.head_dim >= 32 and cfg.head_dim in (32, 64, 80, 96, 112, 128)
    assert cfg.max_position_embeddings >= 16384
    assert (model_dir / "model.safetensors").exists()


def test_loads_offline_and_generates(model_dir, tok, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    enc = tok.apply_chat_template([{"role": "user", "content": "List my files."}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    torch.manual_seed(0)
    out = model.generate(**enc, max_new_tokens=8, do_sample=True)
    assert out.shape[1] > enc["input_ids"].shape[1]
    assert isinstance(tok.decode(out[0, enc["input_ids"].shape[1]:]), str)


def test_tokenizer_is_qwen_style(tok):
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.padding_side == "left"
    for t in ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"):  # single tokens (hermes parser)
        assert len(tok.encode(t, add_special_tokens=False)) == 1
    assert tok.decode(tok.encode("cd(folder='documents') 42", add_special_tokens=False)) == "cd(folder='documents') 42"


def test_trl_recognises_the_chat_template(tok):
    from trl.chat_template_utils import add_response_schema, is_chat_template_prefix_preserving, supports_tool_calling

    assert tok.chat_template == chat_template()  # byte-identical to TRL's file: TRL matches templates by string
    assert supports_tool_calling(tok)
    assert is_chat_template_prefix_preserving(tok)
    add_response_schema(tok)
    parsed = tok.parse_response('<tool_call>\n{"name": "cd", "arguments": {"folder": "docs"}}\n</tool_call><|im_end|>',
                                prefix="")
    assert parsed["tool_calls"][0]["function"] == {"name": "cd", "arguments": {"folder": "docs"}}


def test_bfcl_prompts_tokenize_to_a_sane_length(tok):
    """The tokenizer was trained on BFCL transcripts: a prompt with its tools block stays a few thousand tokens."""
    from envs.dataset import load_split
    from envs.tools import tools_for_turn

    task = next(t for t in load_split("test") if t.category == "base")
    text = tok.apply_chat_template(task.user_messages(0), tools=tools_for_turn(task, 0), tokenize=False,
                                   add_generation_prompt=True)
    n = len(tok.encode(text, add_special_tokens=False))
    assert len(text) / n > 3.0  # chars per token (a byte-level tokenizer without merges would be ~1)
    assert n < 16384


def test_cache_is_reused_and_race_safe(tmp_path, monkeypatch):
    builds = []

    def fake_build(out_dir, seed=0, spec=None, **_):
        builds.append(out_dir)
        (Path(out_dir) / MANIFEST).write_text(json.dumps({"seed": seed}))
        return Path(out_dir)

    monkeypatch.setattr(tiny_model, "build_tiny_model", fake_build)
    paths: list[Path] = []
    threads = [threading.Thread(target=lambda: paths.append(ensure_tiny_model(tmp_path))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len(set(paths)) == 1
    assert ensure_tiny_model(tmp_path) == paths[0] and len(builds) == 1  # second call: no rebuild
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == [paths[0].name]  # no temp left
    other = ensure_tiny_model(tmp_path, TinyModelSpec(seed=1))
    assert other != paths[0] and len(builds) == 2  # another spec, another folder


def test_build_is_deterministic_given_the_seed(tmp_path):
    a = build_tiny_model(tmp_path / "a", seed=3, warmup_steps=2, **SMALL)
    b = build_tiny_model(tmp_path / "b", seed=3, warmup_steps=2, **SMALL)
    for name in ("model.safetensors", "tokenizer.json", "config.json", "chat_template.jinja"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    c = build_tiny_model(tmp_path / "c", seed=4, **SMALL)
    assert (c / "model.safetensors").read_bytes() != (a / "model.safetensors").read_bytes()
