"""Fingerprint tests: the family and key of real outputs, hard negatives and the spec's reference vectors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vlk_memact.fingerprint import fingerprint

ROOT = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------- real outputs

TRACEBACK = """Traceback (most recent call last):
  File "{root}/src/models.py", line {line}, in <module>
    load({{}})
  File "{root}/src/models.py", line {inner}, in load
    return cfg['{key}']
           ~~~^^^^^^^^
KeyError: '{key}'
"""

REAL = [
    # (output, kind, key): outputs produced by the real tools (see tests/corpus/generate.py)
    (
        TRACEBACK.format(root="/tmp/repo-zf9j_88e", line=4, inner=2, key="host"),
        "python",
        "python:KeyError: 'host'@load",
    ),
    (
        'error[E0308]: mismatched types\n --> src/main.rs:2:18\n  |\n2 |     let x: i32 = "v0";\n'
        "  |            ---   ^^^^ expected `i32`, found `&str`\n  |            |\n  |            expected due to this\n\n"
        "error: aborting due to 1 previous error\n",
        "rust",
        "rust:error[E0308]: mismatched types (expected `i32`, found `&str`)",
    ),
    (
        "running 1 test\ntest tests::adds ... FAILED\n\nfailures:\n\n---- tests::adds stdout ----\n\n"
        "thread 'tests::adds' (3680) panicked at src/main.rs:7:9:\nassertion `left == right` failed\n  left: 3\n right: 2\n",
        "rust",
        "rust:panic[tests::adds]: assertion `left == right` failed@main.rs",
    ),
    (
        "thread 'main' panicked at 'index out of bounds: the len is 3 but the index is 5', src/main.rs:10:5",
        "rust",
        "rust:panic: index out of bounds: the len is <*> but the index is <*>@main.rs",
    ),
    (
        "panic: runtime error: index out of range [5] with length 1\n\ngoroutine 1 [running]:\nmain.get(...)\n"
        "\t/tmp/repo-6xkqrfi_/main.go:4\nmain.main()\n\t/tmp/repo-6xkqrfi_/main.go:8 +0x1d\nexit status 2\n",
        "go",
        "go:panic: runtime error: index out of range [<*>] with length <*>@main.get",
    ),
    (
        "--- FAIL: TestAdd (0.00s)\n    calc_test.go:7: Add() = 3; want 2\nFAIL\nFAIL\texample.com/m\t0.002s\nFAIL\n",
        "go",
        "go:--- FAIL: TestAdd: Add() = <*>; want <*>",
    ),
    (
        'Exception in thread "main" java.lang.NullPointerException: Cannot invoke "String.length()" because '
        '"<parameter1>" is null\n\tat Main.len(Main.java:2)\n\tat Main.main(Main.java:3)\n',
        "java",
        'java:java.lang.NullPointerException: Cannot invoke "String.length()" because "<parameter1>" is null@Main.len',
    ),
    (
        "There was 1 failure:\n1) testAdd(CalcTest)\njava.lang.AssertionError: expected:<3> but was:<2>\n"
        "\tat org.junit.Assert.fail(Assert.java:89)\n\tat CalcTest.testAdd(CalcTest.java:4)\n",
        "java",
        "java:java.lang.AssertionError: expected:<<*>> but was:<<*>>@CalcTest.testAdd",
    ),
    (
        "src/index.ts(2,3): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.\n",
        "diagnostic",
        "diagnostic:TS2345 Argument of type 'string' is not assignable to parameter of type 'number'.",
    ),
    (
        "/tmp/repo-vl2brpq7/lib/app.js:2\n  return items.map((x) => x + 0);\n               ^\n\n"
        "TypeError: Cannot read properties of undefined (reading 'map')\n"
        "    at render (/tmp/repo-vl2brpq7/lib/app.js:2:16)\n    at Object.<anonymous> (/tmp/repo-vl2brpq7/lib/app.js:4:1)\n"
        "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n\nNode.js v20.20.2\n",
        "javascript",
        "javascript:TypeError: Cannot read properties of undefined (reading 'map')@render",
    ),
    (
        "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n1 !== 2\n\n"
        "    at check (/tmp/demo-xhtsa5m7/lib/app.js:3:10)\n",
        "javascript",
        "javascript:AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:@check",
    ),
    (
        "FAIL ./sum.test.js\n  ✕ adds numbers (3 ms)\n\n  ● adds numbers\n\n    expect(received).toBe(expected) // Object.is equality\n\n"
        "    Expected: 2\n    Received: 1\n",
        "test",
        "test:jest ● adds numbers: expect(received).toBe(expected) <*> Object.is equality",
    ),
    (
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_calc.py::test_add - assert (1 + 1) == 10\n1 failed in 1.30s\n",
        "test",
        "test:pytest FAILED test_calc.py::test_add - assert (<*>) == <*>",
    ),
    (
        "src/prog.c: In function ‘main’:\nsrc/prog.c:3:10: error: ‘counter’ undeclared (first use in this function)\n",
        "diagnostic",
        "diagnostic:‘counter’ undeclared (first use in this function)",
    ),
    (
        "step 0\n/bin/bash: line 1: nosuchcmd_alpha: command not found\n",
        "shell",
        "shell:command not found: nosuchcmd_alpha",
    ),
    ("/bin/bash: line 1:  7383 Segmentation fault      ./prog\n", "shell", "shell:Segmentation fault"),
    (
        "Looking in links: dist\nERROR: Could not find a version that satisfies the requirement nosuch-pkg-alpha==0.0 "
        "(from versions: none)\nERROR: No matching distribution found for nosuch-pkg-alpha==0.0\n",
        "pip",
        "pip:No matching distribution found for nosuch-pkg-alpha==<*>",
    ),
    (
        'npm error Missing script: "build"\nnpm error\nnpm error To see a list of scripts, run:\n',
        "npm",
        "npm:Missing script: \"build\"",
    ),
    (
        'ERROR:  relation "missing_orders" does not exist\nLINE 1: SELECT * FROM missing_orders WHERE id = 5;\n',
        "database",
        'database:ERROR: relation "missing_orders" does not exist',
    ),
    (
        "Error: in prepare, no such table: accounts\n",
        "database",
        "database:in prepare, no such table: accounts",
    ),
    (
        "curl: (7) Failed to connect to 127.0.0.1 port 54359 after 0 ms: Couldn't connect to server\n",
        "network",
        "network:curl: (7) Failed to connect to <*> port <*> after <*> ms: Couldn't connect to server",
    ),
    (
        "HTTP/1.0 503 Service Unavailable\nServer: BaseHTTP/0.6 Python/3.11.7\n",
        "http",
        "http:503 Service Unavailable",
    ),
    ("curl: (22) The requested URL returned error: 404\n", "http", "http:404 Not Found"),
    (
        "Your proposed edit has introduced new syntax error(s).\n\nERRORS:\n- F821 undefined name 'clique'\n\n",
        "lint",
        "lint:F821 undefined name 'clique'",
    ),
    (
        "2026-11-30 15:20:41,112 ERROR [5512] worker: job 4f9c2a1e-0b7d-4c35-9a7e-1d2b3c4d5e6f failed after 3 retries",
        "fallback",
        "fallback:<*> ERROR [<*>] worker: job <*> failed after <*> retries",
    ),
    (
        " FAIL  sum.test.js > adds numbers\nAssertionError: expected 2 to be 3 // Object.is equality\n\n- Expected\n+ Received\n",
        "test",
        "test:vitest sum.test.js > adds numbers: AssertionError: expected <*> to be <*> Object.is equality",
    ),
    # testify's documented layout (not generated: the Go module proxy is unreachable here)
    (
        "--- FAIL: TestAdd (0.00s)\n    calc_test.go:12: \n        \tError Trace:\t/tmp/m/calc_test.go:12\n"
        "        \tError:      \tNot equal: \n        \t            \texpected: 3\n        \t            \tactual  : 4\n"
        "        \tTest:       \tTestAdd\nFAIL\nFAIL\texample.com/m\t0.002s\n",
        "go",
        "go:--- FAIL: TestAdd: Not equal:",
    ),
    ("   \n\t ", "empty", "empty:"),
]


@pytest.mark.parametrize(("text", "kind", "key"), REAL, ids=[k for _, _, k in REAL])
def test_real_output_family_and_key(text: str, kind: str, key: str) -> None:
    fp = fingerprint(text)
    assert (fp.kind, fp.key) == (kind, key)
    assert fp.keys[0] == fp.key


def test_colour_codes_and_carriage_returns_are_ignored() -> None:
    plain = "FAILED tests/test_calc.py::test_add - assert (1 + 1) == 10\n"
    coloured = "\x1b[31mFAILED\x1b[0m tests/test_calc.py::\x1b[1mtest_add\x1b[0m - assert (1 + 1) == 10\r\n"
    assert fingerprint(coloured).key == fingerprint(plain).key
    progress = "Downloading 10%\rDownloading 55%\rERROR: No matching distribution found for nosuchpkg\n"
    assert fingerprint(progress).key == "pip:No matching distribution found for nosuchpkg"


# Hard negatives: same shape, different error -> different keys.
HARD_NEGATIVES = [
    ("KeyError: 'a'\n", "IndexError: list index out of range\n"),
    (
        "a.ts(1,1): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
        "a.ts(1,1): error TS2322: Type 'string' is not assignable to type 'number'.",
    ),
    (
        "error[E0425]: cannot find value `foo` in this scope",
        "error[E0425]: cannot find value `bar` in this scope",
    ),
    ("error[E0308]: mismatched types", "error[E0599]: mismatched types"),
    ("HTTP/1.1 404 Not Found", "HTTP/1.1 503 Service Unavailable"),
    (
        "TypeError: Cannot read properties of undefined (reading 'map')",
        "TypeError: Cannot read properties of undefined (reading 'id')",
    ),
    ("bash: foo: command not found", "bash: bar: command not found"),
    (
        "curl: (7) Failed to connect to 127.0.0.1 port 1 after 0 ms",
        "curl: (6) Failed to connect to 127.0.0.1 port 1 after 0 ms",
    ),
    ("SyntaxError: Unexpected token ';'", "SyntaxError: Unexpected token ')'"),
    ("job 12 failed: upstream timeout", "job 12 cancelled: upstream timeout"),
]


@pytest.mark.parametrize(
    "text",
    ["error at line 404 of the file", "took 503 ms", "connecting to port 443 failed", "sha256 mismatch"],
)
def test_three_digit_numbers_are_not_http_statuses(text: str) -> None:
    assert fingerprint(text).kind != "http"


@pytest.mark.parametrize(("a", "b"), HARD_NEGATIVES)
def test_hard_negatives_do_not_share_a_key(a: str, b: str) -> None:
    assert not set(fingerprint(a).keys) & set(fingerprint(b).keys)


# --------------------------------------------------------------------------- spec reference vectors

# (input, prototype key from spec §6.1, our key). Every prototype key is kept by the baseline in
# bench/prototype_fingerprint.py; ours deliberately differs where the prototype has a defect.
REFERENCE = [
    (
        "error[E0277]: cannot add `&str` to `String`\n --> src/h.rs:42:17",
        "error[E0277]",
        "rust:error[E0277]: cannot add `&str` to `String`",
    ),
    ("src/index.ts(10,5): error TS2345: Argument…", "TS2345", "diagnostic:TS2345 Argument…"),
    (
        "TypeError: Cannot read properties of undefined",
        "TypeError: Cannot",
        "exception:TypeError: Cannot read properties of undefined",
    ),
    # defect: the generic "Error:" shadowed Python classes
    (
        "ValueError: invalid literal for int() with base 10: 'abc'",
        "Error: invalid",
        "python:ValueError: invalid literal for int() with base <*>",
    ),
    ("Traceback …\nKeyError: 'foo'", "Error: 'foo'", "python:KeyError: 'foo'"),
    ("StopIteration: done now", "StopIteration: done now", "python:StopIteration: done now"),
    (
        "KeyboardInterrupt: stopped by user",
        "KeyboardInterrupt: stopped by user",
        "python:KeyboardInterrupt: stopped by user",
    ),
    # deliberate: Go panics keep their message (masked) instead of a fixed bucket
    (
        "panic: runtime error: invalid memory address or nil pointer dereference",
        "panic: nil pointer dereference",
        "go:panic: runtime error: invalid memory address or nil pointer dereference",
    ),
    (
        "panic: runtime error: index out of range [5] with length 3",
        "panic: index out of range",
        "go:panic: runtime error: index out of range [<*>] with length <*>",
    ),
    (
        "fatal error: concurrent map writes",
        "fatal error: concurrent map writes",
        "go:fatal error: concurrent map writes",
    ),
    (
        "thread 'main' panicked at 'index out of bounds: the len is 3 but the index is 5', src/main.rs:10:5",
        "panic: index out of bounds: the len is 3 but the index is 5",
        "rust:panic: index out of bounds: the len is <*> but the index is <*>@main.rs",
    ),
    # defect: every modern Rust panic collapsed into "panic: (unknown)"
    (
        "thread 'main' panicked at src/main.rs:10:5:\nindex out of bounds",
        "panic: (unknown)",
        "rust:panic: index out of bounds@main.rs",
    ),
    # defect: the values were part of the key
    ("Expected 5 but got 4", "assert: expected 5 but got 4", "fallback:Expected <*> but got <*>"),
    (
        "AssertionError [ERR_ASSERTION]: 1 == 2",
        "assert: AssertionError [ERR_ASSERTION]: 1 == 2",
        "javascript:AssertionError [ERR_ASSERTION]: <*> == <*>",
    ),
    (
        "expect(received).toBe(expected)",
        "expect(received).toBe(expected)",
        "fallback:expect(received).toBe(expected)",
    ),
    (
        "POST /api/v2/agents/execute → 503 Service Unavailable",
        "HTTP 503 Service Unavailable",
        "http:503 Service Unavailable",
    ),
    ("HTTP/1.1 502 Bad Gateway", "HTTP 502 Bad Gateway", "http:502 Bad Gateway"),
    ("HTTP 429 Too Many Requests at 12:00:01", "HTTP 429 Too Many Requests", "http:429 Too Many Requests"),
    ("Error 503: timeout at 14:32:01", "HTTP 503 timeout at [TIME]", "http:503 Service Unavailable"),
    (
        "2024-01-15T14:32:01 Error: connection timeout",
        "Error: connection",
        "fallback:<*> Error: connection timeout",
    ),
    (
        "2024-01-15T14:32:01.123+02:00 worker crashed with code 7 at 2024-01-15 14:32:05",
        "[TIMESTAMP] worker crashed with code 7 at [TIMESTAMP]",
        "fallback:<*> worker crashed with code <*> at <*>",
    ),
    (
        "FATAL: database connection lost",
        "FATAL: database connection lost",
        "fallback:FATAL: database connection lost",
    ),
    (
        "Segmentation fault (core dumped)",
        "Segmentation fault (core dumped)",
        "shell:Segmentation fault (core dumped)",
    ),
    # defect: any 100-599 number was an HTTP status
    ("Retrying in 120 seconds", "HTTP 120 seconds", "fallback:Retrying in <*>"),
    ("checksum sha256 mismatch", "HTTP 256 mismatch", "fallback:checksum sha256 mismatch"),
    # defect: case mapping shifted offsets (the reference panicked on this input)
    ("İİİİİİ STOPITERATION: x", "İİİİİİ STOPITERATION: x", "fallback:İİİİİİ STOPITERATION: x"),
]


@pytest.mark.parametrize(("text", "prototype", "ours"), REFERENCE, ids=[p for _, p, _ in REFERENCE])
def test_reference_vectors(text: str, prototype: str, ours: str) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from prototype_fingerprint import fingerprint_log

    assert fingerprint_log(text) == prototype
    assert fingerprint(text).key == ours
