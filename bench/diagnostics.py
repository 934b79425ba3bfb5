"""A labelled set of compiler and linter diagnostics, made from the templates of bench/diagnostic_templates.py.

Each template is filled with two different sets of names (two different errors; the second set differs
from the first in every name for even templates, in one name only for odd ones, the harder case), and
each error is met twice with other noise: line and column, the file and the form of its path (relative,
absolute inside or outside the repository, Windows, a temp dir), counts and line numbers inside the
message. A template without a name is one error met four times. Two views: the message alone (no tool
id, no location) and the line as the tool prints it (id, file, line, column in the tool's own format).

``records(tool, view)`` gives (texts, truth); ``run(groupers, scores)`` scores every tool in both views.
Deterministic: the same records on every run.
"""

from __future__ import annotations

import random
import statistics
import string
from collections.abc import Callable, Iterator

from diagnostic_templates import DEVELOPMENT, LATE, TOOLS

# Names of every kind, in the shapes real code has: plain words, snake_case, camelCase, CamelCase,
# dotted, with digits, dunder, CONSTANT_CASE, generic and pointer types, scoped packages, module paths.
NAMES: dict[str, tuple[str, ...]] = {
    "v": ("count", "user_id", "x1", "x2", "tmpDir", "_cache", "MAX_RETRIES", "idx2", "data_frame", "isReady",
          "retryCount", "item", "config", "buf", "value", "sum", "name", "i", "total2", "node"),
    "f": ("parse_config", "getUser", "run", "main2", "toString", "fetch_all", "compute_md5", "handle",
          "Close", "load", "render", "process_item", "sha256sum", "init"),
    "c": ("UserService", "Config", "Node", "HTTPClient", "Vec3", "DataFrame", "Foo", "Point2D", "Handler",
          "Request", "list", "str", "int", "Widget", "AppError", "Base64Encoder"),
    "m": ("os", "numpy", "foo.bar", "app.models.user", "requests_oauthlib", "lxml.etree", "yaml", "six.moves",
          "django.db", "utils", "pandas", "myapp.settings", "java.util", "com.example.service", "http2",
          "base64"),
    "a": ("name", "items", "to_dict", "__len__", "size", "getValue", "x2", "_private", "id", "status_code",
          "length", "userId", "next", "data"),
    "t": ("int", "str", "List[int]", "Optional[str]", "dict[str, Any]", "const char *", "unsigned long",
          "std::vector<int>", "Vec<u8>", "&'static str", "Option<String>", "string[]", "Promise<void>",
          "number | undefined", "{ id: number; }", "int32", "float64", "char **", "struct point", "i64",
          "User", "Map<String, Integer>", "bool", "string", "None"),
    "o": ("--verbose", "-Wall", "--max-line-length", "-fno-rtti", "-std=c++17", "--no-color", "-O3"),
    "p": ("lodash", "@types/node", "react-dom", "express", "serde_json", "github.com/pkg/errors",
          "left-pad", "./utils", "../lib/api", "@angular/core", "golang.org/x/sync/errgroup", "vue"),
    "k": ("host", "DATABASE_URL", "user.name", "api_key", "Content-Type", "port", "SECRET_KEY", "id",
          "token2", "theme"),
    "h": ("zlib.h", "openssl/ssl.h", "boost/asio.hpp", "sys/epoll.h", "config.h", "lib/common.sh",
          "gtk/gtk.h", "python3.11/Python.h", "env.sh"),
    "s": ("test_login", "test_parse_empty", "TestUserCreate::test_ok", "test_render[case2]", "test_sum",
          "test_api_v2"),
}
NOISE = ("n", "line", "path", "hex", "dur")
FILES = ("main", "utils", "app", "handler_2", "models", "server", "index", "lib", "core", "test_api")
PATH_FORMS = (
    "src/{f}.{e}",
    "/home/runner/work/proj/proj/src/{f}.{e}",
    "/usr/local/lib/site-packages/pkg/{f}.{e}",
    "./{f}.{e}",
    "C:\\Users\\dev\\proj\\src\\{f}.{e}",
    "{f}.{e}",
    "/tmp/tmpa8f3k2/{f}.{e}",
    "../shared/{f}.{e}",
    "packages/core/lib/{f}.{e}",
)
ROOTS = ("/home/runner/work/app/", "C:\\src\\app\\", "/tmp/build-7f3a/app/", "")
VIEWS = ("message", "printed")


def _slots(template: str) -> list[str]:
    return list(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(template) if f))


def _kind(slot: str) -> str:
    return slot.rstrip("0123456789")


def _name_sets(slots: list[str], rng: random.Random, one_only: bool) -> tuple[dict[str, str], dict[str, str]]:
    """Two sets of names for a template's name slots: different in every slot, or in one (``one_only``)."""
    first: dict[str, str] = {}
    for slot in slots:  # distinct values for distinct slots of one kind ({t} and {t2})
        choices = [n for n in NAMES[_kind(slot)] if n not in first.values()]
        first[slot] = rng.choice(choices)
    second = dict(first)
    changed = slots[-1:] if one_only else slots
    for slot in changed:
        choices = [n for n in NAMES[_kind(slot)] if n not in first.values() and n not in second.values()]
        second[slot] = rng.choice(choices)
    return first, second


