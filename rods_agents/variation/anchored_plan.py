"""The offline plan, anchored on the seed: change only what the seed's own words can carry.

Every change is chosen so that the seed's text can be rewritten to state it (see
:mod:`rods_agents.variation.seed_anchor`), and so that the variant stays the same task in a new story:

- **renames** of entities the task controls (keys and leaves of the initial_config, new names the
  user introduces), each with a new value of the same kind (:mod:`rods_agents.variation.value_kinds`); a value
  the user states is renamed only where the seed's text writes it in a form the rewrite can carry;
  a person's first and last name are renamed together, so the same person is the same everywhere;
- **numbers** the user states, in digits or words, perturbed (amounts may grow past the balance or the
  tank: the config patch agent repairs the state, see :mod:`rods_agents.stages.config_patch`);
- **option swaps**: a documented option (a travel class, a currency, a city of the environment's
  tables, a sector) replaced by another when the seed's text names it;
- **method swaps** inside a skill class (:func:`rods_agents.analysis.skills.same_skill`: a copy for a move,
  the highest value for an average) only where the seed turn holds a lexicon phrase of the old method and
  the lexicon has one for the new method (``prompts/bfcl/offline_value_kinds.json``);
- **dictated texts** (a tweet, a message, a ticket's description, a hashtag) replaced by another text of the
  same purpose and topic (``prompts/bfcl/offline_dictated.json``);
- **entities**: another city pair the distance tables know, another stock the TradingBot lists (not one a
  sector list names when the task looks a sector up), another route the fare table prices, each picked per
  sibling (:meth:`~rods_agents.variation.draw.Draw.pick`) so the eight samples of a scenario differ;
- values the assistant reads from earlier results are **re-derived** by the path they had in the
  seed's result (the same key, the same position in the list), so references by position still hold;
- a plan whose execution flips a yes/no outcome of the seed (a range that no longer falls short, a
  tire that is no longer low) is made more conservative: a condition of the seed's text must keep
  its answer.

A plan new only in digits (the same calls once digits are masked) is the verdict's ``novelty:digits_only``,
so the sampler tries again, with every change forced, until one changes an entity, a text or a method; the
conservative fallbacks (:func:`_levels`) drop the resampled state, numbers, options and renames before they
drop the entity swaps, and later attempts swap entities too.

The modules, in the order a plan goes through them: :mod:`~rods_agents.variation.draw` (one draw and its sibling
slot), :mod:`~rods_agents.variation.entity_swaps` and :mod:`~rods_agents.variation.method_swap` (what a draw may swap),
:mod:`~rods_agents.variation.changes` (renames, numbers and swaps decided, then applied),
:mod:`~rods_agents.variation.state_resample` (a new state), :mod:`~rods_agents.variation.rederive` (values read from
results, taken from the variant's), :mod:`~rods_agents.variation.plan_checks` (what a kept plan must pass), and this
one (the draws tried, most varied first).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from envs.executor import CallError, parse_call
from envs.task import Task
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.faithfulness import quoted_fares
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace, bind_args, trace_task
from rods_agents.variation.changes import apply_changes, draw_changes
from rods_agents.variation.draw import Draw
from rods_agents.variation.plan_checks import dangling, flips, patchable, repaired_config, stale_composed
from rods_agents.variation.rederive import rederive, rederive_embedded, rederive_rounded
from rods_agents.variation.seed_anchor import Substitution, substitute_phrases
from rods_agents.variation.state_resample import (
    refill_gt,
    resample_fill_level,
    resample_state,
    shift_counters,
    vary_state,
)
from rods_agents.variation.tire_pressures import shift_tires

_DOUBLED = re.compile(r"\b([A-Za-z]{2,})( \1\b)+", re.I)


def _parsed(gt: list[list[str]]) -> list[list[tuple]]:
    out = []
    for calls in gt:
        row = []
        for c in calls:
            try:  # arguments bound to parameter names: sort('a') and sort(file_name='a') are one call
                p = parse_call(c)
                spec = build_catalog().methods.get(p.name)
                row.append((p.name, repr(sorted(bind_args(spec.cls if spec else None, p.name, p.args,
                                                          p.kwargs).items()))))
            except (CallError, TypeError):
                row.append((c,))
        out.append(row)
    return out


def _masked(parsed: list[list[tuple]]) -> list[list[tuple]]:
    """Parsed calls with every run of digits masked: a plan equal to its seed here is new only in ids,
    tokens, dates or numbers (the verdict's ``novelty:digits_only``)."""
    return [[tuple(re.sub(r"\d+(?:[.,]\d+)*", "#", x) for x in call) for call in turn] for turn in parsed]


def _bound(trace: Trace, seed: Task) -> list[tuple[Any, dict[str, Any]]]:
    out = []
    pos = 0
    for calls in seed.ground_truth:
        for call in calls:
            rec = trace.calls[pos]
            try:
                parsed = parse_call(call)
                args = bind_args(rec.cls, parsed.name, parsed.args, parsed.kwargs)
            except (CallError, TypeError):
                args = dict(rec.args)
            out.append((rec, args))
            pos += 1
    return out


def sibling_slot(category: str, variant: int, attempt: int = 0) -> int:
    """The sample's place among its scenario's samples (the four BFCL categories share a scenario)."""
    cats = ("base", "miss_func", "miss_param", "long_context")
    return (cats.index(category) if category in cats else 0) + 4 * int(variant) + 8 * int(attempt)


def _levels(changes: dict[str, Any]) -> list[dict[str, Any]]:
    """The draw's changes, then more conservative versions of them, in the order :func:`anchored_plan` tries
    them: without the resampled state, without new numbers, without the option swaps, without the renames,
    without any swap."""
    quiet = {**changes, "state": False}
    calm = {**quiet, "numbers": {}}

    def without_options(level: dict[str, Any]) -> dict[str, Any]:
        return {**level, "substitutions": [], "phrases": [],
                "swaps": {k: v for k, v in changes["swaps"].items() if k not in changes["option_swaps"]}}

    # an option swap that breaks the plan goes before the new numbers do (read 37, base_116: a sector swap that
    # could not hold took '50 shares at $150' and '$10000' back to the seed's with it)
    out = [changes, quiet, *([without_options(quiet)] if changes.get("option_swaps") and changes.get("numbers") else []),
           calm]
    if changes.get("option_swaps"):
        out.append(without_options(calm))
    if changes.get("renames") and (changes.get("substitutions") or changes.get("swaps")):
        out.append({**calm, "renames": {}})
    out.append({**calm, "swaps": {}, "substitutions": [], "phrases": []})
    return out


def anchored_plan(seed: Task, profile: Profile, trace: Trace, rng: Any, attempt: int = 0, tries: int = 6,
                  slot: int | None = None) -> dict[str, Any]:
    """The plan's fields (see :class:`rods_agents.stages.plan_sampling.Plan`) for one draw."""
    bound = _bound(trace, seed)
    seed_parsed = _parsed(seed.ground_truth)
    seed_masked = _masked(seed_parsed)
    best: dict[str, Any] | None = None
    for n in range(tries):
        d = Draw(seed, profile, trace, rng, attempt, force=n >= 1)
        d.slot = None if slot is None else slot + 16 * n
        drawn = draw_changes(d, bound)
        # progressively more conservative until the seed's yes/no outcomes hold and the plan runs; the entities
        # (another stock, city pair, route) outlive the documented options (a sector swap that breaks a
        # reference must not take the stock swap with it), and a method swap outlives the renames
        for changes in _levels(drawn):
            plan = _realize(seed, profile, trace, bound, changes, d, rng, attempt)
            if plan is None:
                continue
            parsed = _parsed(plan["ground_truth"])
            if best is None or (parsed != seed_parsed and _parsed(best["ground_truth"]) == seed_parsed):
                best = plan
            if _masked(parsed) != seed_masked:
                return plan  # new beyond digits: another entity, option or method, not only new ids and numbers
            break
    if best is not None:
        return best
    gt, config = apply_changes(seed, bound, {"renames": {}, "swaps": {}, "numbers": {}, "substitutions": [],
                                             "phrases": []})
    return {"ground_truth": gt, "initial_config": config, "attempt": attempt}


def _realize(seed: Task, profile: Profile, trace: Trace, bound: list, changes: dict[str, Any], d: Draw, rng: Any,
             attempt: int) -> dict[str, Any] | None:
    """Apply ``changes``, re-derive values read from results, and check the draft (None: not usable)."""
    for _ in range(3):
        gt, config = apply_changes(seed, bound, changes)
        new_state = attempt < 2 and changes.get("state", True)
        state_changes = {} if not new_state else \
            resample_fill_level(config, trace, rng, " ".join(d.turn_text)) if d.composed else \
            resample_state(config, trace, rng, " ".join(d.turn_text))
        if new_state:
            tires = shift_tires(config, trace, d.turn_text, changes["numbers"], rng)
            if tires is None:
                return None  # a moved tire limit the tires cannot follow
            state_changes = {**state_changes, **tires}
        gt = refill_gt(gt, seed.initial_config.get("VehicleControlAPI", {}).get("fuelLevel"), config, trace)
        derived = rederive(seed, trace, profile, gt, config)
        if derived is None:
            return None
        gt, derived_values = derived
        gt = rederive_embedded(seed, trace, gt, config)
        gt = rederive_rounded(seed, trace, profile, gt, config)  # the fill of a new stated amount, rounded again
        # a renamed value the environment still prints under its old name is not the task's to rename
        back = {o for o, n in derived_values if isinstance(o, str) and o == n and o in changes["renames"]}
        if not back:
            break
        changes = {**changes, "renames": {k: v for k, v in changes["renames"].items() if k not in back}}
    else:
        return None
    draft = seed.model_copy(update={"ground_truth": gt, "initial_config": config})
    vtrace = trace_task(draft)
    if flips(d, trace, vtrace, changes["numbers"]) or dangling(trace, vtrace, d.turn_text) or (vtrace.errors and not patchable(draft)):
        return None
    if d.composed and stale_composed(seed, profile, trace, vtrace):
        return None
    derived_values = [p for p in derived_values if p[0] != p[1]]
    if config == seed.initial_config or state_changes:  # a new state (a patch may undo a resampled one)
        varied = vary_state(seed, profile, trace, gt, config, d, rng)
        if varied is not None:
            gt, config, more, extra = varied
            state_changes = {**state_changes, **extra}
            derived_values += more
    if attempt < 2:  # new ids for what the task creates, on every level of the plan: only ids read back follow them
        gt, config, counters = _with_counters(seed, profile, trace, gt, config, d, rng)
        state_changes = {**state_changes, **counters}
    # a fare the seed's words quote follows the plan's route and class ('at a cost of 4700 dollars' -> 3900)
    final = seed.model_copy(update={"ground_truth": gt, "initial_config": config})
    derived_values += [p for p in quoted_fares(final, seed) if p not in derived_values]
    return {"ground_truth": gt, "initial_config": config, "renames": changes["renames"],
            "numbers": changes["numbers"], "swaps": changes["swaps"], "derived": derived_values,
            "substitutions": changes["substitutions"], "phrases": changes["phrases"],
            "state_changes": state_changes, "attempt": attempt}


def _with_counters(seed: Task, profile: Profile, trace: Trace, gt: list[list[str]], config: dict, d: Draw, rng: Any
                   ) -> tuple[list[list[str]], dict, dict[str, Any]]:
    """The plan with the environments' id counters moved (:func:`shift_counters`) and the ids read back re-derived,
    on the state the config patch agent will make of it (a buy the balance cannot cover creates its order only once
    the patch funds it); the plan as it was where the re-derived draft no longer runs alike."""
    moved = copy.deepcopy(config)
    counters = shift_counters(moved, trace, " ".join(d.turn_text), rng)
    fixed = repaired_config(seed.model_copy(update={"ground_truth": gt, "initial_config": config})) if counters else None
    if fixed is None:
        return gt, config, {}
    for path, value in counters.items():
        cls, key = path.split(".", 1)
        fixed.setdefault(cls, {})[key] = value
    derived = rederive(seed, trace, profile, gt, fixed)
    if derived is None:
        return gt, config, {}
    vtrace = trace_task(seed.model_copy(update={"ground_truth": derived[0], "initial_config": fixed}))
    if vtrace.errors or flips(d, trace, vtrace) or dangling(trace, vtrace, d.turn_text):
        return gt, config, {}
    return derived[0], moved, counters


def _quoted(text: str, pos: int) -> bool:
    """Inside a quoted value (dictated text the ground truth holds word for word)."""
    return len(re.findall(r"(?<![A-Za-z])'|'(?![A-Za-z])", text[:pos])) % 2 == 1


def carry_turn(text: str, turn: int, plan: Any) -> str:
    """The seed's turn ``text`` with the plan's changes carried in (see :mod:`rods_agents.variation.seed_anchor`)."""
    from rods_agents.variation.seed_anchor import substitute_numbers

    strings = {**plan.renames, **plan.swaps}
    numbers = dict(plan.numbers)
    for old, new in plan.derived:
        if isinstance(old, str) and isinstance(new, str):
            strings.setdefault(old, new)
        elif isinstance(old, int | float) and isinstance(new, int | float) and not isinstance(old, bool):
            numbers.setdefault(repr(old), new)
    text = Substitution(strings).text(text)
    text = substitute_numbers(text, numbers)
    phrases = [tuple(p) for entry in plan.phrases if entry.get("turn") == turn for p in entry.get("phrases", [])]
    text = substitute_phrases(text, phrases)
    for new in {*plan.renames.values(), *plan.swaps.values(), *(p[1] for p in phrases)}:
        if isinstance(new, str) and new[:1].isalpha():  # 'a business class' -> 'an economy class'
            article = "an" if new[0].lower() in "aeiou" else "a"
            text = re.sub(rf"\b([Aa])n? (?={re.escape(new)}\b)",
                          lambda m, a=article, t=text: m.group(0) if _quoted(t, m.start()) else
                          (a.capitalize() if m.group(1) == "A" else a) + " ", text)
    text = _closed_quotes(text, _dictated(plan.ground_truth, turn))
    return _DOUBLED.sub(r"\1", text)  # the seeds' own typos ('each each') are not carried


def _dictated(ground_truth: list[list[str]], turn: int) -> list[str]:
    """The text values (a dozen characters or more) the calls of ``turn`` and the next one take: what the turn may
    dictate (a miss_param turn's value is taken a turn later)."""
    out: list[str] = []
    for call in [c for t in (turn, turn + 1) if t < len(ground_truth) for c in ground_truth[t]]:
        try:
            parsed = parse_call(call)
        except CallError:
            continue
        out += [v for v in (*parsed.args, *parsed.kwargs.values()) if isinstance(v, str) and len(v) >= 12]
    return out


def _closed_quotes(text: str, values: list[str]) -> str:
    """A dictated value whose quote the seed opens and never closes ("with the description 'There is an issue ... an
    account summary. My username is user123 ...", base_110) gets its closing quote where the value ends: left open,
    nothing says where the description stops (read 31 marked it borderline). One closed by a curly quote closes with
    the straight one it opened with. A quote closed later in the text, or an apostrophe inside a word, leaves the text
    as it is."""
    for value in values:
        at = text.find("'" + value)
        if at < 0:
            continue
        end = at + 1 + len(value)
        if text[end:end + 1] == "’":  # 'Urgent Change in Travel Plans’ (base_193): the quote closes as it opened
            text = text[:end] + "'" + text[end + 1:]
        elif text[end:end + 1] != "'" and not re.search(r"(?<![A-Za-z])['’]|['’](?![A-Za-z])", text[end:]):
            text = text[:end] + "'" + text[end:]
    return text


__all__ = ["anchored_plan", "carry_turn", "rederive"]
