"""The safe executor: hostile text executes nothing; valid calls behave exactly like BFCL's."""

from __future__ import annotations

import builtins
import copy
import decimal
import itertools
import json
import random
import string
from collections import OrderedDict

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs.executor import ERROR_PREFIX, CallError, Environment, parse_call, serialize_result, to_call_string

CLASSES = ["GorillaFileSystem", "TwitterAPI", "MathAPI"]
CONFIG = {
    "GorillaFileSystem": {"root": {"workspace": {"type": "directory", "contents": {
        "notes.txt": {"type": "file", "content": "alpha\nbeta"},
        "docs": {"type": "directory", "contents": {}},
    }}}},
    "TwitterAPI": {"username": "ana", "password": "pw", "authenticated": True, "tweets": {}, "comments": {},
                   "retweets": {}, "following_list": [], "tweet_counter": 0},
}


def make_env(**kw) -> Environment:
    return Environment(kw.get("classes", CLASSES), kw.get("config", CONFIG), kw.get("long_context", False))


def full_state(env: Environment) -> dict:
    """Every attribute, private ones too (RNG state as its tuple), deep-copied."""
    out = {}
    for name, inst in env.instances.items():
        attrs = {}
        for k, v in vars(inst).items():
            attrs[k] = v.getstate() if isinstance(v, random.Random) else copy.deepcopy(v)
        out[name] = attrs
    return out


HOSTILE = [
    # imports and builtins
    "import os", "from os import system", "__import__('os').system('touch {canary}')",
    "__import__('os')", "ls(a=__import__('os').system('touch {canary}'))",
    "open('{canary}', 'w')", "exec(\"open('{canary}', 'w')\")", "eval(\"open('{canary}', 'w')\")",
    "print('hi')", "exit()", "quit()", "compile('1', 'f', 'eval')", "globals()", "vars()", "breakpoint()",
    "getattr(ls, '__globals__')",
    # dunder and attribute chains
    "ls.__globals__", "().__class__", "().__class__.__bases__[0].__subclasses__()",
    "ls.__globals__['__builtins__']['open']('{canary}', 'w')", "os.system('touch {canary}')",
    "self.ls()", "GorillaFileSystem.ls()", "ls.__call__()", "pwd().__class__", "ls()()", "ls().x",
    # nested calls, comprehensions, lambdas, f-strings
    "ls(a=pwd())", "cd(folder=pwd())", "mkdir(dir_name=str(1))", "mkdir(dir_name=[x for x in 'ab'])",
    "mkdir(dir_name={x: 1 for x in 'ab'})", "mkdir(dir_name={x for x in 'ab'})", "mkdir(dir_name=(x for x in 'ab'))",
    "mkdir(dir_name=lambda: open('{canary}', 'w'))", "(lambda: open('{canary}', 'w'))()",
    "mkdir(dir_name=f'{{1+1}}')", "mkdir(dir_name=f'x')",
    # starred, **kwargs, walrus, subscripts, binary ops, names as values
    "mkdir(*['x'])", "mkdir(**{'dir_name': 'x'})", "mkdir(dir_name=(y := 'x'))", "mkdir(dir_name='abc'[0])",
    "mkdir(dir_name=['a'][0])", "mkdir(dir_name='a' + 'b')", "add(a=1+1, b=2)", "add(a=2**10, b=1)",
    "add(a=not 1, b=2)", "add(a=1 if 1 else 2, b=2)", "add(a=1 < 2, b=2)", "add(a=~1, b=2)", "mkdir(dir_name=x)",
    "mkdir(dir_name=True and 'x')", "mkdir(dir_name=...)", "mkdir(dir_name=b'x')", "add(a=1j, b=2)",
    "mkdir(dir_name=-'x')", "add(a=-True, b=1)", "mkdir(dir_name={1, 2})", "mkdir(dir_name={**{}})",
    "mkdir(dir_name='x', dir_name='y')", "mkdir(dir_name={[1]: 2})", "mkdir(dir_name={(1, [2]): 3})",
    "mkdir(dir_name={{}: 1})", "await mkdir(dir_name='x')", "mkdir(dir_name=(yield))",
    # huge literals
    "mkdir(dir_name='" + "x" * 250_000 + "')", "mkdir(dir_name=" + "[" * 50 + "]" * 50 + ")",
    "mkdir(dir_name=" + "[" * 500 + "]" * 500 + ")", "add(a=1" + "0" * 10_000 + ", b=1)",
    "add(a=1" + "0" * 200 + ", b=1)", "mean(numbers=[" + ", ".join(["1"] * 20_000) + "])",
    "add(a=" + "-" * 5000 + "1, b=1)", "(" * 100_000,
    # not calls / several statements
    "", " ", "ls", "ls(", "ls())", "ls(); rm(file_name='notes.txt')", "ls()\nrm(file_name='notes.txt')",
    "rm(file_name='notes.txt') if 1 else 0", "[rm(file_name='notes.txt')]", "x = 1", "lambda: 1", "1", "'ls()'",
    "ls(a='\x00')",
    # private / non-involved / BFCL's forbidden names
    "_load_scenario({{}})", "__init__()", "_current_dir()", "__eq__(1)", "_random()",
    "get_stock_info(symbol='AAPL')", "send_message(receiver_id='x', message='y')", "fillFuelTank(fuelAmount=1.0)",
    "kill()", "remove('notes.txt')", "unlink('notes.txt')", "system('touch {canary}')", "popen('ls')", "run('ls')",
]


