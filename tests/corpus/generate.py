"""Generate the labelled fingerprint corpus by running real toolchains on small failing programs.

Every case is one error ("group"). It is produced in several variants that must group
together: each variant runs in a fresh, differently named temp directory, shifts line numbers
and changes values, ids and timestamps. Different cases must not group, and some are built as
hard negatives (same shape, different error: KeyError vs IndexError, TS2345 vs TS2322, 404 vs
503). Labels come from construction, never from the fingerprint under test.

    .venv/bin/python tests/corpus/generate.py            # writes tests/data/fingerprint_corpus.jsonl

Needs: python3, rustc, node/npm (typescript@5, jest@29 and vitest@2 go into a cache dir),
gcc/g++/clang, javac/java + /usr/share/java/junit4.jar, go, sqlite3, psql (PostgreSQL at
127.0.0.1:5432, db ``test``, user ``postgres``), curl. A case whose tool is missing is skipped
with a note on stderr. Takes a few minutes.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "data" / "fingerprint_corpus.jsonl"
NODE_CACHE = Path(os.environ.get("VLK_CORPUS_NODE", Path(tempfile.gettempdir()) / "vlk-corpus-node"))
VARIANTS = 3
MAX_TEXT = 12_000
PROJECT_NAMES = ("app", "proj", "work", "repo", "task", "demo")


@dataclass(frozen=True)
class Case:
    group: str
    ecosystem: str
    make: Callable[[Path, int], str]  # (fresh work dir, variant index) -> combined output


CASES: list[Case] = []
# Cases whose variants name a different key, constraint, script or config entry: each variant is its own
# error (a name tells errors apart, issue 38), so each gets its own group.
NAMED_PER_VARIANT = frozenset(
    {"py-keyerror-load", "py-keyerror-save", "pytest-keyerror", "js-custom-error", "sh-permission", "pg-unique"}
)


def case(group: str, ecosystem: str) -> Callable[[Callable[[Path, int], str]], Callable[[Path, int], str]]:
    def register(fn: Callable[[Path, int], str]) -> Callable[[Path, int], str]:
        CASES.append(Case(group, ecosystem, fn))
        return fn

    return register


def run(cmd: list[str] | str, cwd: Path, timeout: float = 60, env: dict[str, str] | None = None) -> str:
    """Run a command as an agent would and return stdout+stderr interleaved."""
    proc = subprocess.run(  # failing is the point: no check
        cmd,
        cwd=cwd,
        shell=isinstance(cmd, str),
        executable="/bin/bash" if isinstance(cmd, str) else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )
    return proc.stdout.decode("utf-8", "replace")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def pad(v: int, comment: str) -> str:
    """Comment lines that shift every line number of the variant."""
    return "".join(f"{comment} variant {v} padding {i}\n" for i in range(v * 3))


def val(v: int, *choices: object) -> object:
    return choices[v % len(choices)]


# ----------------------------------------------------------------------------- Python

PY = shutil.which("python3") or sys.executable  # the machine's python3, as an agent would run it


def py_case(group: str, body: Callable[[int], str], filename: str = "main.py") -> None:
    def make(d: Path, v: int) -> str:
        write(d / "src" / filename, pad(v, "#") + body(v))
        return run([PY, f"src/{filename}"], d)

    case(group, "python")(make)


py_case(
    "py-keyerror-load",
    lambda v: f"def load(cfg):\n    return cfg[{val(v, 'host', 'port', 'user_id')!r}]\n\nload({{}})\n",
    "models.py",
)
py_case(
    "py-keyerror-save",
    lambda v: f"def save(cfg):\n    return cfg[{val(v, 'host', 'port', 'user_id')!r}]\n\nsave({{}})\n",
    "models.py",
)
py_case(
    "py-indexerror-load",
    lambda v: f"def load(items):\n    return items[{val(v, 3, 7, 12)}]\n\nload([1])\n",
    "models.py",
)
py_case(
    "py-attr-none-strip", lambda v: f"def clean(x):\n    return x.strip()\n\nclean(None)  # {v}\n", "text.py"
)
py_case(
    "py-attr-none-split", lambda v: f"def clean(x):\n    return x.split()\n\nclean(None)  # {v}\n", "text.py"
)
py_case(
    "py-value-int",
    lambda v: f"def parse(s):\n    return int(s)\n\nparse({val(v, 'abc', 'x1', '12a')!r})\n",
    "parse.py",
)
py_case(
    "py-value-float",
    lambda v: f"def parse(s):\n    return float(s)\n\nparse({val(v, 'abc', 'x1', '12a')!r})\n",
    "parse.py",
)
# Hard positive: the same innermost error reached through differently named callers.
py_case(
    "py-keyerror-deep",
    lambda v: (
        f"def lookup(cfg):\n    return cfg['token']\n\ndef caller_{v}():\n    return lookup({{}})\n\ncaller_{v}()\n"
    ),
    "auth.py",
)
py_case("py-zerodiv", lambda v: f"def ratio(a, b):\n    return a / b\n\nratio({v + 3}, 0)\n", "stats.py")
py_case("py-type-concat", lambda v: f"def label(n):\n    return 'item-' + n\n\nlabel({v + 10})\n", "fmt.py")
py_case(
    "py-type-args",
    lambda v: (
        f"def f(a):\n    return a\n\ndef call():\n    return f({', '.join(str(i) for i in range(v + 2))})\n\ncall()\n"
    ),
    "calls.py",
)
py_case("py-module-yaml", lambda v: "import nosuch_yaml_mod\n" + f"X = {v}\n")
py_case("py-module-toml", lambda v: "import nosuch_toml_mod\n" + f"X = {v}\n")
py_case("py-importerror-name", lambda v: "from os import nosuch_function_x\n" + f"X = {v}\n")
py_case("py-nameerror", lambda v: f"def run():\n    return undefined_helper({v})\n\nrun()\n", "jobs.py")
py_case(
    "py-filenotfound",
    lambda v: (
        f"def read():\n    return open('/tmp/vlk-missing-{uuid.uuid4().hex[:8]}/data-{v}.csv').read()\n\nread()\n"
    ),
    "io_utils.py",
)
py_case("py-syntax-invalid", lambda v: f"x = {v}\ndef f(:\n    pass\n")
py_case("py-syntax-unclosed", lambda v: f"x = {v}\nprint((x + 1)\n")
py_case("py-indentation", lambda v: f"def f():\n    x = {v}\n      y = 2\n")
py_case("py-recursion", lambda v: f"def walk(n):\n    return walk(n + {v + 1})\n\nwalk(0)\n", "tree.py")
py_case(
    "py-assert-msg",
    lambda v: f"def check(total):\n    assert total == 10, f'total mismatch: {{total}}'\n\ncheck({v + 3})\n",
    "checks.py",
)
py_case(
    "py-custom-error",
    lambda v: (
        "class NotFoundError(Exception):\n    pass\n\ndef find(uid):\n"
        f"    raise NotFoundError(f'user {{uid}} not found')\n\nfind({1000 + v * 37})\n"
    ),
    "users.py",
)
py_case(
    "py-json-decode",
    lambda v: f"import json\n\ndef load():\n    return json.loads({val(v, '', 'nope', 'xyz')!r})\n\nload()\n",
    "conf.py",
)
py_case(
    "py-unbound-local",
    lambda v: f"def total(xs):\n    for x in xs:\n        acc = x\n    return acc + {v}\n\ntotal([])\n",
    "agg.py",
)
py_case(
    "py-chained-runtime",
    lambda v: (
        "def get(cfg):\n    try:\n        return cfg['db']\n    except KeyError as exc:\n"
        f"        raise RuntimeError('database config missing (attempt {v})') from exc\n\nget({{}})\n"
    ),
    "config.py",
)
py_case(
    "py-sqlite-no-table",
    lambda v: (
        f"import sqlite3\n\ndef fetch():\n    db = sqlite3.connect(':memory:')\n    return db.execute('SELECT * FROM users WHERE id = {v + 5}').fetchall()\n\nfetch()\n"
    ),
    "repo.py",
)
py_case(
    "py-sqlite-unique",
    lambda v: (
        "import sqlite3\n\ndef insert():\n    db = sqlite3.connect(':memory:')\n    db.execute('CREATE TABLE users(id INTEGER PRIMARY KEY)')\n"
        f"    db.execute('INSERT INTO users VALUES ({v + 1})')\n    db.execute('INSERT INTO users VALUES ({v + 1})')\n\ninsert()\n"
    ),
    "repo.py",
)
py_case(
    "py-subprocess-failed",
    lambda v: (
        f"import subprocess\n\ndef build():\n    subprocess.run(['bash', '-c', 'exit {v + 1}'], check=True)\n\nbuild()\n"
    ),
    "build.py",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


py_case(
    "py-conn-refused",
    lambda v: (
        f"import socket\n\ndef connect():\n    socket.create_connection(('127.0.0.1', {free_port()}), timeout=2)\n\nconnect()\n"
    ),
    "client.py",
)


def pytest_case(group: str, test_file: str, body: Callable[[int], str]) -> None:
    def make(d: Path, v: int) -> str:
        write(d / "tests" / test_file, pad(v, "#") + body(v))
        return run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests"], d)

    case(group, "pytest")(make)


pytest_case("pytest-assert-add", "test_calc.py", lambda v: f"def test_add():\n    assert 1 + {v + 1} == 10\n")
pytest_case("pytest-assert-sub", "test_calc.py", lambda v: f"def test_sub():\n    assert 10 - {v + 1} == 0\n")
pytest_case(
    "pytest-keyerror",
    "test_cfg.py",
    lambda v: f"def test_lookup():\n    cfg = {{}}\n    assert cfg['key{v}']\n",
)
pytest_case(
    "pytest-collect-import",
    "test_imp.py",
    lambda v: f"import nosuch_pytest_dep\n\ndef test_x():\n    assert {v}\n",
)


# ----------------------------------------------------------------------------- Rust


def rustc_case(group: str, body: Callable[[int], str], run_binary: bool = False, test: bool = False) -> None:
    def make(d: Path, v: int) -> str:
        src = write(d / "src" / "main.rs", pad(v, "//") + body(v))
        flags = ["--test"] if test else []
        out = run(
            ["rustc", "--edition", "2021", *flags, "-o", str(d / "bin"), str(src.relative_to(d))], d, 120
        )
        if (run_binary or test) and (d / "bin").exists():
            out += run([str(d / "bin")], d, 60, env={"RUST_BACKTRACE": "0"})
        return out

    case(group, "rust")(make)


rustc_case("rust-E0308", lambda v: f'fn main() {{\n    let x: i32 = "v{v}";\n    println!("{{}}", x);\n}}\n')
rustc_case(
    "rust-E0425-foo", lambda v: f'fn main() {{\n    let y = {v};\n    println!("{{}}", foo + y);\n}}\n'
)
rustc_case(
    "rust-E0425-bar", lambda v: f'fn main() {{\n    let y = {v};\n    println!("{{}}", bar + y);\n}}\n'
)
# Hard positive: extra warnings before the same error.
rustc_case(
    "rust-E0308",
    lambda v: (
        "".join(f"fn unused_{i}() {{}}\n" for i in range(v + 1))
        + f'fn main() {{\n    let n: i32 = "x{v}";\n}}\n'
    ),
)
# Hard negative: same code and message, different mismatch.
rustc_case(
    "rust-E0308-string",
    lambda v: f'fn main() {{\n    let s: String = "v{v}";\n    println!("{{}}", s);\n}}\n',
)
rustc_case("rust-E0599", lambda v: f"struct S;\nfn main() {{\n    let s = S;\n    s.frobnicate({v});\n}}\n")
rustc_case(
    "rust-E0382",
    lambda v: (
        f'fn main() {{\n    let v = vec![{v}];\n    let w = v;\n    println!("{{:?}} {{:?}}", v, w);\n}}\n'
    ),
)
rustc_case("rust-E0277", lambda v: f'fn main() {{\n    let x = {v} + "a";\n}}\n')
rustc_case("rust-syntax", lambda v: f"fn main() {{\n    let x = {v}\n    let y = 2;\n}}\n")
rustc_case(
    "rust-panic-unwrap",
    lambda v: f'fn main() {{\n    let x: Option<u32> = None;\n    println!("{{}}", x.unwrap() + {v});\n}}\n',
    run_binary=True,
)
rustc_case(
    "rust-panic-index",
    lambda v: (
        f'fn main() {{\n    let v = vec![1; {v + 1}];\n    let i = {v + 5};\n    println!("{{}}", v[i]);\n}}\n'
    ),
    run_binary=True,
)
rustc_case(
    "rust-panic-custom",
    lambda v: f'fn main() {{\n    let n = {v * 7 + 3};\n    panic!("config entry {{}} missing", n);\n}}\n',
    run_binary=True,
)
rustc_case(
    "rust-test-add",
    lambda v: (
        f"pub fn add(a: i32, b: i32) -> i32 {{ a + b + 1 }}\n#[cfg(test)]\nmod tests {{\n    use super::*;\n"
        f"    #[test]\n    fn adds() {{\n        assert_eq!(add({v}, 2), {v + 2});\n    }}\n}}\nfn main() {{}}\n"
    ),
    test=True,
)
rustc_case(
    "rust-test-mul",
    lambda v: (
        f"pub fn mul(a: i32, b: i32) -> i32 {{ a * b + 1 }}\n#[cfg(test)]\nmod tests {{\n    use super::*;\n"
        f"    #[test]\n    fn multiplies() {{\n        assert_eq!(mul({v}, 2), {v * 2});\n    }}\n}}\nfn main() {{}}\n"
    ),
    test=True,
)
rustc_case(
    "rust-test-assert",
    lambda v: (
        f'#[cfg(test)]\nmod tests {{\n    #[test]\n    fn positive() {{\n        let x = -{v + 1};\n        assert!(x > 0, "x was {{}}", x);\n    }}\n}}\nfn main() {{}}\n'
    ),
    test=True,
)


# ----------------------------------------------------------------------------- Go


def go_case(group: str, body: Callable[[int], str], test: bool = False) -> None:
    def make(d: Path, v: int) -> str:
        write(d / "go.mod", "module example.com/m\n\ngo 1.19\n")
        name = "calc_test.go" if test else "main.go"
        write(d / name, "package main\n" + pad(v, "//") + body(v))
        if test:
            write(
                d / "calc.go",
                "package main\n\nfunc Add(a, b int) int { return a + b + 1 }\n\nfunc main() {}\n",
            )
        env = {
            "GOFLAGS": "-mod=mod",
            "GOPROXY": "off",
            "GOCACHE": str(Path(tempfile.gettempdir()) / "vlk-gocache"),
        }
        cmd = ["go", "test", "./..."] if test else ["go", "run", "."]
        return run(cmd, d, 120, env=env)

    case(group, "go")(make)


go_case("go-nil-map", lambda v: f'\nfunc main() {{\n\tvar m map[string]int\n\tm["k{v}"] = {v}\n}}\n')
go_case(
    "go-index",
    lambda v: (
        f"\nfunc get(xs []int) int {{\n\treturn xs[{v + 5}]\n}}\n\nfunc main() {{\n\tget(make([]int, {v + 1}))\n}}\n"
    ),
)
go_case(
    "go-slice-bounds",
    lambda v: (
        f"\nfunc get(xs []int, n int) []int {{\n\treturn xs[:n]\n}}\n\nfunc main() {{\n\tget(make([]int, {v + 1}), {v + 5})\n}}\n"
    ),
)
go_case(
    "go-nil-deref",
    lambda v: (
        f"\ntype T struct{{ n int }}\n\nfunc use(t *T) int {{\n\treturn t.n + {v}\n}}\n\nfunc main() {{\n\tuse(nil)\n}}\n"
    ),
)
go_case("go-deadlock", lambda v: f"\nfunc main() {{\n\tch := make(chan int)\n\tch <- {v}\n}}\n")
go_case(
    "go-custom-panic",
    lambda v: f'\nimport "fmt"\n\nfunc main() {{\n\tpanic(fmt.Sprintf("bad state %d", {v + 40}))\n}}\n',
)
go_case("go-undefined", lambda v: f"\nfunc main() {{\n\tx := {v}\n\t_ = x + undefinedThing\n}}\n")
go_case("go-unused", lambda v: f"\nfunc main() {{\n\tunusedVar := {v}\n}}\n")
go_case(
    "go-test-add",
    lambda v: (
        f'\nimport "testing"\n\nfunc TestAdd(t *testing.T) {{\n\tif got := Add({v}, 2); got != {v + 2} {{\n'
        f'\t\tt.Errorf("Add() = %d; want %d", got, {v + 2})\n\t}}\n}}\n'
    ),
    test=True,
)
go_case(
    "go-test-sum",
    lambda v: (
        f'\nimport "testing"\n\nfunc TestSum(t *testing.T) {{\n\tif got := Add({v}, {v}); got != {2 * v} {{\n'
        f'\t\tt.Fatalf("sum mismatch: got %d", got)\n\t}}\n}}\n'
    ),
    test=True,
)


# ----------------------------------------------------------------------------- Java

JUNIT = "/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar"


def java_case(group: str, cls: str, body: Callable[[int], str], junit: bool = False) -> None:
    def make(d: Path, v: int) -> str:
        src = write(d / f"{cls}.java", pad(v, "//") + body(v))
        cp = ["-cp", f".:{JUNIT}"] if junit else []
        out = run(["javac", *cp, src.name], d, 120)
        if (d / f"{cls}.class").exists():
            main = ["org.junit.runner.JUnitCore", cls] if junit else [cls]
            out += run(["java", *cp, *main], d, 60)
        return out

    case(group, "java")(make)


java_case(
    "java-npe",
    "Main",
    lambda v: (
        f"public class Main {{\n  static int len(String s) {{ return s.length() + {v}; }}\n  public static void main(String[] a) {{ len(null); }}\n}}\n"
    ),
)
java_case(
    "java-aioobe",
    "Main",
    lambda v: (
        f"public class Main {{\n  static int at(int[] xs) {{ return xs[{v + 5}]; }}\n  public static void main(String[] a) {{ at(new int[{v + 1}]); }}\n}}\n"
    ),
)
java_case(
    "java-arith",
    "Main",
    lambda v: (
        f"public class Main {{\n  static int div(int x) {{ return {v + 3} / x; }}\n  public static void main(String[] a) {{ div(0); }}\n}}\n"
    ),
)
java_case(
    "java-numfmt",
    "Main",
    lambda v: (
        f'public class Main {{\n  static int parse(String s) {{ return Integer.parseInt(s); }}\n  public static void main(String[] a) {{ parse("{val(v, "abc", "x1", "12z")}"); }}\n}}\n'
    ),
)
java_case(
    "java-caused-by",
    "Main",
    lambda v: (
        'public class Main {\n  static void load() throws Exception { throw new java.io.IOException("disk read failed at block '
        f'{v * 91}"); }}\n  public static void main(String[] a) {{\n    try {{ load(); }} catch (Exception e) {{ throw new RuntimeException("startup failed", e); }}\n  }}\n}}\n'
    ),
)
java_case(
    "javac-symbol",
    "Main",
    lambda v: (
        f"public class Main {{\n  public static void main(String[] a) {{ int y = {v}; System.out.println(missingVar + y); }}\n}}\n"
    ),
)
java_case(
    "javac-types",
    "Main",
    lambda v: f'public class Main {{\n  public static void main(String[] a) {{ int y = "s{v}"; }}\n}}\n',
)
java_case(
    "junit-equals",
    "CalcTest",
    lambda v: (
        f"import org.junit.Test;\nimport static org.junit.Assert.*;\npublic class CalcTest {{\n  @Test public void testAdd() {{ assertEquals({v + 3}, {v} + 2); }}\n}}\n"
    ),
    junit=True,
)
java_case(
    "junit-true",
    "FlagTest",
    lambda v: (
        f'import org.junit.Test;\nimport static org.junit.Assert.*;\npublic class FlagTest {{\n  @Test public void testFlag() {{ assertTrue("flag {v} should be set", {v} < 0); }}\n}}\n'
    ),
    junit=True,
)


# ----------------------------------------------------------------------------- TypeScript, Node, Jest


def node_tool(name: str) -> str:
    """Install typescript@5, jest@29 and vitest@2 once into a cache dir; return the tool's path."""
    tool = NODE_CACHE / "node_modules" / ".bin" / name
    if not tool.exists():
        NODE_CACHE.mkdir(parents=True, exist_ok=True)
        run(
            "npm init -y >/dev/null && npm install --no-audit --no-fund typescript@5 jest@29 vitest@2",
            NODE_CACHE,
            600,
        )
    return str(tool)


