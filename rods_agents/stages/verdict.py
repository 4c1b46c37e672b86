"""The verdict: accept a candidate only if it is executable, at its seed's difficulty, solvable and new.

Every reason is ``<kind>[:<sub>]`` then, where they apply, the turn, the call and the value, e.g.
``information_structure:implicit_made_explicit turn=2 call=cd(folder='tmp') kind='navigation' cue='go to'``;
counters group by the text before the first ':' (or space). Kinds:

- ``execution_error:<error kind> turn=T call=... error=...`` / ``invalid_config:initial_config turn=T ...``: a ground-truth
  call returned an error from the task's own initial_config (the kind from
  :func:`rods_agents.analysis.execution.classify_error`);
- ``recheck_failed``: ``envs.checker.check(strict_tools=True)`` does not pass the ground truth against
  itself (seeds that already fail it, e.g. miss_func_49, only fail on new violations);
- ``skill_profile:<what>`` and ``information_structure:<what>``: the variant breaks its seed's skill-level
  profile (:func:`rods_agents.analysis.skills.compare_skill_profiles`; located findings also in
  ``detail['skill_profile']`` and, as rows, ``detail['information_structure']``). Function identity is not
  compared: a plan may swap a function for another of its skill class (``cp`` -> ``mv``, ``mean`` ->
  ``standard_deviation``), change every entity and the state. What is compared: per turn, the calls' skill
  classes (``skill_changed``, ``call_count``), which are asked for and which left implicit
  (``implicit_made_explicit``; ``explicit_made_implicit`` is recorded, never rejects) and which are asked for
  only by what they are for (``goal_made_named``: 'the invoice' where the seed said 'confirm my booking's details';
  ``named_made_goal`` is recorded, never rejects), the data flow
  between calls within and across turns (``data_flow_dropped`` / ``data_flow_added``), values the
  assistant must find in the state (``state_value_stated`` / ``state_value_added``; a value stated because
  the variant's state has no hint that singles it out is the documented fallback, ``detail['stated_fallbacks']``),
  conditions, references, transformations, the withheld value and the held-out function
  (``condition_dropped``, ``limit_dropped`` (a threshold a condition reads, 'larger than 300'), ``reference_dropped``, ``reference_kind_changed``, ``reference_unresolved``,
  ``transformation_dropped``, ``withheld_stated``, ``withheld_other_param``, ``withheld_dropped``,
  ``withheld_not_supplied``, ``held_out_changed``) and the category's mechanics (``category``,
  ``long_context``, ``classes``, ``turn_count``, ``empty_turn``, ``reveal_turn``);
- ``unobtainable_value:no_hint|no_recipe turn=T call=M param=P value=V``: an argument the agent cannot
  obtain: a ``state`` value whose turn text carries no unique hint, or a ``composed`` value that cannot be
  rebuilt from obtainable pieces following a recipe the text states (a value the variant and its seed
  both pick out by a cued reference or transformation counts as obtainable: :func:`obtainability_problems`);
  a slot the seed's own text fails the same way is not held against the variant (:func:`seed_unobtainable`);
- ``category_rule:<category> turn=T call=... why=...``: the miss_param / miss_func / long_context rules are broken;
- ``leftover_name:<where> value=V``: a name the plan renamed is still in the text, config or ground truth;
- ``unfaithful:<kind> turn=T call=... value=V``: the unfaithful classes found in accepted variants
  (:mod:`rods_agents.analysis.faithfulness`: ``old_choice_words``, ``fill_not_full``,
  ``knife_edge_balance``, ``unknown_symbol``, ``old_digits_left``, ``round_made_odd``, ``dictated_cut``,
  ``stale_fare``, ``fare_over_cap``, ``option_unsaid``), each held only where the seed does not do the same;
- ``filler_argument:sentence|options|person_name turn=T call=M param=P value=V``
  (:mod:`rods_agents.analysis.variant_quality`);
- novelty (:mod:`rods_agents.analysis.novelty`): ``novelty:seed_text_copy`` (the seed's sentences: word
  5-gram containment above ``SEED_TEXT_COPY``), ``novelty:seed_turn_kept`` (one turn of ``KEPT_TURN_WORDS`` words or
  more whose masked 5-grams are its seed turn's above ``SEED_TURN_COPY``; BFCL tasks, whose turns the phrasebook
  can word anew), ``novelty:seed_sentence_kept`` (a sentence that is one of its seed's reworded word for word: its
  words, values masked, aligned with the seed sentence's in order), ``novelty:digits_only`` (new only in numbers, ids or
  dates; not for a task with nothing to change but numbers, when its words are its own: ``NUMBERS_ONLY_TEXT``),
  ``novelty:sibling_copy of=<id>`` (a near-copy of an accepted variant of the same scenario, when
  ``siblings`` are given; the run's dedupe applies the same rule through
  :func:`rods_agents.analysis.contamination.same_substance`), ``near_duplicate_seed`` (the seed's parsed
  ground truth, or its config with 90% of its calls; ``detail['seed_copy']``), ``contamination`` (too
  close to a test-split task, :mod:`rods_agents.analysis.contamination`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from langgraph.runtime import Runtime

from envs.checker import check
from envs.task import Task
from envs.tools import held_out
from rods_agents.analysis.contamination import contamination_threshold, fingerprint, nearest, similarity, test_index
from rods_agents.analysis.execution import classify_error
from rods_agents.analysis.faithfulness import faithfulness_problems
from rods_agents.analysis.information_structure import InformationStructure, information_structure
from rods_agents.analysis.novelty import (
    containment,
    mask_digits,
    masked_text,
    seed_copy_reasons,
    sibling_copy_reason,
    user_text,
)
from rods_agents.analysis.profile import Profile, profile_task
from rods_agents.analysis.seed_gaps import gap_fallbacks, obtainability_problems, seed_unobtainable, slot
from rods_agents.analysis.skills import SkillProfile, compare_skill_profiles, rejecting, skill_profile
from rods_agents.analysis.tracing import CONFIG_ERROR, Trace, trace_task
from rods_agents.analysis.variant_quality import filler_arguments, leftover_names, same_config, same_ground_truth
from rods_agents.run.runtime import emit, stage_timer
from rods_agents.stages.state import (
    SampleState,
    SynthesisContext,
    count,
    profile_of,
    seed_of,
    siblings_of,
    task_of,
    trace_of,
)
from rods_agents.variation.draw import numbers_only

NEAR_COPY_CALLS = 0.9



def category_violations(task: Task, seed: Task, profile: Profile) -> list[str]:
    """The category rules ``task`` breaks, each located: ``category_rule:miss_func turn=1
    call=sort(file_name='a') why='held-out function used before its reveal'``."""
    out = []
    if task.long_context != seed.long_context:
        out.append("category_rule:long_context why='long context differs from the seed'")
    if task.category == "miss_param":
        for k in profile.miss_param_turns:
            if task.ground_truth[k] or not task.ground_truth[k + 1] or not task.turns[k + 1]:
                out.append(f"category_rule:miss_param turn={k} why='the withholding turn must be empty and the next "
                           f"turn supply the value'")
    if task.category == "miss_func":
        for reveal in task.missed_function:
            if task.turns[reveal]:
                out.append(f"category_rule:miss_func turn={reveal} why='the reveal turn has user text'")
            for t in range(len(task.ground_truth)):
                for c in task.ground_truth[t]:
                    if c.split("(", 1)[0] in held_out(task, t):
                        out.append(f"category_rule:miss_func turn={t} call={c[:80]} why='held out at this turn'")
    return sorted(set(out))


def _rule_key(reason: str) -> str:
    """A category violation without its call text: the seed's own violations (miss_func_49) are matched by rule
    and turn, so a variant that renames the arguments of the seed's early call is not charged for it."""
    return reason.split(" call=", 1)[0].split(" why=", 1)[0]