@pytest.fixture
def tripwires(monkeypatch):
    """``arm()`` makes dangerous builtins record and refuse any use (``monkeypatch.undo()`` disarms)."""
    calls = []
    real_import = builtins.__import__

    def spy(name):
        def tripped(*a, **k):
            calls.append(name)
            raise AssertionError(f"{name} was called")
        return tripped

    def guarded_import(name, *a, **k):
        calls.append(f"import {name}")
        return real_import(name, *a, **k)

    def arm():
        for name in ("open", "exec", "eval", "print", "exit", "quit", "breakpoint", "input"):
            monkeypatch.setattr(builtins, name, spy(name))
        monkeypatch.setattr(builtins, "__import__", guarded_import)

    return arm, calls


@pytest.mark.parametrize("template", HOSTILE, ids=lambda s: repr(s[:40]) + f"[{len(s)}]")
def test_hostile_input_is_rejected_and_executes_nothing(template, tmp_path, tripwires, monkeypatch):
    canary = tmp_path / "canary"
    call = template.replace("{canary}", str(canary)) if "{canary}" in template else template.replace("{{", "{").replace("}}", "}")
    env = make_env()
    before = full_state(env)
    with pytest.raises(CallError):
        parsed = parse_call(call)
        if parsed.name not in env.method_names:  # parses, but names no method of the involved classes
            raise CallError(parsed.name)
    arm, tripped = tripwires
    arm()
    try:
        result = env.execute(call)
    finally:
        monkeypatch.undo()
    assert isinstance(result, str) and result.startswith(ERROR_PREFIX), result[:200]
    assert full_state(env) == before
    assert not canary.exists()
    assert tripped == []


@pytest.mark.parametrize("call", ["ls.__globals__", "ls(a=pwd())", "_load_scenario({})", "get_stock_info(symbol='A')",
                                  "mkdir(dir_name=[x for x in 'ab'])", "open('x')"])
def test_rejections_say_why(call):
    result = make_env().execute(call)
    assert result.startswith(ERROR_PREFIX) and len(result) > len(ERROR_PREFIX) + 5


def test_undefined_names_read_like_bfcl():
    env = make_env()
    for name in ("open", "get_stock_info", "nonexistent_function"):
        assert env.execute(f"{name}(x=1)") == f"{ERROR_PREFIX}name '{name}' is not defined"