def tsc_case(group: str, body: Callable[[int], str]) -> None:
    def make(d: Path, v: int) -> str:
        write(d / "src" / "index.ts", pad(v, "//") + body(v))
        return run([node_tool("tsc"), "--noEmit", "--strict", "--pretty", "false", "src/index.ts"], d, 120)

    case(group, "typescript")(make)


tsc_case("ts-2345", lambda v: f"function f(n: number) {{ return n; }}\nf('s{v}');\n")
tsc_case(
    "ts-2345-bool",
    lambda v: f"function f(n: number) {{ return n; }}\nf({val(v, 'true', 'false', 'true')});\n",
)
tsc_case("ts-2322", lambda v: f"const n: number = 's{v}';\nexport {{ n }};\n")
tsc_case(
    "ts-2339", lambda v: f"interface Bar {{ a: number }}\nconst b: Bar = {{ a: {v} }};\nconsole.log(b.foo);\n"
)
tsc_case("ts-2304", lambda v: f"const x = {v};\nconsole.log(undefinedThing + x);\n")
tsc_case("ts-7006", lambda v: f"export function g(x) {{ return x + {v}; }}\n")
tsc_case("ts-2307", lambda v: f"import {{ y }} from './missing_module';\nconsole.log(y + {v});\n")


def node_case(group: str, body: Callable[[int], str], filename: str = "app.js") -> None:
    def make(d: Path, v: int) -> str:
        write(d / "lib" / filename, pad(v, "//") + body(v))
        return run(["node", f"lib/{filename}"], d, 60)

    case(group, "node")(make)


