"""A user's own environment class works wherever BFCL's do: the example library (examples/library) end to end.

What a team bringing its own tools relies on (docs/environments.md): seeds in BFCL's entry format naming the
class by import path; tools derived from type hints and docstrings; BFCL's checker semantics (state after each
turn, responses) and so the progress reward; miss_func / miss_param with BFCL's fields; clear one-line errors
for a class that breaks the contract; eval, synthesis, training and export taking such seeds.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envs.checker import check
from envs.classes import EnvironmentClassError, forget_user_classes, resolve
from envs.evaluate import evaluate
from envs.executor import Environment
from envs.policies import make_policy
from envs.task import Task, TaskFileError, forget_human_tasks, read_tasks, write_tasks
from envs.tools import tools_for_turn

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "examples" / "library" / "seeds.jsonl"
LIBRARY = "examples.library.api:LibraryAPI"


@pytest.fixture(scope="module", autouse=True)
def _own_classes_stay_in_this_module():
    """User classes and their seeds are process-wide (the catalog covers them): forget them after this module, so
    tests that count BFCL's 128 methods see BFCL's alone."""
    yield
    forget_user_classes()
    forget_human_tasks()


@pytest.fixture(scope="module")
def seeds() -> list[Task]:
    return read_tasks(SEEDS)


def _by_id(seeds: list[Task]) -> dict[str, Task]:
    return {t.id: t for t in seeds}


def test_seeds_pass_the_oracle_with_full_progress(seeds):
    report = evaluate(seeds, make_policy("oracle"), policy_name="oracle")
    assert report.overall.total == len(seeds) == 8
    assert all(e.passed and e.progress == 1.0 for e in report.entries), report.entries
    assert set(report.categories) == {"base", "miss_func", "miss_param"}
    for task in seeds:  # a ground truth that errors would still "pass" against itself: it must not error
        env = Environment(task.involved_classes, task.initial_config, task.long_context)
        results = [r for calls in task.ground_truth for r in env.run(calls)]
        assert not any('"error"' in r or r.startswith("Error during execution") for r in results), (task.id, results)


def test_seed_format_ids_category_and_scenario_are_optional(seeds):
    task = _by_id(seeds)["library_borrow_1"]
    assert (task.category, task.scenario, task.involved_classes) == ("base", None, [LIBRARY])
    assert _by_id(seeds)["library_hidden_tool_6"].category == "miss_func"  # missed_function given, category not
    out = task.to_bfcl()
    assert out["category"] == "base" and "scenario" not in out and Task.from_bfcl(out) == task


def test_a_bfcl_class_seed_with_its_own_id_needs_no_category_or_scenario(tmp_path, bfcl_tasks):
    entry = bfcl_tasks[0].to_bfcl()  # multi_turn_base_0 under another name, nothing else added
    entry["id"] = "my_fs_1"
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(entry) + "\n")
    (task,) = read_tasks(path)
    assert (task.id, task.category, task.scenario) == ("my_fs_1", "base", None)
    assert check(task, [[calls] for calls in task.ground_truth]).passed
    assert check(task, [[] for _ in task.ground_truth]).progress == 0.0


def test_tools_come_from_type_hints_and_docstrings(seeds):
    task = _by_id(seeds)["library_borrow_1"]
    tools = {t["function"]["name"]: t["function"] for t in tools_for_turn(task, 0)}
    assert list(tools) == list(resolve(LIBRARY).methods)  # definition order, all public methods
    assert "_load_scenario" not in tools and len(tools) == 11
    borrow = tools["borrow_book"]
    assert borrow["description"] == "Borrow a copy of a book for the logged-in member."
    assert borrow["parameters"]["required"] == ["book_id"]
    assert borrow["parameters"]["properties"]["weeks"] == {
        "type": "integer", "default": 2, "description": "Loan length in weeks, from 1 to 4."}


def test_miss_func_holds_the_tool_back_until_its_reveal_turn(seeds):
    task = _by_id(seeds)["library_hidden_tool_6"]
    names = [[t["function"]["name"] for t in tools_for_turn(task, turn)] for turn in range(4)]
    assert "renew_loan" not in names[0] and "renew_loan" not in names[1]
    assert names[2][-1] == "renew_loan" and names[3][-1] == "renew_loan"
    assert task.user_messages(2)[0]["content"].startswith("I have updated some more functions")


def test_checker_applies_bfcls_semantics_to_a_user_class(seeds):
    task = _by_id(seeds)["library_borrow_1"]
    gt = [[calls] for calls in task.ground_truth]
    assert check(task, gt).progress == 1.0
    # skipping the login: borrowing fails, so the state after turn 1 differs (turn 0 fails on state too)
    no_login = [[["library_login_status()"]], gt[1], gt[2]]
    score = check(task, no_login)
    assert not score.passed and score.failure == "multi_turn:instance_state_mismatch" and score.progress == 0.0
    # the wrong book: state mismatch from turn 1 on; turn 0 still earns its third of the progress reward
    wrong = [gt[0], [["find_book_by_title(title='Dune')", "borrow_book(book_id='B104', weeks=3)"]], gt[2]]
    score = check(task, wrong)
    assert score.failure_turn == 1 and score.progress == pytest.approx(1 / 3)
    # the read of turn 2 done in turn 1 already: responses are matched cumulatively, as BFCL does
    early = [gt[0], [[*task.ground_truth[1], "list_my_loans()"]], [["library_login_status()"]]]
    assert check(task, early).passed
    # nothing in a scored turn fails it even when the state happens to match
    assert check(task, [gt[0], gt[1], []]).failure == "multi_turn:empty_turn_model_response"


def test_miss_param_withheld_turn_is_unscored_and_the_value_turn_scored(seeds):
    task = _by_id(seeds)["library_withheld_4"]
    assert task.category == "miss_param" and task.ground_truth[1] == [] and task.scored_turns == [0, 2]
    gt = [[calls] for calls in task.ground_truth]
    guessed = [gt[0], [task.ground_truth[2]], [["library_login_status()"]]]  # acting on a guess one turn early
    assert check(task, guessed).passed  # BFCL does not penalize a right guess
    assert check(task, [gt[0], [], []]).progress == 0.5


def test_fresh_state_per_episode(seeds):
    task = _by_id(seeds)["library_borrow_1"]
    a = Environment(task.involved_classes, task.initial_config)
    b = Environment(task.involved_classes, task.initial_config)
    a.run(task.ground_truth[0] + task.ground_truth[1])
    assert a.state_diff(b) == {LIBRARY: ["books", "loans", "loan_counter", "current_user"]}
    assert b.instances[LIBRARY].loans == {} and "loans" not in task.initial_config["LibraryAPI"]


def test_a_class_that_forgets_to_copy_its_module_defaults_still_gets_fresh_state(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "leaky_env", '''
        DEFAULT = {"items": []}

        class LeakyAPI:
            def _load_scenario(self, config, long_context=False):
                self.items = config.get("items", DEFAULT["items"])  # the module's own list, not a copy

            def add_item(self, item: str) -> list:
                """Add an item.

                Args:
                    item: The item.
                """
                self.items.append(item)
                return self.items
        ''')
    first = Environment(["leaky_env:LeakyAPI"], {})
    first.run(["add_item(item='x')"])
    assert Environment(["leaky_env:LeakyAPI"], {}).instances["leaky_env:LeakyAPI"].items == []


# ------------------------------------------------------------------------------------------- contract errors
def _module(tmp_path, monkeypatch, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))


GOOD = '''
class {cls}:
    def __init__(self):
        self.count = 0
    def _load_scenario(self, config, long_context=False):
        self.count = config.get("count", 0)
    def {method}(self, by: int = 1) -> dict:
        """Add to the counter.

        Args:
            by: How much to add.
        """
        self.count += by
        return {{"count": self.count}}
'''


UNTYPED = 'class CrmAPI:\n    def _load_scenario(self, c, long_context=False):\n        pass\n' \
    '    def bump(self, by):\n        """Bump."""\n'
STARRED = UNTYPED.replace("(self, by)", "(self, *names: str)")


@pytest.mark.parametrize(("source", "spec", "needle"), [
    ("", "CrmAPI", "unknown environment class 'CrmAPI'"),
    ("", "no_such_module_xyz:CrmAPI", "cannot import no_such_module_xyz"),
    ("", "{mod}:Missing", "has no attribute Missing"),
    ("class CrmAPI:\n    def ping(self) -> str:\n        '''Ping.'''\n", "{mod}:CrmAPI", "_load_scenario"),
    ("class CrmAPI:\n    def __init__(self, db):\n        pass\n    def _load_scenario(self, c, long_context=False):\n"
     "        pass\n", "{mod}:CrmAPI", "constructor must take no arguments"),
    (GOOD.format(cls="CrmAPI", method="logout"), "{mod}:CrmAPI", "logout (TicketAPI)"),
    (GOOD.format(cls="TicketAPI", method="bump"), "{mod}:TicketAPI", "is a BFCL class name"),
    ("class CrmAPI:\n    def _load_scenario(self, c, long_context=False):\n        pass\n"
     "    def bump(self, by: int):\n        return by\n", "{mod}:CrmAPI", "bump needs a docstring"),
    (UNTYPED, "{mod}:CrmAPI", "parameter by of bump needs a type hint"),
    (STARRED, "{mod}:CrmAPI", "no *args"),
])
def test_a_class_that_breaks_the_contract_is_refused_in_one_line(tmp_path, monkeypatch, source, spec, needle):
    mod = f"user_env_{abs(hash((source, spec))) % 10**8}"
    _module(tmp_path, monkeypatch, mod, source)
    with pytest.raises(EnvironmentClassError, match=None) as info:
        resolve(spec.format(mod=mod))
    assert needle in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_a_crm_seed_file_loads_evaluates_and_names_bad_lines(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "my_crm", GOOD.format(cls="CounterAPI", method="bump_counter"))
    spec = "my_crm:CounterAPI"
    entry = {"id": "crm-1", "question": [[{"role": "user", "content": "Bump it by 3."}]],
             "initial_config": {"CounterAPI": {"count": 4}}, "involved_classes": [spec],
             "ground_truth": [["bump_counter(by=3)"]]}
    path = tmp_path / "seeds.jsonl"
    path.write_text(json.dumps(entry) + "\n" + json.dumps({**entry, "initial_config": {spec: {}}}) + "\n")
    with pytest.raises(TaskFileError, match=r"seeds.jsonl:2: .*keyed by class name.*\['CounterAPI'\]") as info:
        read_tasks(path)
    assert ": :" not in str(info.value), str(info.value)  # a whole-entry check has no field to name
    path.write_text(json.dumps(entry) + "\n")
    (task,) = read_tasks(path)
    env = Environment(task.involved_classes, task.initial_config)
    assert env.run(task.ground_truth[0]) == ['{"count": 7}']
    assert evaluate([task], make_policy("oracle")).overall.accuracy == 1.0


# ------------------------------------------------------------------------------------------- the commands
def test_rods_eval_and_tasks_take_user_seeds(tmp_path):
    from rods_cli.main import app

    out = tmp_path / "report.json"
    res = CliRunner().invoke(app, ["eval", "--tasks", str(SEEDS), "--policy", "oracle", "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads(out.read_text())
    assert (report["overall"]["passed"], report["overall"]["total"], report["overall"]["progress"]) == (8, 8, 1.0)
    res = CliRunner().invoke(app, ["tasks", "--tasks", str(SEEDS), "--format", "jsonl"])
    rows = [json.loads(line) for line in res.output.splitlines()]
    assert [r["id"] for r in rows][:2] == ["library_borrow_1", "library_return_2"]
    assert rows[0]["involved_classes"] == [LIBRARY] and rows[0]["scenario"] is None


def test_rods_export_of_user_seeds_loads_with_datasets(tmp_path, seeds):
    import datasets

    from rods_cli.main import app

    src = tmp_path / "tasks.jsonl"
    write_tasks(src, seeds)
    res = CliRunner().invoke(app, ["export", str(src), "--out", str(tmp_path / "ds")])
    assert res.exit_code == 0, res.output
    ds = datasets.load_from_disk(str(tmp_path / "ds"))
    assert len(ds) == 8 and ds[0]["id"] == "library_borrow_1" and ds[0]["involved_classes"] == [LIBRARY]
    tools = ds[0]["tools"]
    names = [t["function"]["name"] for t in (json.loads(tools) if isinstance(tools, str) else tools)]
    assert "borrow_book" in names


@pytest.mark.slow
def test_one_epoch_of_the_tiny_trainer_on_the_example(tmp_path, monkeypatch):
    """`rods train` (tiny CPU recipe) runs real GRPO steps on real episodes of the user's class."""
    import typer

    import trainer.rollout as rollout_mod
    from rods_cli.train import TRAIN_CONTEXT_SETTINGS, train_command

    seen: list[str] = []
    real = rollout_mod.run_rollouts

    def run_rollouts(tasks, *a, **kw):
        seen.extend(t.id for t in tasks)
        return real(tasks, *a, **kw)

    monkeypatch.setattr(rollout_mod, "run_rollouts", run_rollouts)
    app = typer.Typer()
    app.command("train", context_settings=TRAIN_CONTEXT_SETTINGS)(train_command)
    app.command("noop")(lambda: None)
    run_dir = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "train", "--config", str(ROOT / "recipes" / "tiny-cpu.yaml"), "--output_dir", str(run_dir),
        "--tasks_file", str(SEEDS), "--involved_classes", LIBRARY, "--categories", "base", "miss_param",
        "--num_seed_tasks", "2", "--num_train_epochs", "1"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    summary = json.loads((run_dir / "rods_summary.json").read_text())
    assert (summary["epochs"], summary["global_step"], summary["pool_size"]) == (1, 1, 2)
    assert len(seen) == 8 and len(set(seen)) == 2 and set(seen) <= {t.id for t in read_tasks(SEEDS)}  # 2 tasks x K=4
    history = json.loads((run_dir / "log_history.json").read_text())
    assert any("rods/rollout_s" in h for h in history)


