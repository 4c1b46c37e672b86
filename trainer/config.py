"""``RODSConfig``: every knob of a RODS training run, as one dataclass extending ``trl.GRPOConfig``.

Recipes (``recipes/*.yaml``) fill it through ``trl.TrlParser`` exactly as open-r1 does, and any
field can be overridden on the command line (``rods train --config R --num_generations 8``).
Fields are grouped by topic; defaults follow the paper digest (``docs: rods-paper-notes``) where
it gives a number, and say so in their help text.

Groups:

* **model / tasks**: which policy to train and on which BFCL tasks (the human seeds).
* **rollout**: the multi-turn episode budget per rollout (TRL's ``max_completion_length`` bounds
  all tokens after the first prompt, model and injected tokens together).
* **reward**: ``progress`` (RODS's R_P) or ``binary`` (the paper's ablation), plus an optional
  shaping hook that exists so tests can create boundary tasks with an untrained model.
* **curriculum**: detection thresholds, seed quotas, buffer (P_max, beta, retirement), mode.
* **synthesis**: the in-process synthesis graph's backbone and budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from trl import GRPOConfig

from rods_agents.run.context import LLM_STAGES  # plan, rewrite, patch, judge: one list for CLI, context and recipes

MODES = ("rods", "static", "random-seeds", "no-retirement")
LIST_FILTERS = ("categories", "task_ids", "involved_classes")
"""Seed-task filters a recipe may set; ``--NAME all`` on the command line clears one (no filter)."""
Mode = Literal["rods", "static", "random-seeds", "no-retirement"]


@dataclass
class RODSConfig(GRPOConfig):
    r"""GRPO settings plus the RODS closed loop (detection, synthesis, replay buffer)."""

    # ------------------------------------------------------------------ model / tasks
    model_name_or_path: str = field(
        default="rods-tiny",
        metadata={"help": "Hub id or local folder of the policy; 'rods-tiny' builds/loads the local tiny model "
                          "(trainer.tiny_model.ensure_tiny_model)."},
    )
    torch_dtype: str = field(
        default="auto", metadata={"help": "Model dtype when loading: auto, bfloat16, float16 or float32."}
    )
    attn_implementation: str | None = field(
        default=None, metadata={"help": "Attention kernel passed to from_pretrained (e.g. sdpa, flash_attention_2)."}
    )
    task_split: str = field(
        default="train", metadata={"help": "Scenario split of the human seed tasks: train, test or all."}
    )
    categories: list[str] | None = field(
        default=None,
        metadata={"help": "BFCL categories of the seed tasks (base, miss_func, miss_param, long_context); None or 'all' "
                          "= every category (--categories all clears a recipe's list)."},
    )
    tasks_file: str | None = field(
        default=None, metadata={"help": "Seed tasks from a BFCL JSONL file instead of the split."}
    )
    task_ids: list[str] | None = field(default=None, metadata={"help": "Only these seed task ids ('all' = no id filter)."})
    num_seed_tasks: int = field(
        default=0, metadata={"help": "Keep only the first N seed tasks after filtering (0 = all; paper: 400)."}
    )
    involved_classes: list[str] | None = field(
        default=None, metadata={"help": "Keep only seed tasks whose classes are all in this list (small prompts on CPU); "
                                  "--involved_classes all clears a recipe's list."}
    )

    # ------------------------------------------------------------------ rollout
    max_steps_per_turn: int = field(
        default=5,
        metadata={"help": "Executing steps per user turn before the episode is force-terminated "
                          "(EnvTuning's max_step_limit=5; BFCL evaluation uses 20)."},
    )
    max_new_tokens_per_step: int = field(
        default=1024,
        metadata={"help": "Token cap of one assistant step. A step cut by it gets a masked end-of-turn token and its "
                          "tool calls are dropped; the episode continues while max_completion_length allows."},
    )
    strict_tools: bool = field(
        default=False, metadata={"help": "Refuse calls to tools not offered at the turn (stricter than BFCL)."}
    )
    system_prompt: str | None = field(
        default=None, metadata={"help": "Optional system message prepended to every episode."}
    )

    # ------------------------------------------------------------------ reward
    reward: str = field(
        default="progress",
        metadata={"help": "progress (R_P: scored turns passed / scored turns) or binary (the paper's ablation)."},
    )
    reward_shaping: str | None = field(
        default=None,
        metadata={"help": "Name of a function registered in trainer.reward_shaping.REWARD_SHAPERS, or 'module:function', "
                          "called as f(task, rollout_index, reward, episode) -> float after the checker. For tests "
                          "and experiments only; None in real runs."},
    )

    # ------------------------------------------------------------------ curriculum
    mode: str = field(
        default="rods",
        metadata={"help": "rods (full loop) | static (no synthesis, fixed pool) | random-seeds (seeds drawn uniformly "
                          "instead of by the boundary detector) | no-retirement (never retire). Paper Table 2."},
    )
    alpha_minus: float = field(
        default=0.20, metadata={"help": "Lower edge of the boundary zone (paper: 0.20)."}
    )
    alpha_plus: float = field(
        default=0.85, metadata={"help": "Upper edge of the boundary zone (paper: 0.85)."}
    )
    seeds_per_epoch: int = field(
        default=32, metadata={"help": "Seeds sent to synthesis per epoch boundary, M (not published; our default)."}
    )
    seed_quotas: dict | str | None = field(
        default=None,
        metadata={"help": "Per-category seed quotas M_tau, e.g. {base: 8, miss_func: 8}; None = M split evenly."},
    )
    quota_by_class: bool = field(
        default=False,
        metadata={"help": "Spread each category's quota over the involved-class groups (sorted class sets) of its "
                          "boundary tasks: one seed per group per round, best-ranked first, so no class group "
                          "crowds out another (category quotas still decide how many seeds each category gets)."},
    )
    variants_per_seed: int = field(
        default=2, metadata={"help": "Variants the synthesis graph is asked for per seed (not published)."}
    )
    p_max: int = field(
        default=400, metadata={"help": "Most synthesized tasks active at once, P_max (paper: 400)."}
    )
    injection_cap: float = field(
        default=0.20,
        metadata={"help": "beta: at most this fraction of the active pool is injected per epoch (paper: 0.2), but at "
                          "least one task while the queue holds any and P_max leaves room; 0 turns injection off."},
    )
    retire_mastered: float = field(
        default=0.95, metadata={"help": "Retire a synthesized task whose recent mean exceeds this (paper: 0.95)."}
    )
    retire_hard: float = field(
        default=0.20, metadata={"help": "Retire a synthesized task whose recent mean stays below this (paper: 0.20)."}
    )
    burn_in_threshold: float = field(
        default=0.20, metadata={"help": "Evict a new variant whose first evaluation scores below this (ToolWeave: 0.20)."}
    )
    drift_window: int = field(
        default=2, metadata={"help": "W: evaluations outside the boundary zone before a task is evicted (our default)."}
    )
    retire_seeds: bool = field(
        default=False,
        metadata={"help": "Let human seed tasks retire too (default: seeds are the curriculum's anchor and stay)."},
    )
    min_pool_size: int = field(
        default=1,
        metadata={"help": "Burn-in and drift retirement never shrink the active pool below this many tasks (at least "
                          "1): the highest-phi candidates stay and are logged as kept. P_max pruning still applies."},
    )
    prune_by: str = field(
        default="variance",
        metadata={"help": "P_max pruning order: variance (lowest observed group reward variance first, phi = 4m(1-m) "
                          "breaks ties: a task whose K rollouts agree gives no gradient) or phi (the paper's wording: "
                          "lowest phi of the latest mean first, variance breaks ties)."},
    )
    vllm_importance_sampling_mode: str = field(
        default="token_truncate",
        metadata={"help": "TRL's vLLM importance-sampling mode. RODS default token_truncate (per-token ratios clipped "
                          "at vllm_importance_sampling_clip_max); sequence_* modes are refused (trainer.gpu_settings): "
                          "a multi-turn episode's summed log-ratio shrinks long episodes."},
    )

    # ------------------------------------------------------------------ synthesis
    synthesis_backbone: str = field(
        default="offline",
        metadata={"help": "offline (deterministic, no LLM) or llm (an OpenAI-compatible server, e.g. vLLM serving "
                          "Qwen3-32B as in the paper). 'openai' is the deprecated spelling of llm."},
    )
    synthesis_model: str | None = field(
        default=None, metadata={"help": "Model name on the synthesis server (paper: Qwen3-32B)."}
    )
    synthesis_base_url: str | None = field(
        default=None, metadata={"help": "Base URL of the OpenAI-compatible synthesis server."}
    )
    synthesis_temperature: float = field(
        default=1.0, metadata={"help": "Sampling temperature of the synthesis agents (paper App. J: 1.0)."}
    )
    synthesis_llm_stages: list[str] = field(
        default_factory=lambda: list(LLM_STAGES),
        metadata={"help": "Synthesis stages the LLM takes over with synthesis_backbone=llm (any of plan, rewrite, "
                          "patch, judge; the others stay offline). Default: all four, as in the paper, where every "
                          "synthesis agent is the LLM, and as `rods synthesize --backbone llm`. Ignored offline."},
    )
    synthesis_concurrency: int = field(
        default=8,
        metadata={"help": "Synthesis samples (seed x variant pairs) in flight at once (the graph's max_concurrency)."},
    )
    synthesis_dispatch: str = field(
        default="step",
        metadata={"help": "step: boundary seeds go to background synthesis after the generation batch that found "
                          "them (per-epoch quotas; variants usually land before the boundary, as in the paper) | "
                          "boundary: seeds are chosen over the whole epoch at its boundary (globally ranked)."},
    )
    synthesis_wait_s: float = field(
        default=60.0,
        metadata={"help": "Seconds an epoch boundary waits for synthesis rounds in flight (they run on a background "
                          "thread of rank 0 while training goes on; late rounds land at a later boundary). -1 = wait "
                          "for every round (synchronous, deterministic). Keep it well under ddp_timeout."},
    )
    synthesis_max_failures: int = field(
        default=3,
        metadata={"help": "Failed synthesis rounds in a row (exception or unreachable server) before "
                          "synthesis_on_failure applies; 0 = never."},
    )
    synthesis_on_failure: str = field(
        default="stop",
        metadata={"help": "stop (end the run with one error; the last checkpoint resumes) or offline (switch to the "
                          "offline backbone, with an error in the log) after synthesis_max_failures failed rounds."},
    )
    synthesis_preflight_timeout_s: float = field(
        default=10.0,
        metadata={"help": "Timeout of the check that the synthesis server answers, before the model is loaded."},
    )

    def __post_init__(self):
        if self.mode not in MODES:
            import difflib

            near = difflib.get_close_matches(str(self.mode), MODES, n=1)
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}"
                             + (f"; did you mean {near[0]}?" if near else ""))
        for name in LIST_FILTERS:  # `--involved_classes all` clears a recipe's filter from the command line
            value = getattr(self, name)
            if value is not None and [str(v).strip().lower() for v in value] in (["all"], [""]):
                setattr(self, name, None)
        if not 0.0 <= self.alpha_minus <= self.alpha_plus <= 1.0:
            raise ValueError("need 0 <= alpha_minus <= alpha_plus <= 1")
        if self.reward not in ("progress", "binary"):
            raise ValueError("reward must be 'progress' or 'binary'")
        if self.synthesis_backbone == "openai":
            import warnings

            warnings.warn("synthesis_backbone: 'openai' is deprecated; use 'llm'", FutureWarning, stacklevel=2)
            self.synthesis_backbone = "llm"
        if self.synthesis_backbone not in ("offline", "llm"):
            raise ValueError(f"synthesis_backbone must be 'offline' or 'llm' (got {self.synthesis_backbone!r})")
        if self.synthesis_wait_s >= 0 and self.synthesis_wait_s > 0.5 * float(self.ddp_timeout):
            raise ValueError(f"synthesis_wait_s={self.synthesis_wait_s:g} must stay well under ddp_timeout="
                             f"{self.ddp_timeout} (the other ranks wait that long in the broadcast)")
        if self.synthesis_dispatch not in ("step", "boundary"):
            raise ValueError(f"synthesis_dispatch must be 'step' or 'boundary' (got {self.synthesis_dispatch!r})")
        if self.synthesis_on_failure not in ("stop", "offline"):
            raise ValueError(f"synthesis_on_failure must be 'stop' or 'offline' (got {self.synthesis_on_failure!r})")
        stages = [p.strip() for s in (self.synthesis_llm_stages or []) for p in str(s).split(",") if p.strip()]
        if set(stages) - set(LLM_STAGES):
            raise ValueError(f"synthesis_llm_stages: unknown stage(s) {sorted(set(stages) - set(LLM_STAGES))}; "
                             f"choose from {list(LLM_STAGES)}")
        if self.synthesis_backbone == "llm" and not stages:
            raise ValueError("synthesis_backbone=llm needs at least one of synthesis_llm_stages")
        self.synthesis_llm_stages = list(dict.fromkeys(stages))
        if self.min_pool_size < 1:
            raise ValueError("min_pool_size must be >= 1 (the active pool never empties)")
        if isinstance(self.seed_quotas, str):  # from the command line: JSON text, or `all` to clear the recipe's
            import json

            text = self.seed_quotas.strip()
            self.seed_quotas = None if text.lower() in ("all", "", "none") else json.loads(text)
        if self.prune_by not in ("variance", "phi"):
            raise ValueError(f"prune_by must be 'variance' or 'phi' (got {self.prune_by!r})")
        super().__post_init__()
        from trainer.gpu_settings import check_gpu_settings

        check_gpu_settings(self)  # IS mode, ZeRO-3 without vLLM: refused here, before any model is loaded