node_case(
    "js-undefined-map",
    lambda v: f"function render(items) {{\n  return items.map((x) => x + {v});\n}}\nrender(undefined);\n",
)
node_case(
    "js-not-function",
    lambda v: f"const api = {{ n: {v} }};\nfunction call() {{\n  return api.fetchAll();\n}}\ncall();\n",
)
node_case("js-reference", lambda v: f"function main() {{\n  return undefinedFn({v});\n}}\nmain();\n")
node_case("js-syntax", lambda v: f"const x = {v};\nlet y = ;\n")
node_case("js-range-stack", lambda v: f"function down(n) {{\n  return down(n + {v + 1});\n}}\ndown(0);\n")
node_case(
    "js-assert",
    lambda v: (
        f"const assert = require('node:assert');\nfunction check() {{\n  assert.strictEqual({v + 1}, {v + 2});\n}}\ncheck();\n"
    ),
)
node_case(
    "js-assert-deep",
    lambda v: (
        f"const assert = require('node:assert');\nfunction check() {{\n  assert.deepStrictEqual({{ a: {v} }}, {{ a: {v + 1} }});\n}}\ncheck();\n"
    ),
)
node_case(
    "js-custom-error",
    lambda v: f"function load() {{\n  throw new Error('config key missing: db{v}');\n}}\nload();\n",
)
node_case(
    "js-econnrefused",
    lambda v: f"const net = require('node:net');\nnet.connect({free_port()}, '127.0.0.1');\n// {v}\n",
)