# ------------------------------------------------------------------------------------------- synthesis
@pytest.fixture(scope="module")
def offline_run(seeds):
    from graphs.synthesis import synthesize

    return synthesize(seeds, {"seed": 0, "variants_per_seed": 2})


def test_offline_synthesis_accepts_at_least_half_and_every_variant_passes_the_oracle(seeds, offline_run):
    """The offline backbone on a class without BFCL's data tables: derived value kinds and the other seeds'
    wording make new variants; each is a new task (not its seed's text, not its seed's calls) that its own
    ground truth solves."""
    by_id = _by_id(seeds)
    accepted = offline_run.accepted
    assert len(accepted) >= len(seeds)  # at least half of the 2 x 6 samples
    for task in accepted:
        seed = by_id[task.provenance["seed_id"]]
        assert task.id.startswith(f"{seed.id}__rods_")  # a variant's id is its seed's id plus a suffix
        assert task.involved_classes == [LIBRARY] and task.category == seed.category
        assert [m.content for t in task.turns for m in t] != [m.content for t in seed.turns for m in t]
        assert task.ground_truth != seed.ground_truth
        assert check(task, [[calls] for calls in task.ground_truth]).progress == 1.0
        env = Environment(task.involved_classes, task.initial_config, task.long_context)
        results = [r for calls in task.ground_truth for r in env.run(calls)]
        assert not any('"error"' in r for r in results), (task.id, results)
    assert {t.category for t in accepted} >= {"base", "miss_param"}