@lru_cache(maxsize=2048)
def _seed_fails_strict(seed_json: str) -> bool:
    seed = Task.model_validate_json(seed_json)
    return not check(seed, [[gt] for gt in seed.ground_truth], strict_tools=True).passed


def seed_fails_strict(seed: Task) -> bool:
    """BFCL seeds whose own ground truth calls a held-out function early (miss_func_49)."""
    return _seed_fails_strict(seed.model_dump_json())


def _sources_by_turn(profile: Profile, fallbacks: list[str]) -> list[dict[str, int]]:
    """Per-turn source counts, with each stated fallback counted as the ``state`` value it stands for."""
    per_turn = [dict(c) for c in profile.sources_by_turn]
    for key in fallbacks:
        t = int(key.split(" ", 2)[1])
        per_turn[t]["user"] -= 1
        per_turn[t]["state"] = per_turn[t].get("state", 0) + 1
        if not per_turn[t]["user"]:
            del per_turn[t]["user"]
    return [{s: c[s] for s in ("user", "call", "state", "composed") if c.get(s)} for c in per_turn]


def seed_structure(seed: Task, seed_profile: Profile) -> InformationStructure:
    """The seed's information structure: from its profile, or computed (a profile made before it existed)."""
    if seed_profile.information is not None:
        return seed_profile.information
    return information_structure(seed, trace_task(seed))