def _noise(rng: random.Random, ext: str, file: str) -> dict[str, str]:
    path = rng.choice(PATH_FORMS).format(f=rng.choice(FILES), e=ext)
    root = rng.choice(ROOTS)
    posix = path.replace("\\", "/")
    return {
        "uri": "file://" + (posix if posix.startswith("/") else "/" + posix if posix[1:2] == ":" else "/w/" + posix),
        "project": f"{root}App.csproj",  # a project file: the same file, seen from another checkout
        "n": str(rng.randint(0, 12)),
        "line": str(rng.randint(1, 900)),
        "col": str(rng.randint(1, 80)),
        "path": path,
        "message_path": rng.choice(PATH_FORMS).format(f=file, e=ext),
        "hex": hex(rng.randint(0x10000, 0x7FFFFFFFFFFF)),
        "dur": f"{rng.uniform(0.01, 30):.2f}s",
    }


def errors(tool: str) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(truth, template id, names) for every error of a tool."""
    spec = TOOLS[tool]
    for index, (code, template) in enumerate(spec["templates"]):
        slots = [s for s in _slots(template) if _kind(s) in NAMES]
        if "{s}" in spec["printed"]:
            slots.insert(0, "s")  # the test name: the message's own names change last
        if not slots:
            yield f"{tool}:{index}", code, {}
            yield f"{tool}:{index}", code, {}
            continue
        rng = random.Random(f"{tool}:{index}")
        first, second = _name_sets(slots, rng, one_only=index % 2 == 1 and len(slots) > 1)
        yield f"{tool}:{index}:a", code, first
        yield f"{tool}:{index}:b", code, second


def records(tool: str, view: str, message_file_varies: bool = False) -> tuple[list[str], list[str]]:
    """The texts of a tool in one view and their truth (template and name set); each error twice.

    A path inside a message names one file in other directories (another checkout, absolute or relative);
    ``message_file_varies`` makes it another file each time too (the sensitivity figure of the report).
    """
    spec = TOOLS[tool]
    texts, truth = [], []
    rng = random.Random(f"noise:{tool}:{view}")
    templates = dict(enumerate(spec["templates"]))
    for label, code, names in errors(tool):
        template = templates[int(label.split(":")[1])][1]
        for _ in range(2):
            file = rng.choice(FILES) if message_file_varies else f"mod_{label.split(':')[1]}"
            noise = _noise(rng, spec["ext"], file)
            message = template.format(**{**noise, "path": noise["message_path"]}, **names, **{s: names.get(s, "") for s in _slots(template)
                                                           if s not in noise and s not in names})
            if view == "message":
                texts.append(message)
            else:
                suffix = spec.get("id_suffix", "").format(id=code) if code else ""
                test_file = f"tests/test_{label.split(':')[1]}.py"  # a test's file is part of its node id
                texts.append(spec["printed"].format(msg=message, id=code, id_suffix=suffix, s=names.get("s", ""),
                                                    test_file=test_file, **noise))
            truth.append(label)
    return texts, truth


def split(tool: str) -> str:
    """Where a tool stands: the rules were chosen on it, held out, or written after the rules and measured once."""
    return "development" if tool in DEVELOPMENT else "late held-out" if tool in LATE else "held-out"


Grouper = Callable[[list[str], list[float]], list]
SPLITS = ("development", "held-out", "late held-out")


def run(groupers: dict[str, Grouper], scores: Callable[[list[str], list], dict[str, float]]) -> dict:
    """Every tool's records grouped together (one session) by each method, in both views, and a summary per
    split: mean and lowest GA, lowest pairwise precision; plus ours when the message's own file varies too."""
    tools: dict[str, dict] = {}
    for tool in TOOLS:
        views = {view: {m: scores(truth, fn(texts, [])) for m, fn in groupers.items()}
                 for view in VIEWS for texts, truth in [records(tool, view)]}
        varied = {view: scores(truth, groupers["ours"](texts, []))
                  for view in VIEWS for texts, truth in [records(tool, view, message_file_varies=True)]}
        tools[tool] = {"split": split(tool), "records": len(records(tool, "message")[0]), "views": views,
                       "ours_message_file_varies": varied}
    summary = {
        part: {
            view: {
                m: {
                    "mean_ga": statistics.fmean(t["views"][view][m]["ga"] for t in members),
                    "min_ga": min(t["views"][view][m]["ga"] for t in members),
                    "min_precision": min(t["views"][view][m]["precision"] for t in members),
                }
                for m in groupers
            }
            for view in VIEWS
        }
        for part in SPLITS
        for members in [[t for t in tools.values() if t["split"] == part]]
        if members
    }
    return {"tools": tools, "summary": summary}
