"""Batched generation for lock-step episodes: the ``Generator`` protocol, transformers and vLLM backends.

The K*B episodes of one generation batch advance in lock-step: every episode that needs a model
turn submits its prompt to a :class:`LockstepBatcher`, which runs one batched ``generate`` once every
live episode has submitted or finished. Two generators serve it: :class:`HFGenerator`
(transformers ``generate`` on the training model; CPU runs and tests) and :class:`VLLMGenerator`
(TRL's vLLM integration, the GPU path). Both cut every output at its per-request cap and at the
first of the model's stop ids (:func:`stop_token_ids`).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class Generated:
    ids: list[int]
    logprobs: list[float] | None
    finished: bool
    """The step ended with EOS (not cut by a token cap)."""


class Generator(Protocol):
    """One batched generation call: prompts as token ids, a token cap per prompt."""

    def generate(self, prompts: list[list[int]], max_new_tokens: list[int]) -> list[Generated]: ...


def stop_token_ids(tokenizer: Any, model: Any = None) -> frozenset[int]:
    """Every id that ends a model turn: the tokenizer's EOS plus the model's ``generation_config.eos_token_id``
    (an int or a list; Qwen3 stops on ``<|im_end|>`` and ``<|endoftext|>``), as vLLM and ``generate`` stop."""
    ids: set[int] = set()
    tok = getattr(tokenizer, "tokenizer", tokenizer)  # a processor wraps the tokenizer
    if getattr(tok, "eos_token_id", None) is not None:
        ids.add(int(tok.eos_token_id))
    gen = getattr(model, "generation_config", None)
    eos = getattr(gen, "eos_token_id", None)
    for i in (eos if isinstance(eos, (list, tuple, set)) else [eos]):
        if i is not None:
            ids.add(int(i))
    return frozenset(ids)


def _cut(ids: Sequence[int], logprobs: Sequence[float] | None, cap: int,
         stop_ids: int | Sequence[int] | frozenset[int]) -> Generated:
    stops = {stop_ids} if isinstance(stop_ids, int) else set(stop_ids)
    ids = list(ids)[:cap]
    end = next((i for i, t in enumerate(ids) if t in stops), None)
    if end is not None:
        ids = ids[: end + 1]
    lp = None if logprobs is None else list(logprobs)[: len(ids)]
    return Generated(ids=ids, logprobs=lp, finished=bool(ids) and ids[-1] in stops)


class HFGenerator:
    """transformers ``generate`` on the training model (CPU runs, tests); no logprobs.

    Sampling follows the GRPO config (temperature, top_p, top_k, min_p, repetition_penalty). Each row
    stops at its own cap (a per-row stopping criterion), so rows near their budget stop decoding
    instead of running to the batch's largest cap.
    """

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 1.0, top_p: float = 1.0,
                 top_k: int | None = None, min_p: float | None = None, repetition_penalty: float = 1.0,
                 unwrap: Callable[[], Any] | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.unwrap = unwrap
        self.stop_ids = stop_token_ids(tokenizer, model)
        self.sampling: dict[str, Any] = {"do_sample": temperature > 0, "repetition_penalty": repetition_penalty}
        if temperature > 0:
            self.sampling.update(temperature=temperature, top_p=top_p)
            if top_k:
                self.sampling["top_k"] = top_k
            if min_p:
                self.sampling["min_p"] = min_p

    def generate(self, prompts: list[list[int]], max_new_tokens: list[int]) -> list[Generated]:
        """Prompts of equal length go through ``generate`` together, unpadded.

        A padded batch makes the attention fall back to an explicit L x L mask (about 3x slower for
        the ~4k-token BFCL prompts on CPU); the K copies of a task share a length at least on
        their first turn, so grouping keeps most of the batching.
        """
        import contextlib

        import torch

        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        eos = sorted(self.stop_ids)
        groups: dict[int, list[int]] = {}
        for i, p in enumerate(prompts):
            groups.setdefault(len(p), []).append(i)
        out: list[Generated | None] = [None] * len(prompts)
        ctx = self.unwrap() if self.unwrap is not None else contextlib.nullcontext(self.model)
        with ctx as model, torch.no_grad():
            device = next(model.parameters()).device
            for width, idx in groups.items():
                ids = torch.tensor([prompts[i] for i in idx], dtype=torch.long, device=device)
                caps = [max_new_tokens[i] for i in idx]
                gen = model.generate(
                    input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max(caps),
                    eos_token_id=eos, pad_token_id=pad, stopping_criteria=_row_caps(width, caps, device),
                    **self.sampling,
                )
                for row, i in zip(gen[:, width:].tolist(), idx, strict=True):
                    out[i] = _cut(row, None, max_new_tokens[i], self.stop_ids)
        return out  # type: ignore[return-value]


def _row_caps(width: int, caps: list[int], device: Any) -> Any:
    """A stopping criterion that ends each row of a ``generate`` batch at its own new-token cap."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    limit = torch.tensor(caps, device=device)

    class RowCaps(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return (input_ids.shape[1] - width) >= limit

    return StoppingCriteriaList([RowCaps()])


def _with_max_tokens(params: Any, n: int) -> Any:
    p = params.clone() if hasattr(params, "clone") else copy.copy(params)
    p.max_tokens = int(n)
    return p


class VLLMGenerator:
    """TRL's vLLM integration (``trainer.vllm_generation``): colocate by default, weights synced by TRL.

    Colocate with TP=1 (the recipe): one ``SamplingParams`` per request, each with its episode's
    remaining budget as ``max_tokens`` (vLLM's ``LLM.generate`` takes a list; TRL builds one, so its
    ``llm.generate`` is wrapped for the call). Other modes get the batch's largest cap. Every output is
    cut to its cap and at the first stop id (the sampling logprobs are cut with it).

    Server mode on several training processes, and colocate with tensor parallelism, run
    collectives inside ``generate`` that assume every rank calls it equally often with equally
    long lists; lock-step batches differ per rank, so use colocate with TP=1 on several ranks
    (server mode is fine with one training process). Keep ``vllm_enable_sleep_mode`` off: TRL
    puts vLLM to sleep after every ``generate`` call and re-syncs weights on wake-up, i.e. once
    per episode turn here.
    """

    def __init__(self, trainer: Any):
        self.trainer = trainer
        self.stop_ids = stop_token_ids(trainer.processing_class, getattr(trainer, "model", None))

    def generate(self, prompts: list[list[int]], max_new_tokens: list[int]) -> list[Generated]:
        vg = self.trainer.vllm_generation
        saved = vg.max_completion_length  # read per call as vLLM's max_tokens: cap it at this batch's largest need
        vg.max_completion_length = max(max_new_tokens)
        llm = getattr(vg, "llm", None) if getattr(vg, "mode", None) == "colocate" \
            and getattr(vg, "tensor_parallel_size", 1) == 1 else None
        if llm is not None:
            batch_generate = llm.generate

            def per_request(requests: Any, sampling_params: Any = None, **kwargs: Any) -> Any:
                if sampling_params is not None and not isinstance(sampling_params, (list, tuple)) \
                        and len(requests) == len(max_new_tokens):
                    sampling_params = [_with_max_tokens(sampling_params, n) for n in max_new_tokens]
                return batch_generate(requests, sampling_params=sampling_params, **kwargs)

            own = vars(llm).get("generate")  # an instance attribute someone set before us: put it back after
            llm.generate = per_request  # an instance attribute shadows the method for this call only
        try:
            _, completion_ids, logprobs, _ = vg.generate(prompts=prompts, images=None, num_generations=1)
        finally:
            vg.max_completion_length = saved
            if llm is not None:
                if own is None:
                    del llm.generate
                else:
                    llm.generate = own
        out = []
        for i, (ids, cap) in enumerate(zip(completion_ids, max_new_tokens, strict=True)):
            lp = None
            if logprobs is not None and logprobs[i] is not None:
                lp = [tok[0] if isinstance(tok, (list, tuple)) else tok for tok in logprobs[i]]
            out.append(_cut(ids, lp, cap, self.stop_ids))
        return out


class LockstepBatcher:
    """Collects the model turns of concurrent episodes and serves them with one generate call.

    A batch is flushed when every live episode is waiting for a turn (or has finished), so the
    K*B episodes of a generation batch advance in lock-step. A generation error is kept and
    re-raised by :func:`run_rollouts` (the runner would otherwise turn it into a zero reward).
    """

    def __init__(self, generator: Generator, n_episodes: int):
        self.generator = generator
        self.live = n_episodes
        self.pending: list[tuple[list[int], int, asyncio.Future]] = []
        self.error: BaseException | None = None
        self.calls = 0
        self.batch_sizes: list[int] = []
        self.generated_tokens = 0

    async def submit(self, prompt: list[int], max_new_tokens: int) -> Generated:
        fut = asyncio.get_running_loop().create_future()
        self.pending.append((prompt, max_new_tokens, fut))
        self._maybe_flush()
        return await fut

    def finish(self) -> None:
        self.live -= 1
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if not self.pending or len(self.pending) < self.live:
            return
        batch, self.pending = self.pending, []
        try:
            outs = self.generator.generate([p for p, _, _ in batch], [n for _, n, _ in batch])
        except BaseException as exc:  # noqa: BLE001 - re-raised by run_rollouts
            self.error = exc
            for _, _, fut in batch:
                fut.set_exception(exc)
            return
        self.calls += 1
        self.batch_sizes.append(len(batch))
        for (_, _, fut), out in zip(batch, outs, strict=True):
            self.generated_tokens += len(out.ids)
            fut.set_result(out)