def seed_skills(seed: Task, seed_profile: Profile) -> SkillProfile:
    """The seed's skill-level profile: from its profile, or computed (a profile made before it existed)."""
    if seed_profile.skills is not None:
        return seed_profile.skills
    return skill_profile(seed, trace_task(seed), seed_profile if seed_profile.information is not None else None)


def _findings(located: list[str]) -> list[dict[str, Any]]:
    """Located reasons as {reason, turn, detail} rows (``detail['information_structure']``)."""
    out = []
    for r in located:
        kind, _, rest = r.partition(" ")
        m = re.search(r"\bturn=(\d+)", rest)
        out.append({"reason": kind.split(":", 1)[-1], "turn": int(m.group(1)) if m else -1, "detail": rest})
    return out


_PROBLEM = re.compile(r"^turn (\d+) ([\w.]+?)\.(\w+)=(.*?)(?: \((no unique hint|no recipe)[^)]*\))?$", re.S)
_FILLER = re.compile(r"^turn (\d+) ([\w.]+?)\.(\w+)=(.*?): (.*)$", re.S)


def located_unobtainable(problem: str) -> str:
    """'turn 1 get_order_details.order_id=12446 (no unique hint in the text)' ->
    "unobtainable_value:no_hint turn=1 call=get_order_details param=order_id value='12446'"."""
    m = _PROBLEM.match(problem)
    if not m:
        return f"unobtainable_value {problem[:120]}"
    sub = "no_hint" if m.group(5) == "no unique hint" else "no_recipe" if m.group(5) else "unobtainable"
    return f"unobtainable_value:{sub} turn={m.group(1)} call={m.group(2)} param={m.group(3)} value={m.group(4)[:60]!r}"


def located_leftover(finding: str) -> str:
    """"text: 'tire shop'" -> "leftover_name:text value='tire shop'"."""
    where, _, name = finding.partition(": ")
    return f"leftover_name:{where} value={name}"


def located_filler(finding: str) -> str:
    """'turn 0 set_navigation.destination=...: a sentence where the seed had ...' ->
    'filler_argument:sentence turn=0 call=set_navigation param=destination value=... why=...'."""
    m = _FILLER.match(finding)
    if not m:
        return f"filler_argument {finding[:120]}"
    why = m.group(5)
    sub = "options" if why.startswith("outside") else "sentence" if why.startswith("a sentence") else "person_name"
    return (f"filler_argument:{sub} turn={m.group(1)} call={m.group(2)} param={m.group(3)} value={m.group(4)[:60]} "
            f"why={why[:80]!r}")


def judge(task: Task, seed: Task, seed_profile: Profile, trace: Trace,
          renames: dict[str, str] | None = None, siblings: list[Task] | None = None) -> tuple[list[str], dict[str, Any]]:
    """All rejection reasons for ``task`` (empty when accepted) and the measured details; ``renames``
    (the plan's old -> new names) enables the leftover-name check, ``siblings`` (variants already accepted,
    of any seed) the near-copy check among variants of one scenario."""
    reasons: list[str] = []
    detail: dict[str, Any] = {}
    if trace.errors:
        first = trace.errors[0]
        config_error = (first.error or "").startswith(CONFIG_ERROR)
        where = f" turn={first.turn} call={first.call[:80]} error={(first.error or '')[:100]!r}"
        reasons.append("invalid_config:initial_config" + where if config_error
                       else f"execution_error:{classify_error(first.error or '')}" + where)
        detail["errors"] = [e.error for e in trace.errors][:3]
        return reasons, detail
    score = check(task, [[gt] for gt in task.ground_truth], strict_tools=True)
    if not score.passed and not (seed_fails_strict(seed) and check(task, [[gt] for gt in task.ground_truth]).passed):
        reasons.append("recheck_failed")
        detail["recheck"] = score.failure
    profile = profile_task(task, trace)
    detail["profile"] = profile.model_dump()
    unobtainable, fallbacks = obtainability_problems(task, trace, profile, seed_profile)
    if unobtainable:
        unobtainable = [p for p in unobtainable if slot(p) not in seed_unobtainable(seed)]
    fallbacks += gap_fallbacks(seed, profile)
    if fallbacks:
        detail["stated_fallbacks"] = fallbacks
    # the skill-level profile, not exact functions: a swap inside a skill class passes, each break is located
    found = compare_skill_profiles(seed_skills(seed, seed_profile), profile.skills or skill_profile(task, trace, profile),
                                   fallbacks)
    if found:
        reasons += rejecting(found)
        detail["skill_profile"] = found[:12]
        detail["information_structure"] = _findings(found[:12])
    if unobtainable:
        reasons += [located_unobtainable(p) for p in unobtainable[:3]]
        detail["unobtainable"] = unobtainable[:5]
    # BFCL itself has a few seeds that use a held-out function early (miss_func_49): only new violations count
    seed_rules = {_rule_key(r) for r in category_violations(seed, seed, seed_profile)}
    reasons += [r for r in category_violations(task, seed, seed_profile) if _rule_key(r) not in seed_rules]
    left = leftover_names(task, renames or {})
    if left:
        reasons += [located_leftover(x) for x in left[:3]]
        detail["leftover_names"] = left[:5]
    unfaithful = faithfulness_problems(task, seed, trace, profile.arg_sources, seed_profile.arg_sources, renames)
    if unfaithful:
        reasons += unfaithful
    filler = filler_arguments(seed, task)
    if filler:
        reasons += [located_filler(x) for x in filler[:3]]
        detail["filler_arguments"] = filler[:5]
    reasons += novelty_reasons(task, seed, siblings, detail)
    return reasons, detail


