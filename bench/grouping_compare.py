"""What changed in the grouping of real agent failures between the previous release and this one.

    git archive <previous commit> src | tar -x -C /tmp/previous
    .venv/bin/python bench/grouping_compare.py --previous /tmp/previous/src

For every trajectory of trajectories-dev, ``group()`` of its failed observations (a session), by the previous
release's fingerprint package (loaded under another name) and by this one: the pairs of different texts
the previous release joined and this one keeps apart, and the reverse, with one example per distinct pair
of keys. No labels exist: the examples are for a reader to judge (docs/grouping.md does).
Writes bench/results/grouping-compare.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from trajectories import load  # noqa: E402

from vlk_memact.fingerprint import fingerprint, group  # noqa: E402


def previous_package(src: Path):  # noqa: ANN201 - a module object
    """The previous release's fingerprint package, imported as ``previous_fingerprint``."""
    init = src / "vlk_memact" / "fingerprint" / "__init__.py"
    spec = importlib.util.spec_from_file_location("previous_fingerprint", init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["previous_fingerprint"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def compare(old) -> dict[str, list[tuple[str, str, str, str, str]]]:  # noqa: ANN001
    out: dict[str, list[tuple[str, str, str, str, str]]] = {"apart now": [], "joined now": []}
    for trajectory in load(None):
        fails = [s.observation for s in trajectory.steps if s.failed and s.observation]
        before, after = old.group(fails), group(fails)
        for i in range(len(fails)):
            for j in range(i + 1, len(fails)):
                if fails[i].strip() == fails[j].strip() or (before[i] == before[j]) == (after[i] == after[j]):
                    continue
                side = "apart now" if before[i] == before[j] else "joined now"
                out[side].append((trajectory.name, old.fingerprint(fails[i]).key, old.fingerprint(fails[j]).key,
                                  fingerprint(fails[i]).key, fingerprint(fails[j]).key))
    return out


def report(out: dict[str, list[tuple[str, str, str, str, str]]]) -> str:
    lines = ["# Grouping of real agent failures: the previous release against this one", "",
             "`bench/grouping_compare.py --previous <src of the previous release>`: pairs of different failed",
             "observations of one trajectory (trajectories-dev) that one release joins and the other does not.", ""]
    for side, pairs in out.items():
        distinct = {(p[3], p[4]) if side == "apart now" else (p[1], p[2]): p for p in pairs}
        lines += [f"## {side}: {len(pairs)} pairs, {len(distinct)} distinct pairs of keys", "",
                  "| trajectory | previous keys | keys now |", "|---|---|---|"]
        for name, old_a, old_b, new_a, new_b in list(distinct.values())[:40]:
            cell = lambda a, b: f"`{a[:90]}`<br>`{b[:90]}`".replace("|", "\\\\|")  # noqa: E731
            lines.append(f"| {name} | {cell(old_a, old_b)} | {cell(new_a, new_b)} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--previous", type=Path, required=True, help="the src/ folder of the previous release")
    text = report(compare(previous_package(parser.parse_args().previous)))
    (ROOT / "bench" / "results" / "grouping-compare.md").write_text(text)
    print(text[:3000])


if __name__ == "__main__":
    main()
