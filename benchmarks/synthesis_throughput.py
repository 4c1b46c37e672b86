"""Offline synthesis throughput and LangGraph overhead, measured in one run.

- accepted samples per second through the graph (``graphs.synthesis.synthesize``);
- overhead: graph wall time over the wall time of the *same stage functions* called directly in a
  plain loop with the same routing (goal <= 1.10x);
- raw execution: time to execute the accepted plans alone through ``envs`` (for scale).

Prints a table, then one JSON line. Usage: python benchmarks/synthesis_throughput.py [--num-seeds 20]
"""

from __future__ import annotations

import argparse
import json
import time

from graphs.synthesis import finalize_results, sample_id, synthesize, warm_caches
from rods_agents.analysis.tracing import trace_task
from rods_agents.stages.coherence_rewrite import rewrite_turns
from rods_agents.stages.config_patch import patch_config
from rods_agents.stages.execution_orchestrator import execute_plan
from rods_agents.stages.profile_extraction import extract_profile
from rods_agents.stages.state import SynthesisContext
from rods_agents.stages.verdict import judge_variant
from rods_cli.synthesize import select_seeds


class _Runtime:
    def __init__(self, ctx):
        self.context, self.stream_writer = ctx, None


def run_direct(seeds, ctx) -> list[dict]:
    """The sample pipeline without LangGraph: same nodes, same routing, plain dict state."""
    from graphs.synthesis import finalize_sample, start_plan_round

    rt = _Runtime(ctx)
    results = []
    for seed in seeds:
        for v in range(ctx.variants_per_seed):
            st: dict = {"sample_id": sample_id(seed.id, v), "seed": seed.model_dump(), "variant": v}
            st |= extract_profile(st, rt)
            while not st.get("verdict"):
                st |= start_plan_round(st, rt)
                st |= rewrite_turns(st, rt)
                st |= execute_plan(st, rt)
                while st["errors"] and not st.get("patch_failed") and st.get("patch_attempts", 0) < ctx.max_patch_attempts:
                    st |= patch_config(st, rt)
                    if not st.get("patch_failed"):
                        st |= execute_plan(st, rt)
                st |= judge_variant(st, rt)
                if not st["verdict"]["accepted"] and st["plan_attempt"] < ctx.max_plan_attempts:
                    st["verdict"] = None
            results += finalize_sample(st, rt)["results"]
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--num_seeds", "--num-seeds", type=int, default=20)
    ap.add_argument("--variants_per_seed", "--variants-per-seed", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    seeds = select_seeds("train", args.num_seeds, 0)
    ctx = SynthesisContext(seed=0, variants_per_seed=args.variants_per_seed)
    warm_caches()
    graph_s, direct_s = [], []
    result = None
    for _ in range(args.repeats):  # interleaved so both see the same machine load
        t = time.perf_counter()
        result = synthesize(seeds, ctx)
        graph_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        direct = finalize_results(run_direct(seeds, ctx), seed_index={s.id: i for i, s in enumerate(seeds)})
        direct_s.append(time.perf_counter() - t)
    assert result is not None and [x.id for x in direct.accepted] == [x.id for x in result.accepted]
    t = time.perf_counter()
    for task in result.accepted:
        trace_task(task)
    raw_s = time.perf_counter() - t
    g, d = min(graph_s), min(direct_s)
    out = {
        "benchmark": "synthesis_throughput", "backbone": "offline", "seeds": len(seeds),
        "samples": result.report["samples"], "accepted": result.report["accepted"],
        "acceptance_rate": result.report["acceptance_rate"], "graph_wall_s": round(g, 3),
        "direct_wall_s": round(d, 3), "accepted_per_s": round(result.report["accepted"] / g, 2),
        "graph_over_direct": round(g / d, 3), "goal_graph_over_direct": 1.10,
        "raw_execution_s": round(raw_s, 4), "graph_over_raw_execution": round(g / raw_s, 1) if raw_s else None,
    }
    width = max(map(len, out))
    for k, v in out.items():
        print(f"{k:<{width}}  {v}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
