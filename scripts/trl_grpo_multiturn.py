"""A user's own TRL GRPOTrainer scoring whole multi-turn BFCL episodes, on the tiny CPU model (about a minute).

    python scripts/trl_grpo_multiturn.py [--steps 2] [--tasks 2]

The tiny model is untrained, so rewards are 0: the point is the plumbing (every user turn reached, the checker's
reward per episode, the loss masked to the model's own tokens); point ``model`` at a real checkpoint for more.

The data is what ``rods export RUN --format trl`` writes (built here in memory from the train split); the trainer is
TRL's own ``GRPOTrainer`` with ``environment_factory=BFCLEpisode`` and ``rollout_func=bfcl_rollout_func(...)``
(trainer/integrations/trl.py). Prints, per rollout, the task, the user turns the episode went through, the tool
calls it made and the checker's progress reward, then TRL's step metrics and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=2, help="Tasks per step (each rolled out --generations times).")
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--max_completion_length", type=int, default=256)
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from envs.dataset import load_split
    from rods_agents.run.outputs import to_dataset
    from trainer.integrations.trl import BFCLEpisode, bfcl_rollout_func, rods_reward
    from trainer.tiny_model import ensure_tiny_model

    tasks = [t for t in load_split("train", ["base"]) if len(t.turns) > 1][: args.tasks * args.steps]
    dataset = to_dataset(tasks, "trl")  # the rows `rods export --format trl` writes
    model = str(ensure_tiny_model())
    tok = AutoTokenizer.from_pretrained(model)
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(output_dir=out, max_steps=args.steps, per_device_train_batch_size=args.tasks * args.generations,
                            num_generations=args.generations, max_completion_length=args.max_completion_length,
                            use_cpu=True, bf16=False, report_to="none", save_strategy="no", logging_steps=1,
                            learning_rate=1e-4, seed=0, shuffle_dataset=False)
        trainer = GRPOTrainer(model=model, processing_class=tok, args=config, train_dataset=dataset,
                              environment_factory=BFCLEpisode, reward_funcs=rods_reward,
                              rollout_func=bfcl_rollout_func(tok, config, max_new_tokens_per_step=48,
                                                             max_steps_per_turn=2))
        seen: list[dict] = []
        original = trainer.rollout_func

        def report(prompts: list, trl_trainer: object) -> dict:
            out_ = original(prompts, trl_trainer)
            result = trl_trainer._last_rollout  # type: ignore[attr-defined]
            for episode, reward in zip(result.episodes, result.rewards, strict=True):
                turns = sum(1 for m in episode.messages if m["role"] == "user")
                row = {"task": episode.task_id, "user_turns": turns, "tool_calls": episode.tool_calls, "reward": reward}
                seen.append(row)
                print(f"{row['task']:<24} user turns {turns}  tool calls {episode.tool_calls:>2}  reward {reward:.2f}")
            return out_

        trainer.rollout_func = report
        result = trainer.train()
    multi = sum(1 for r in seen if r["user_turns"] > 1)
    print(json.dumps({"steps": result.global_step, "rollouts": len(seen), "multi_turn_rollouts": multi,
                      "mean_reward": sum(r["reward"] or 0 for r in seen) / max(len(seen), 1),
                      "training_loss": result.training_loss}))


if __name__ == "__main__":
    main()