# ------------------------------------------------------------------------------------------- knowledge
def test_environment_knowledge_is_bfcls_data_for_bfcl_and_derived_for_a_user_class(seeds):
    import random

    from prompts import load_prompt_json
    from rods_agents.analysis import knowledge

    lexicon = knowledge.method_lexicon()["methods"]
    bfcl = load_prompt_json("bfcl/method_lexicon.json")["methods"]
    assert all(lexicon[m] == entry for m, entry in bfcl.items())  # BFCL's entries untouched
    assert lexicon["library_login"]["by_value"] is False and lexicon["borrow_book"]["by_value"] is True
    assert lexicon["find_book_by_title"]["by_value"] is False  # a look-up the assistant infers
    assert knowledge.is_user_class(LIBRARY) and not knowledge.is_user_class("TicketAPI")
    assert {t.id for t in knowledge.donor_tasks() if t.id.startswith("library_")} == {t.id for t in seeds}
    rng = random.Random(0)
    for old, kind, shape in [("mchen", "handle", r"^[a-z]+$"), ("priya.n", "handle", r"^[a-z]+\.[a-z]$"),
                             ("The Dispossessed", "name", r"^The [A-Z][a-z]+$"),
                             ("Station Eleven", "name", r"^[A-Z][a-z]+ [A-Z][a-z]+$")]:
        assert knowledge.derived_kind(old) == kind
        new = knowledge.derived_value(old, kind, rng, {old})
        assert new and new != old and re.match(shape, new), (old, new)
    assert knowledge.derived_kind("owl-2024") is None  # digits: an id, renewed digit by digit by the plan


