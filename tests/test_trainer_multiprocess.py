"""Two training processes on CPU (torchrun, gloo): every rank records the same gathered groups and keeps the
same pool; synthesis runs on rank 0 and is broadcast. (``accelerate launch --cpu --num_processes 2`` starts
one process on a machine without MPI; torchrun sets up the process group that accelerate then uses.)"""

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

SCRIPT = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from rods_cli.train import parse_recipe
    from trainer.curriculum import Curriculum

    rank, records, boundaries = os.environ["RANK"], [], []
    real_record, real_end = Curriculum.record, Curriculum.end_epoch

    def record(self, step, ids, rewards, k):
        records.append([step, self.epoch, list(ids), list(rewards)])
        return real_record(self, step, ids, rewards, k)

    def end_epoch(self, step, **kw):
        rep = real_end(self, step, **kw)
        boundaries.append({"seeds": rep.seeds, "injected": rep.injected, "pool": self.buffer.active_ids()})
        return rep

    Curriculum.record, Curriculum.end_epoch = record, end_epoch
    from trainer.grpo import train

    args = parse_recipe(Path(sys.argv[1]), sys.argv[2:])
    train(args)
    Path(args.output_dir, f"rank{rank}.json").write_text(json.dumps({"records": records, "boundaries": boundaries}))
""")


@pytest.mark.slow
def test_two_cpu_processes_make_the_same_pool_decisions(tmp_path):
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("torchrun not installed")
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    out = tmp_path / "run"
    scratch = tmp_path / "tmp"  # torchrun's rendezvous files go here, not into the shared temp folder
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1",
           "TMPDIR": str(scratch)}
    with socket.socket() as sock:  # a free loopback port for the gloo rendezvous
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [torchrun, "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port", str(port),
           str(script), str(ROOT / "recipes/tiny-cpu.yaml"),
           "--output_dir", str(out), "--per_device_train_batch_size", "4", "--task_ids", *SEEDS,
           "--reward_shaping", "synthetic_boundary", "--num_train_epochs", "2", "--max_steps", "3",  # boundary 0 is not
           "--save_strategy", "no"]                                  # the last (the last sends no seeds); stop in epoch 1
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r0, r1 = (json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["records"] == r1["records"] and len(r0["records"]) == 3  # epoch 0: 4 tasks, 2 per generation batch
    for _, _, ids, _ in r0["records"][:2]:
        assert len(ids) == 8 and ids[0] == ids[3] and ids[4] == ids[7] and ids[0] != ids[4]  # one group per rank
    assert sorted({ids[0] for _, _, ids, _ in r0["records"][:2]} | {ids[4] for _, _, ids, _ in r0["records"][:2]}) == sorted(SEEDS)
    assert r0["boundaries"] == r1["boundaries"] and sorted(r0["boundaries"][0]["seeds"]) == sorted(SEEDS[:2])
    assert len((out / "curriculum.jsonl").read_text().splitlines()) == 1  # written by rank 0 only