# ------------------------------------------------------------------ fuzz
NAMES = ["ls", "pwd", "cd", "mkdir", "rm", "echo", "post_tweet", "mention", "add", "power", "logarithm",
         "open", "eval", "exec", "__import__", "_load_scenario", "get_stock_info", "x", "os", "self"]
LITERALS = st.one_of(
    st.integers(-10**6, 10**6).map(repr), st.floats(allow_nan=False, width=32).map(repr),
    st.text(max_size=8).map(repr), st.sampled_from(["True", "False", "None", "...", "1j", "b'x'"]),
)


def _fragments(leaf):
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(inner, max_size=3).map(lambda xs: "(" + ", ".join(xs) + ",)"),
        st.lists(st.tuples(inner, inner), max_size=2).map(lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        st.tuples(st.sampled_from(NAMES), inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, st.sampled_from(["+", "*", "**", "-", " if 1 else "]), inner).map("".join),
        st.tuples(st.sampled_from(NAMES), st.sampled_from(["__class__", "__globals__", "system", "x"])).map(".".join),
        inner.map(lambda x: f"-{x}"), inner.map(lambda x: f"[{x}][0]"), inner.map(lambda x: f"(lambda: {x})"),
        inner.map(lambda x: f"[y for y in {x}]"), inner.map(lambda x: f"f'{{{x}}}'"), inner.map(lambda x: f"*{x}"),
        inner.map(lambda x: f"**{x}"), inner.map(lambda x: f"(z := {x})"),
    ), max_leaves=6)


AST_ISH = st.tuples(
    st.sampled_from(NAMES + ["", "ls.x", "()"]),
    st.lists(st.one_of(_fragments(st.one_of(LITERALS, st.sampled_from(NAMES))),
                       st.tuples(st.sampled_from(["a", "b", "folder", "dir_name", "content", "_x"]),
                                 _fragments(LITERALS)).map("=".join)), max_size=3),
).map(lambda t: f"{t[0]}({', '.join(t[1])})")


def _rejected(env: Environment, call: str, allowed) -> bool:
    try:
        parsed = parse_call(call)
    except CallError:
        return True
    return parsed.name not in env.method_names or (allowed is not None and parsed.name not in allowed)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=st.one_of(st.text(max_size=60), AST_ISH, st.text(alphabet=string.printable, max_size=80)),
       allowed=st.one_of(st.none(), st.just(frozenset({"pwd", "add"}))))
def test_fuzz_execute_never_raises_and_rejections_change_nothing(call, allowed):
    env = make_env()
    before = full_state(env)
    result = env.execute(call, allowed=allowed)
    assert isinstance(result, str)
    if _rejected(env, call, allowed):
        assert result.startswith(ERROR_PREFIX)
        assert full_state(env) == before


# ------------------------------------------------------------------ positive behaviour
def test_literals_parse_exactly():
    p = parse_call("f('a', -1, -2.5, +3, True, None, [1, [2, {'k': (3, None)}]], x={'n': {'m': [-1]}}, y=())")
    assert p.name == "f"
    assert p.args == ("a", -1, -2.5, 3, True, None, [1, [2, {"k": (3, None)}]])
    assert p.kwargs == {"x": {"n": {"m": [-1]}}, "y": ()}


def test_positional_and_keyword_calls_are_equivalent():
    a, b = make_env(), make_env()
    assert a.execute("cd('docs')") == b.execute("cd(folder='docs')") == '{"current_working_directory": "docs"}'
    assert a.execute("pwd()") == b.execute("pwd()") == '{"current_working_directory": "/workspace/docs"}'
    assert a.execute("add(-1, -2.5)") == b.execute("add(a=-1, b=-2.5)") == '{"result": -3.5}'
    assert a.execute("mean([1, 2, 3])") == b.execute("mean(numbers=[1, 2, 3])")