def jest_case(group: str, body: Callable[[int], str]) -> None:
    def make(d: Path, v: int) -> str:
        write(d / "package.json", '{"name": "t", "version": "1.0.0"}\n')
        write(d / "sum.test.js", pad(v, "//") + body(v))
        return run([node_tool("jest"), "--ci", "--colors=false"], d, 120, env={"FORCE_COLOR": "0", "CI": "1"})

    case(group, "jest")(make)


jest_case("jest-tobe", lambda v: f"test('adds numbers', () => {{\n  expect(1 + {v}).toBe({v + 2});\n}});\n")
jest_case(
    "jest-toequal",
    lambda v: f"test('builds object', () => {{\n  expect({{ a: {v} }}).toEqual({{ a: {v + 1} }});\n}});\n",
)
jest_case(
    "jest-throw",
    lambda v: (
        f"test('loads config', () => {{\n  const cfg = undefined;\n  expect(cfg.port).toBe({v});\n}});\n"
    ),
)


def vitest_case(group: str, body: Callable[[int], str]) -> None:
    def make(d: Path, v: int) -> str:
        write(d / "package.json", '{"name": "t", "version": "1.0.0", "type": "module"}\n')
        write(d / "sum.test.js", "import { test, expect } from 'vitest'\n" + pad(v, "//") + body(v))
        return run([node_tool("vitest"), "run", "--no-color"], d, 120, env={"CI": "1"})

    case(group, "vitest")(make)


