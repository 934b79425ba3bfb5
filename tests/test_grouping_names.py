"""Issue 38: a name makes an error, a number or a path does not; a tool's id is an anchor; locations are noise.

The development corpus of bench/diagnostics.py (real templates of compilers and linters, each filled with two
sets of names and met twice with other noise) must group with precision 1 in both views.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vlk_memact.fingerprint import fingerprint, group

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from diagnostics import VIEWS, records, split  # noqa: E402
from diagnostic_templates import TOOLS  # noqa: E402


def _pairwise(truth: list[str], labels: list[int]) -> tuple[float, float]:
    together = same = both = 0
    for i in range(len(truth)):
        for j in range(i + 1, len(truth)):
            together += labels[i] == labels[j]
            same += truth[i] == truth[j]
            both += labels[i] == labels[j] and truth[i] == truth[j]
    return (both / together if together else 1.0), (both / same if same else 1.0)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("tool", sorted(t for t in TOOLS if split(t) == "development"))
def test_development_tools_never_merge_two_errors(tool: str, view: str) -> None:
    texts, truth = records(tool, view)
    precision, recall = _pairwise(truth, group(texts))
    assert precision == 1.0
    assert recall >= 0.95


def test_names_of_every_shape_tell_errors_apart() -> None:
    names = ["count", "x1", "x2", "user_id", "userId", "UserService", "os.path", "int32", "Vec<u8>",
             "const char *", "dict[str, Any]", "-std=c++17", "--no-color", "@types/node", "sha256"]
    for template in ("use of undeclared identifier '{}'", 'Name "{}" is not defined  [name-defined]',
                     "src/a.c:3:5: error: unknown type name '{}'", "Module `{}` has no attribute `run`"):
        texts = [template.format(n) for n in names]
        assert group(texts + texts) == list(range(len(names))) * 2, template


def test_a_name_is_never_a_learned_parameter() -> None:
    """However many of them the batch shows, quoted, snake_case, camelCase, dotted and digit names stay apart."""
    names = ["user_id", "fooBar", "os.path", "x1", "Config2", "retry_count", "app.models"]
    lines = [f"deploy check failed: variable '{n}' is referenced before assignment in the release script" for n in names]
    assert len(set(group(lines))) == len(names)
    bare = [f"{n} is referenced but not assigned in the release script today" for n in names]
    assert len(set(group(bare))) == len(names)


def test_values_never_split_an_error() -> None:
    same = [
        ("request 1234 failed after 3 retries in 0.52s", "request 98765 failed after 7 retries in 12.1s"),
        ("object at 0x7ffd5e8c1a20 is gone", "object at 0x55d0c3a9e010 is gone"),
        ("commit a3f9c2e1b7 not found", "commit 0c44d9e2fa not found"),
        ("open /home/ci/work/app/config.yaml: no such file", "open ./config.yaml: no such file"),
        ("job user_48213 stopped", "job user_99120 stopped"),
    ]
    for a, b in same:
        assert fingerprint(a).key == fingerprint(b).key, (a, b)


@pytest.mark.parametrize(
    "printed",
    [
        "{path}:{line}:{col}: error: use of undeclared identifier 'count'",
        "{path}({line},{col}): error TS2304: Cannot find name 'count'.",
        'Traceback (most recent call last):\n  File "{path}", line {line}, in main\nNameError: name \'count\' is not defined',
        "ReferenceError: count is not defined\n    at main ({path}:{line}:{col})",
        "[ERROR] {path}:[{line},{col}] cannot find symbol",
    ],
)
def test_every_location_format_is_noise(printed: str) -> None:
    places = [("src/app/main.py", 3, 5), ("/home/runner/work/p/p/lib/util.py", 120, 17),
              ("C:\\Users\\dev\\proj\\main.py", 9, 1), ("../other/checkout/main.py", 44, 2)]
    texts = [printed.format(path=p, line=n, col=c) for p, n, c in places]
    assert len({fingerprint(t).key for t in texts}) == 1


def test_a_tool_id_is_an_anchor() -> None:
    a = "src/a.py:3:1: F401 `os` imported but unused"
    assert group([a, a.replace("F401", "F811")]) == [0, 1]  # two ids: two errors
    assert group([a, a.replace("`os`", "`sys`")]) == [0, 1]  # one id, two names: two errors
    assert group([a, a.replace("src/a.py:3:1", "C:\\w\\b.py:90:7")]) == [0, 0]  # one id, one name: one error


def test_warnings_on_the_way_to_another_error_do_not_make_the_key() -> None:
    warning = "/usr/lib/python3/site.py:12: DeprecationWarning: pkg_resources is deprecated\n"
    first = warning + "The command `pytest tests/a.py` timed out and has been killed."
    second = warning + "The command `python setup.py build` timed out and has been killed."
    assert fingerprint(first).kind != "diagnostic"
    assert group([first, second]) == [0, 1]