def test_to_call_string_round_trips():
    args = {"content": "it's \"quoted\"\n", "tags": ["#a"], "n": -1, "x": 1.5, "ok": True, "none": None}
    text = to_call_string("post_tweet", args)
    assert "," in text and ", " not in text.replace("', '", "")  # BFCL: no spaces between arguments
    assert parse_call(text).kwargs == args


@pytest.mark.parametrize(("value", "expected"), [
    ("plain", "plain"),
    ({"a": 1, "b": [1.0, "é"]}, json.dumps({"a": 1, "b": [1.0, "é"]})),
    ({"result": mpmath.mpf(2)}, "{'result': mpf('2.0')}"),
    ({"result": decimal.Decimal("1.4142")}, "{'result': Decimal('1.4142')}"),
    (None, "None"), ([], "[]"), (["a", 1], "['a', 1]"), (5, "5"), (2.0, "2.0"), (True, "True"),
    (OrderedDict(a=1), str(OrderedDict(a=1))),  # BFCL tests type() == dict, so subclasses take str()
])
def test_serialization_matches_bfcl_rules(value, expected):
    assert serialize_result(value) == expected


def test_environment_results_equal_bfcl_executor():
    """Results (errors included) are the strings BFCL's own executor produces."""
    mtu = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")
    calls = ["ls()", "cd('docs')", "pwd()", "cd(folder='nope')", "cat(file_name='notes.txt')", "mkdir(dir_name='d')",
             "logarithm(value=100, base=10, precision=5)", "square_root(number=2, precision=5)", "add(a=1)",
             "post_tweet(content='hi')", "post_tweet(content='x', bogus=1)", "post_tweet()", "mention(99, ['@a'])",
             "get_tweet(tweet_id=0)", "divide(a=1, b=0)", "nonexistent_function(x=1)", "echo(content='hé', file_name=None)"]
    ours = make_env().run(calls)
    theirs, _ = mtu.execute_multi_turn_func_call(calls, CONFIG, CLASSES, "rodsexec_probe", "multi_turn_base_0")
    for k in [k for k in vars(mtu) if k.startswith("rodsexec_probe_")]:
        delattr(mtu, k)
    assert ours == theirs


def test_exceptions_become_error_strings():
    env = Environment(["TravelAPI"], {})
    result = env.execute("compute_exchange_rate(base_currency='XXX', target_currency='YYY', value=1.0)")
    assert result.startswith(ERROR_PREFIX) and result != ERROR_PREFIX
    assert env.execute("get_flight_cost(travel_from='AAA', travel_to='BBB', travel_date='2024-01-01', "
                       "travel_class='economy')").startswith(ERROR_PREFIX)


def test_allowed_restricts_to_offered_tools():
    env = make_env()
    before = full_state(env)
    result = env.execute("mkdir(dir_name='new')", allowed={"ls", "pwd"})
    assert result.startswith(ERROR_PREFIX) and "mkdir" in result
    assert full_state(env) == before
    assert env.execute("ls()", allowed={"ls", "pwd"}) == '{"current_directory_content": ["notes.txt", "docs"]}'
    assert env.run(["pwd()", "rm(file_name='notes.txt')"], allowed={"pwd"})[1].startswith(ERROR_PREFIX)
    assert full_state(env) == before


# ------------------------------------------------------------------ BFCL aliasing bugs are contained
def test_a_default_list_bfcls_own_code_filled_never_reaches_an_episode():
    import inspect

    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api import TwitterAPI

    # BFCL's checker, run in the same process (rods eval, the equivalence tests), appends to the class's shared list
    shared = inspect.signature(TwitterAPI.post_tweet).parameters["mentions"].default
    shared.append("@leftover")
    try:
        assert json.loads(make_env().execute("post_tweet(content='a')"))["mentions"] == []
    finally:
        shared.remove("@leftover")