vitest_case("vitest-tobe", lambda v: f"test('adds numbers', () => {{\n  expect(1 + {v}).toBe({v + 2})\n}})\n")
vitest_case(
    "vitest-tobe-other",
    lambda v: f"test('subtracts numbers', () => {{\n  expect(5 - {v}).toBe({v + 9})\n}})\n",
)
vitest_case(
    "vitest-toequal",
    lambda v: f"test('adds numbers', () => {{\n  expect({{ a: {v} }}).toEqual({{ a: {v + 1} }})\n}})\n",
)


# ----------------------------------------------------------------------------- C / C++


def cc_case(
    group: str,
    compiler: str,
    ext: str,
    body: Callable[[int], str],
    *,
    execute: bool = False,
    flags: tuple[str, ...] = (),
) -> None:
    def make(d: Path, v: int) -> str:
        write(d / "src" / f"prog.{ext}", pad(v, "//") + body(v))
        out = run([compiler, *flags, "-o", "prog", f"src/prog.{ext}"], d, 120, env={"LC_ALL": "C.UTF-8"})
        if execute and (d / "prog").exists():
            out += run("./prog; :", d, 60)  # the shell, not the program, reports a crash
        return out

    case(group, "c")(make)


cc_case(
    "gcc-undeclared", "gcc", "c", lambda v: f"int main(void) {{\n  int y = {v};\n  return counter + y;\n}}\n"
)
cc_case(
    "gcc-expected-semicolon", "gcc", "c", lambda v: f"int main(void) {{\n  int y = {v}\n  return y;\n}}\n"
)
cc_case(
    "gcc-undefined-reference",
    "gcc",
    "c",
    lambda v: f"int missing_fn(int);\nint main(void) {{\n  return missing_fn({v});\n}}\n",
)
cc_case(
    "gxx-no-match",
    "g++",
    "cpp",
    lambda v: (
        f'#include <string>\nstruct P {{}};\nint main() {{\n  P p;\n  std::string s = "{v}";\n  auto r = p + s;\n  return 0;\n}}\n'
    ),
)
cc_case(
    "clang-undeclared",
    "clang",
    "c",
    lambda v: f"int main(void) {{\n  int y = {v};\n  return counter + y;\n}}\n",
)
cc_case(
    "c-segfault",
    "gcc",
    "c",
    lambda v: f"int main(void) {{\n  int *p = (int *)0;\n  return p[{v}];\n}}\n",
    execute=True,
)
cc_case(
    "c-assert",
    "gcc",
    "c",
    lambda v: (
        f"#include <assert.h>\nint main(void) {{\n  int x = {v};\n  assert(x == 99);\n  return 0;\n}}\n"
    ),
    execute=True,
)
cc_case(
    "c-asan-overflow",
    "gcc",
    "c",
    lambda v: (
        f"#include <stdlib.h>\nint main(void) {{\n  int *a = malloc({v + 2} * sizeof(int));\n  int r = a[{v + 2}];\n  free(a);\n  return r;\n}}\n"
    ),
    execute=True,
    flags=("-fsanitize=address", "-g"),
)