NUMBERS_ONLY_TEXT = 0.5
"""A task with nothing to change but numbers (:func:`~rods_agents.variation.draw.numbers_only`) counts as new only in
words of its own: at most this share of its masked word 5-grams in its seed's (the issue's target mean)."""


def novelty_reasons(task: Task, seed: Task, siblings: list[Task] | None, detail: dict[str, Any]) -> list[str]:
    """Copies: the seed's text (``novelty:seed_text_copy``), the seed with other digits
    (``novelty:digits_only``), the seed's parsed ground truth or config (``near_duplicate_seed``), an
    accepted variant of the same scenario (``novelty:sibling_copy``), a test-split task (``contamination``)."""
    reasons = seed_copy_reasons(task, seed)
    detail["seed_text_containment"] = round(containment(user_text(task), user_text(seed)), 4)
    digits_only = [r for r in reasons if r.startswith("novelty:digits_only")]
    if digits_only and mask_digits(user_text(task)) != mask_digits(user_text(seed)) and containment(
            masked_text(task), masked_text(seed), mask=True) <= NUMBERS_ONLY_TEXT and numbers_only(seed):
        # a task with nothing to change but numbers (base_84: refuel, start, check the tires) is new in its numbers,
        # its vehicle state and its own words; a sibling with the same calls is still a copy (one per scenario)
        detail["numbers_only_task"] = True
        reasons = [r for r in reasons if r not in digits_only]
    fp = fingerprint(task)
    seed_fp = fingerprint(seed)
    detail["seed_similarity"] = round(similarity(fp, seed_fp), 4)  # recorded in provenance
    call_overlap = len(fp.calls & seed_fp.calls) / len(fp.calls) if fp.calls else 1.0
    if same_ground_truth(task, seed):
        reasons.append("near_duplicate_seed")
        detail["seed_copy"] = "ground_truth_and_config" if same_config(task, seed) else "ground_truth"
    elif same_config(task, seed) and call_overlap >= NEAR_COPY_CALLS:
        reasons.append("near_duplicate_seed")
        detail["seed_copy"] = "config_and_calls"
    sibling = sibling_copy_reason(task, siblings or [])
    if sibling:
        reasons.append(sibling)
    test_sim, test_id = nearest(fp, test_index())
    detail["test_similarity"], detail["nearest_test"] = round(test_sim, 4), test_id
    if test_sim >= contamination_threshold():
        reasons.append("contamination")  # no turn or call applies: detail names the nearest test task
    return reasons


def judge_variant(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Graph node: accept or reject the candidate, with machine-readable reasons."""
    with stage_timer(state, "verdict") as timings:
        task, seed, trace = task_of(state), seed_of(state), trace_of(state)
        renames = (state.get("plan") or {}).get("renames") or {}
        reasons, detail = judge(task, seed, profile_of(state), trace, renames, siblings_of(state))
        if state.get("patch_failed") and reasons and reasons[0].split(":")[0].split(" ")[0] in ("execution_error",
                                                                                             "invalid_config"):
            reasons.append("patch_exhausted")
            if state.get("llm_error"):
                detail["llm_patch"] = state["llm_error"]  # why every LLM patch proposal was refused
    # the shape of rods_agents.run.outcome.Verdict (the graph validates it); rule rejections are never terminal
    verdict = {"accepted": not reasons, "reasons": reasons, "detail": detail, "terminal": False}
    emit(runtime, state, "verdict", "accepted" if not reasons else "rejected", reasons=reasons)
    return {"verdict": verdict, "timings": timings,
            "plan_attempt": count(state, "plan_attempt") + (1 if reasons else 0)}
