"""Arguments that would hang the process are refused before the method runs."""

import pytest

from envs.executor import Environment


@pytest.mark.parametrize(
    "call",
    ["power(base=7, exponent=1000000000000000)", "power(7, 1000000000000000)",
     "square_root(number=2, precision=100000000)", "logarithm(value=2, base=10, precision=99999999)"],
)
def test_runaway_math_is_refused_quickly(call):
    result = Environment(["MathAPI"], {}).execute(call)
    assert result.startswith("Error during execution:") and "exceeds the executor's limit" in result


def test_ordinary_math_still_runs():
    assert Environment(["MathAPI"], {}).execute("power(base=2, exponent=10)") == '{"result": 1024}'
