"""SWE-agent's own commands as the tool calls they stand for: this agent's adapter, not the shell reader's.

SWE-agent gives its model commands of its own (a file viewer, a search, an editor) that run in its
shell. Two of their traits are SWE-agent's, not the shell's, so they are translated here rather than
taught to the generic reader (src/vlk_memact/hosts/shared/shell.py, read_only.py):
- the viewer and search commands (`goto`, `scroll_up`, `scroll_down`, `search_file`, `search_dir`,
  `find_file`) only move the viewer or search: they are sent as the read tools a Claude Code session
  would use for the same thing (Read, Grep, Glob), with the action kept as `command` so that two
  different actions stay two calls; `open` and `create` are not among them (they change the file
  `edit` writes to);
- a multi-line command (`edit N:M` + lines + `end_of_edit`) is sent to the shell as a heredoc, which is
  how SWE-agent runs it (`edit N:M << 'end_of_edit'`): its lines are the edit's content, not commands.
"""

from __future__ import annotations

from typing import Any

from vlk_memact.hosts.shared import shell

READ_TOOL_OF = {
    "goto": "Read",
    "scroll_up": "Read",
    "scroll_down": "Read",
    "search_file": "Grep",
    "search_dir": "Grep",
    "find_file": "Glob",
}
MULTI_LINE_END = {"edit": "end_of_edit"}


def shell_command(action: str) -> str:
    """The command line SWE-agent's shell ran for this action."""
    first, _, rest = action.partition("\n")
    end = MULTI_LINE_END.get(first.split(" ", 1)[0])
    if end is None or not rest:
        return action
    body = rest[: -len(end)].rstrip("\n") if rest.rstrip().endswith(end) else rest
    return f"{first} << '{end}'\n{body}\n{end}"


def tool_call(action: str) -> tuple[str, dict[str, Any]]:
    """(tool name, tool input) of a Claude Code session doing what this SWE-agent action did."""
    line = shell.parse(action)
    if len(line.commands) == 1 and not line.substitution and not line.commands[0].writes:
        tool = READ_TOOL_OF.get(line.commands[0].program or "")
        if tool is not None:
            return tool, {"command": action}
    return "Bash", {"command": shell_command(action)}