# ----------------------------------------------------------------------------- shell


def shell_case(group: str, script: Callable[[Path, int], str]) -> None:
    def make(d: Path, v: int) -> str:
        return run(script(d, v), d, 60)

    case(group, "shell")(make)


shell_case("sh-cmd-notfound-a", lambda d, v: f"echo step {v}; nosuchcmd_alpha --flag {v}")
shell_case("sh-cmd-notfound-b", lambda d, v: f"echo step {v}; nosuchcmd_beta --flag {v}")
shell_case("sh-ls-missing", lambda d, v: f"ls {d}/missing-dir-{v}")
shell_case("sh-cat-missing", lambda d, v: f"cat {d}/notes-{uuid.uuid4().hex[:6]}.txt")
shell_case(
    "sh-permission",
    lambda d, v: f"printf 'echo hi\\n' > {d}/run{v}.sh; chmod -x {d}/run{v}.sh; {d}/run{v}.sh",
)
shell_case(
    "sh-make-fail", lambda d, v: f"printf 'all:\\n\\t@echo building {v}\\n\\t@exit 2\\n' > Makefile; make"
)
shell_case(
    "sh-python-exit",
    lambda d, v: (
        f'{PY} -c \'import sys; print("deploy failed: token expired at {time.time():.0f}"); sys.exit(3)\'; echo "exit code $?"'
    ),
)


# ----------------------------------------------------------------------------- pip / npm


