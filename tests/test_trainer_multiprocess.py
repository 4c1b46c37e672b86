"""The README's multi-GPU launch, run on CPU with 2 processes: ``accelerate launch --config_file
recipes/accelerate/fsdp2.yaml rods train --config recipes/qwen3-4b-rods.yaml`` with the recipe's CPU overrides (tiny
model, transformers generation, offline synthesis), keeping the recipe's step dispatch and bounded boundary wait.

Every rank records the same gathered groups and keeps the same pool; seeds go to synthesis during the epoch (rank 0
only) and the boundary waits at most ``synthesis_wait_s``. On CPU accelerate 1.15 runs an FSDP config as DDP over
gloo (it enables FSDP only on accelerators): the launcher, config file, recipe and every RODS code path are the GPU
run's, the sharding itself is not exercised here. The entry point is ``rods``' own Typer app behind a small wrapper
that records what each rank saw (``rods`` itself has nowhere to put that)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ["multi_turn_base_29", "multi_turn_base_38", "multi_turn_base_1", "multi_turn_base_3"]
CPU_OVERRIDES = [  # the GPU recipe on 2 CPU cores: everything else (curriculum, dispatch, wait) is the recipe's
    "--model_name_or_path", "rods-tiny", "--torch_dtype", "float32", "--use_cpu", "true", "--bf16", "false",
    "--gradient_checkpointing", "false", "--use_vllm", "false", "--task_ids", *SEEDS, "--num_generations", "4",
    "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "1", "--steps_per_generation", "1",
    "--max_completion_length", "96", "--max_new_tokens_per_step", "32", "--max_steps_per_turn", "1", "--beta", "0.0",
    "--learning_rate", "1e-4", "--reward_shaping", "synthetic_boundary", "--seeds_per_epoch", "2",
    "--seed_quotas", '{"base": 2}', "--variants_per_seed", "1", "--p_max", "8", "--synthesis_backbone", "offline",
    "--num_train_epochs", "2", "--max_steps", "3", "--report_to", "none", "--dataloader_num_workers", "0",
]

WRAPPER = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from trainer.curriculum import Curriculum

    rank, records, boundaries, dispatched = os.environ["RANK"], [], [], []
    real_record, real_end = Curriculum.record, Curriculum.end_epoch

    def record(self, step, ids, rewards, k):
        records.append([step, self.epoch, list(ids), list(rewards)])
        real_record(self, step, ids, rewards, k)
        dispatched.append(list(self.dispatched))

    def end_epoch(self, step, **kw):
        rep = real_end(self, step, **kw)
        boundaries.append({"seeds": rep.seeds, "injected": rep.injected, "synthesized": rep.synthesized,
                           "pending": rep.synthesis_pending, "waited": rep.synthesis_wait_seconds, "rounds": rep.synthesis_rounds,
                           "pool": self.buffer.active_ids(), "queue": self.buffer.queued_ids()})
        return rep

    Curriculum.record, Curriculum.end_epoch = record, end_epoch
    from rods_cli.main import app

    out = Path(sys.argv[sys.argv.index("--output_dir") + 1])
    try:
        app(prog_name="rods")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    (out / f"rank{rank}.json").write_text(json.dumps({"records": records, "boundaries": boundaries,
                                                     "dispatched": dispatched}))
""")


def _launch_line() -> list[str]:
    """The README's launch: the line under "Running on a GPU" that starts with `accelerate launch`."""
    readme = (ROOT / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith("accelerate launch --config_file"))
    return line.replace('"$(which rods)"', "RODS").replace("\\", "").split()


@pytest.mark.slow
@pytest.mark.timeout(1300)
def test_the_readme_launch_runs_two_cpu_processes_across_a_boundary(tmp_path):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    if accelerate is None:
        pytest.skip("accelerate's launcher is not installed")
    launch = _launch_line()
    assert launch[:3] == ["accelerate", "launch", "--config_file"] and "recipes/qwen3-4b-rods.yaml" in launch
    config, rest = launch[3], launch[4:]
    wrapper = tmp_path / "rods_spy.py"
    wrapper.write_text(WRAPPER)
    out = tmp_path / "run"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with socket.socket() as sock:  # a free loopback port for the rendezvous
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [accelerate, "launch", "--config_file", str(ROOT / config), "--num_processes", "2", "--main_process_port",
           str(port), "--mixed_precision", "no",
           *[str(wrapper) if a == "RODS" else (str(ROOT / a) if a.startswith("recipes/") else a) for a in rest],
           "--output_dir", str(out), *CPU_OVERRIDES]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1",
           "TMPDIR": str(scratch), "MASTER_ADDR": "127.0.0.1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-4000:]
    r0, r1 = (json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["records"] == r1["records"] and len(r0["records"]) == 3  # 2 generation batches in epoch 0, 1 after
    for _, _, ids, _ in r0["records"][:2]:
        assert len(ids) == 8 and ids[0] == ids[3] and ids[4] == ids[7] and ids[0] != ids[4]  # one group per rank
    # step dispatch: the boundary seeds were chosen (identically on both ranks) after the batch that found them
    assert r0["dispatched"] == r1["dispatched"] and r0["dispatched"][0], "nothing dispatched during the epoch"
    b0, b1 = r0["boundaries"], r1["boundaries"]
    assert len(b0) == 1 and b0 == b1  # one boundary crossed; pool, queue and injections agree on both ranks
    assert sorted(b0[0]["seeds"]) == sorted(SEEDS[:2]) == sorted(r0["dispatched"][1])
    assert b0[0]["waited"] <= 60 + 5  # the recipe's bounded wait (synthesis_wait_s: 60)
    # every dispatched round either landed at the boundary (its variants queued, then injected up to beta) or is
    # still in flight (it lands at a later boundary)
    assert b0[0]["rounds"] + len(b0[0]["pending"]) >= 1
    assert set(b0[0]["injected"]) <= set(b0[0]["synthesized"]) and set(b0[0]["pool"]) >= set(SEEDS)
    assert len((out / "curriculum.jsonl").read_text().splitlines()) == 1  # written by rank 0 only
    print(f"steps 3, boundary 0 crossed, seeds {b0[0]['seeds']}, synthesized {b0[0]['synthesized']}, "
          f"injected {b0[0]['injected']}, pending {b0[0]['pending']}, waited {b0[0]['waited']:.1f} s")