def test_twitter_default_lists_are_not_shared():
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api import TwitterAPI

    one, two = make_env(), make_env()
    one.execute("post_tweet(content='a')")
    one.execute("post_tweet(content='b')")
    assert one.execute("mention(tweet_id=0, mentioned_usernames=['@x'])") == '{"mention_status": "Users mentioned successfully"}'
    tweets = one.instances["TwitterAPI"].tweets
    assert tweets[0]["mentions"] == ["@x"] and tweets[1]["mentions"] == []  # not shared within an env
    assert json.loads(two.execute("post_tweet(content='c')"))["mentions"] == []  # nor across envs
    assert all(d == [] for d in TwitterAPI.post_tweet.__defaults__ if isinstance(d, list))  # nor in the class
    # explicit arguments are still used as given
    assert json.loads(two.execute("post_tweet('d', ['#t'], ['@y'])"))["mentions"] == ["@y"]


def test_long_context_travel_dicts_are_not_shared():
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.long_context import (
        BOOKING_RECORD_EXTENSION,
        CREDIT_CARD_EXTENSION,
    )

    snapshot = copy.deepcopy((CREDIT_CARD_EXTENSION, BOOKING_RECORD_EXTENSION))
    one, two = (Environment(["TravelAPI"], {}, long_context=True) for _ in range(2))
    card, booking = next(iter(CREDIT_CARD_EXTENSION)), next(iter(BOOKING_RECORD_EXTENSION))
    a, b = one.instances["TravelAPI"], two.instances["TravelAPI"]
    assert a.credit_card_list[card] == b.credit_card_list[card] == CREDIT_CARD_EXTENSION[card]
    assert a.credit_card_list[card] is not b.credit_card_list[card]
    assert a.credit_card_list[card] is not CREDIT_CARD_EXTENSION[card]
    assert a.booking_record[booking] is not b.booking_record[booking]

    login = json.loads(one.execute("authenticate_travel(client_id='c', client_secret='s', refresh_token='r', "
                                   "grant_type='read_write', user_first_name='A', user_last_name='B')"))
    charged = one.execute(f"purchase_insurance(access_token={login['access_token']!r}, insurance_type='x', "
                          f"booking_id={booking!r}, insurance_cost=10.0, card_id={card!r})")
    assert '"insurance_status": true' in charged
    assert a.credit_card_list[card]["balance"] == snapshot[0][card]["balance"] - 10.0
    assert b.credit_card_list[card] == snapshot[0][card]
    assert (CREDIT_CARD_EXTENSION, BOOKING_RECORD_EXTENSION) == snapshot
    assert Environment(["TravelAPI"], {}, long_context=True).instances["TravelAPI"].credit_card_list[card] == snapshot[0][card]


def test_fresh_environments_are_independent():
    one, two = make_env(), make_env()
    one.execute("rm(file_name='notes.txt')")
    one.execute("post_tweet(content='x')")
    assert two.execute("cat(file_name='notes.txt')") == '{"file_content": "alpha\\nbeta"}'
    assert two.instances["TwitterAPI"].tweets == {}
    assert CONFIG["GorillaFileSystem"]["root"]["workspace"]["contents"]["notes.txt"]["content"] == "alpha\nbeta"


def test_state_and_state_diff():
    one, two = make_env(), make_env()
    assert one.state() == two.state() and one.state_diff(two) == {}
    assert set(one.state()) == set(CLASSES) and one.state()["MathAPI"] == {}
    assert all(not k.startswith("_") for attrs in one.state().values() for k in attrs)
    one.execute("cd(folder='docs')")  # the working directory is private: not state
    assert one.state_diff(two) == {}
    one.execute("post_tweet(content='x')")
    assert one.state_diff(two) == {"TwitterAPI": ["tweets", "tweet_counter"]}
    assert one.owner("post_tweet") == "TwitterAPI" and one.owner("open") is None


def test_names_are_unique_across_classes():
    """BFCL maps method names to instances flat; a name in two classes would be ambiguous."""
    from envs.bfcl_data import CLASS_MODULES
    from envs.executor import public_methods

    names = list(itertools.chain.from_iterable(public_methods(c) for c in CLASS_MODULES))
    assert len(names) == len(set(names)) == 128