def make_wheel(dist: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A minimal valid wheel, so pip resolution errors need no index."""
    tag = f"{name}-{version}"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    wheel = "Wheel-Version: 1.0\nGenerator: vlk-corpus\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    with zipfile.ZipFile(dist / f"{tag}-py3-none-any.whl", "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{tag}.dist-info/METADATA", meta)
        zf.writestr(f"{tag}.dist-info/WHEEL", wheel)
        zf.writestr(f"{tag}.dist-info/RECORD", "")


def pip(d: Path, args: str) -> str:
    """pip from a fresh venv, offline and isolated from the machine's pip config."""
    run([PY, "-m", "venv", "venv"], d, 120)
    env = {k: "" for k in os.environ if k.startswith("PIP_")}
    return run(
        f"venv/bin/pip --isolated --disable-pip-version-check install --no-index --find-links dist {args}",
        d,
        120,
        env=env,
    )


def pip_case(group: str, args: Callable[[Path, int], str]) -> None:
    def make(d: Path, v: int) -> str:
        (d / "dist").mkdir()
        return pip(d, args(d, v))

    case(group, "pip")(make)


def conflict(d: Path, v: int) -> str:
    make_wheel(d / "dist", "liba", f"1.{v}", ("libc==1.0",))
    make_wheel(d / "dist", "libb", f"2.{v}", ("libc==2.0",))
    make_wheel(d / "dist", "libc", "1.0")
    make_wheel(d / "dist", "libc", "2.0")
    return f"liba==1.{v} libb==2.{v}"


pip_case("pip-no-dist-a", lambda d, v: f"nosuch-pkg-alpha=={v}.0")
pip_case("pip-no-dist-b", lambda d, v: f"nosuch-pkg-beta>={v}.1")
pip_case("pip-req-file", lambda d, v: f"-r requirements-{uuid.uuid4().hex[:6]}.txt")
pip_case("pip-conflict", conflict)


def pkg(d: Path, v: int, scripts: str = "{}") -> None:
    write(d / "package.json", f'{{"name": "app{v}", "version": "1.{v}.0", "scripts": {scripts}}}\n')


def npm_case(group: str, cmd: Callable[[int], str], setup: Callable[[Path, int], None] = pkg) -> None:
    """npm offline: every error below is produced without the registry."""

    def make(d: Path, v: int) -> str:
        setup(d, v)
        env = {
            "npm_config_offline": "true",
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
        }
        return run(cmd(v), d, 120, env=env)

    case(group, "npm")(make)


npm_case("npm-missing-script", lambda v: "npm run build")
npm_case(
    "npm-script-fails",
    lambda v: "npm test",
    lambda d, v: pkg(d, v, f'{{"test": "node -e \\"process.exit({v + 1})\\""}}'),
)


def broken_pkg(d: Path, v: int) -> None:
    write(d / "package.json", f'{{"name": "app{v}", "version": }}\n')


npm_case("npm-json-parse", lambda v: "npm install", broken_pkg)
npm_case("npm-ci-no-lock", lambda v: "npm ci")
npm_case("npm-missing-local", lambda v: f"npm install ../missing-lib-{v}")


# ----------------------------------------------------------------------------- network / HTTP


class StatusHandler(http.server.BaseHTTPRequestHandler):
    """Answers /<status>/... with that status; /hang never answers."""

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        if self.path.startswith("/hang"):
            time.sleep(3)
            return
        code = int(self.path.strip("/").split("/")[0])
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(
            json.dumps({"error": self.responses[code][0], "request_id": str(uuid.uuid4())}).encode()
        )

    def log_message(self, *args: object) -> None:
        pass


SERVER = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StatusHandler)
BASE = f"http://127.0.0.1:{SERVER.server_address[1]}"


def curl_case(group: str, args: Callable[[int], str]) -> None:
    def make(d: Path, v: int) -> str:
        return run(f"curl -sS {args(v)}", d, 30)

    case(group, "http")(make)


# ``curl -i`` (status line) and ``curl -f`` (curl's own message) report the same status: one group.
for status in (404, 503, 500, 429, 401):
    curl_case(f"http-{status}", lambda v, s=status: f"-i {BASE}/{s}/api/items/{v * 13 + 1}")
curl_case("http-404", lambda v: f"-f {BASE}/404/users/{v + 100}")
curl_case("http-503", lambda v: f"-f {BASE}/503/users/{v + 100}")
py_case(
    "py-http-404",
    lambda v: (
        f"import urllib.request\n\ndef fetch():\n    return urllib.request.urlopen('{BASE}/404/x/{v}').read()\n\nfetch()\n"
    ),
    "api.py",
)
py_case(
    "py-http-503",
    lambda v: (
        f"import urllib.request\n\ndef fetch():\n    return urllib.request.urlopen('{BASE}/503/x/{v}').read()\n\nfetch()\n"
    ),
    "api.py",
)


def net_case(group: str, cmd: Callable[[int], str]) -> None:
    def make(d: Path, v: int) -> str:
        return run(cmd(v), d, 30)

    case(group, "network")(make)


net_case("curl-refused", lambda v: f"curl -sS http://127.0.0.1:{free_port()}/health")
net_case("curl-dns", lambda v: f"curl -sS --connect-timeout 3 http://svc-{uuid.uuid4().hex[:6]}.invalid/api")
net_case("curl-timeout", lambda v: f"curl -sS --max-time 1 {BASE}/hang/{v}")