def test_the_catalog_knows_what_a_user_method_reads_and_writes(seeds):
    """Writes through a local name (``loan = self.loans[i]; loan["weeks"] += n``) and ``del`` count: the roles
    feed the LLM's function docs and the plan's substitutions."""
    from rods_agents.analysis.catalog import build_catalog

    methods = build_catalog().methods
    assert (methods["renew_loan"].role, methods["renew_loan"].writes) == ("write", ["loans"])
    assert (methods["return_book"].role, methods["return_book"].writes) == ("write", ["books", "loans"])
    assert methods["borrow_book"].writes == ["books", "loan_counter", "loans"]
    assert (methods["find_book_by_title"].role, methods["list_my_loans"].role) == ("read", "read")
    assert methods["borrow_book"].cls == LIBRARY


def test_an_llm_config_patch_names_a_user_class_by_its_config_key(seeds):
    """The LLM sees ``initial_config`` keyed by class name, so its patch says ``LibraryAPI``, not the import path."""
    import copy

    from rods_agents.llm.backbone import apply_proposal
    from rods_agents.llm.schemas import ConfigPatchProposal

    task = _by_id(seeds)["library_borrow_1"]
    config = copy.deepcopy(task.initial_config)
    apply_proposal(config, ConfigPatchProposal(cls="LibraryAPI", path="books.B102.copies", value=3),
                   task.involved_classes)
    assert list(config) == ["LibraryAPI"] and config["LibraryAPI"]["books"]["B102"]["copies"] == 3
    with pytest.raises(ValueError, match="not involved"):
        apply_proposal(config, ConfigPatchProposal(cls="TicketAPI", path="x", value=1), task.involved_classes)