# ----------------------------------------------------------------------------- databases

PSQL = "psql -h 127.0.0.1 -U postgres -d test -v ON_ERROR_STOP=1 -X -q"


def db_case(group: str, cmd: Callable[[int], str]) -> None:
    def make(d: Path, v: int) -> str:
        return run(cmd(v), d, 60)

    case(group, "database")(make)


db_case("pg-no-relation", lambda v: f'{PSQL} -c "SELECT * FROM missing_orders WHERE id = {v + 5};"')
db_case("pg-no-column", lambda v: f'{PSQL} -c "CREATE TEMP TABLE t{v}(id int); SELECT nope FROM t{v};"')
db_case("pg-syntax", lambda v: f'{PSQL} -c "SELEC id FROM t WHERE id = {v};"')
db_case(
    "pg-unique",
    lambda v: (
        f'{PSQL} -c "CREATE TEMP TABLE u{v}(id int primary key); INSERT INTO u{v} VALUES ({v}); INSERT INTO u{v} VALUES ({v});"'
    ),
)
db_case("pg-conn-refused", lambda v: f"psql -h 127.0.0.1 -p {free_port()} -U postgres -d test -c 'select 1'")
db_case("sqlite-no-table", lambda v: f"sqlite3 db{v}.sqlite 'SELECT * FROM accounts WHERE id = {v + 3};'")
db_case(
    "sqlite-unique",
    lambda v: (
        f"sqlite3 db{v}.sqlite 'CREATE TABLE t(id INTEGER PRIMARY KEY); INSERT INTO t VALUES ({v}); INSERT INTO t VALUES ({v});'"
    ),
)
db_case("sqlite-syntax", lambda v: f"sqlite3 db{v}.sqlite 'SELEC * FROM t WHERE id = {v};'")


# ----------------------------------------------------------------------------- application logs


def log_case(group: str, message: Callable[[int, random.Random], str]) -> None:
    """Real Python logging output: timestamps, pids, ids and durations differ per variant."""

    def make(d: Path, v: int) -> str:
        rng = random.Random(f"{group}-{v}-{time.time()}")
        script = (
            "import logging\nlogging.basicConfig(format='%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s')\n"
            f"logging.getLogger('worker').error({message(v, rng)!r})\n"
        )
        write(d / "log.py", script)
        return run([PY, "log.py"], d)

    case(group, "log")(make)


log_case(
    "log-job-failed",
    lambda v, r: (
        f"job {uuid.UUID(int=r.getrandbits(128))} failed after {r.randint(2, 9)} retries: upstream timeout after {r.randint(100, 999)}ms"
    ),
)
log_case(
    "log-job-cancelled",
    lambda v, r: (
        f"job {uuid.UUID(int=r.getrandbits(128))} cancelled after {r.randint(2, 9)} retries: user request at {r.randint(100, 999)}ms"
    ),
)
log_case(
    "log-disk-full",
    lambda v, r: (
        f"write to /var/lib/app/data-{r.randint(1, 99)}/seg.log failed: No space left on device ({r.randint(10, 99)} bytes left)"
    ),
)
log_case(
    "log-token-expired",
    lambda v, r: (
        f"auth token for user{r.randint(1, 999)}@example.com expired at 2026-11-{r.randint(10, 28)}T1{r.randint(0, 9)}:00:00Z"
    ),
)


# ----------------------------------------------------------------------------- driver


def generate(only: set[str] | None) -> list[dict[str, object]]:
    threading.Thread(target=SERVER.serve_forever, daemon=True).start()
    records: list[dict[str, object]] = []
    for item in CASES:
        if only and item.group not in only:
            continue
        for v in range(VARIANTS):
            root = Path(tempfile.mkdtemp(prefix=f"{random.choice(PROJECT_NAMES)}-"))
            try:
                text = item.make(root, v)
            except (OSError, subprocess.TimeoutExpired) as exc:
                print(f"skip {item.group}#{v}: {exc}", file=sys.stderr)
                continue
            finally:
                shutil.rmtree(root, ignore_errors=True)
            if not text.strip():
                print(f"skip {item.group}#{v}: no output", file=sys.stderr)
                continue
            variant = sum(1 for r in records if r["group"].split("#")[0] == item.group)
            records.append(
                {
                    "text": text[:MAX_TEXT],
                    "group": f"{item.group}#{variant}" if item.group in NAMED_PER_VARIANT else item.group,
                    "ecosystem": item.ecosystem,
                    "variant": variant,
                }
            )
        print(f"{item.group}: done", file=sys.stderr)
    SERVER.shutdown()
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="regenerate only these groups (printed, not written)")
    args = parser.parse_args()
    records = generate(set(args.only) if args.only else None)
    if args.only:
        for rec in records:
            print(json.dumps(rec, ensure_ascii=False))
        return
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(
        f"wrote {len(records)} records, {len({r['group'] for r in records})} groups to {OUT}", file=sys.stderr
    )


if __name__ == "__main__":
    main()