def test_cli_errors_print_class_paths_as_text_not_emoji(tmp_path):
    """Rich turns ':A' into an emoji code by default; 'pkg.mod:A' in an error must print as typed."""
    from typer.testing import CliRunner

    from rods_cli.main import app

    entry = {"id": "t1", "question": [[{"role": "user", "content": "Hi."}]], "initial_config": {},
             "involved_classes": ["nosuchpkg_rods.m:A"], "ground_truth": [["f()"]]}
    path = tmp_path / "seeds.jsonl"
    path.write_text(json.dumps(entry) + "\n")
    result = CliRunner().invoke(app, ["eval", "--tasks", str(path), "--policy", "oracle"])
    assert result.exit_code == 2
    assert "nosuchpkg_rods.m:A" in result.output, result.output


def test_oracle_eval_warns_about_a_ground_truth_call_that_names_no_tool(tmp_path, monkeypatch):
    """The oracle replays errors too, so a typo'd method in a seed would pass silently without the warning."""
    from typer.testing import CliRunner

    from rods_cli.main import app

    _module(tmp_path, monkeypatch, "my_crm2", GOOD.format(cls="TallyAPI", method="bump_tally"))
    entry = {"id": "crm-typo", "question": [[{"role": "user", "content": "Bump it by 3."}]],
             "initial_config": {"TallyAPI": {"count": 4}}, "involved_classes": ["my_crm2:TallyAPI"],
             "ground_truth": [["bump_tly(by=3)"]]}
    path = tmp_path / "seeds.jsonl"
    path.write_text(json.dumps(entry) + "\n")
    result = CliRunner().invoke(app, ["eval", "--tasks", str(path), "--policy", "oracle"])
    assert "warning: crm-typo: ground truth turn 0: bump_tly(by=3)" in result.output, result.output
    path.write_text(json.dumps({**entry, "ground_truth": [["bump_tally(by=3)"]]}) + "\n")
    assert "warning" not in CliRunner().invoke(app, ["eval", "--tasks", str(path), "--policy", "oracle"]).output
