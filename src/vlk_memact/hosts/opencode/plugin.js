// vlk-memact for OpenCode: written by `vlk-memact install opencode`; `vlk-memact uninstall opencode` removes it.
// It hands each plugin event to `vlk-memact hook opencode` (JSON on stdin) and applies the answer:
// lessons into the system prompt, a loop or recall note after a tool result, a deny thrown before a
// repeat that cannot help. Anything going wrong (vlk-memact missing, slow or failing) means it does nothing.
import { spawn } from "node:child_process";

const COMMAND = __COMMAND__;
const TIMEOUT_MS = __TIMEOUT_MS__;
const LOADED = Symbol.for("vlk-memact.opencode");

function ask(event) {
  return new Promise((resolve) => {
    let child;
    let out = "";
    let done = false;
    const finish = (value) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(value);
    };
    const timer = setTimeout(() => {
      try { child && child.kill("SIGKILL"); } catch {}
      finish(null);
    }, TIMEOUT_MS);
    try {
      child = spawn(COMMAND[0], [...COMMAND.slice(1), "hook", "opencode"], { stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      finish(null);
      return;
    }
    child.on("error", () => finish(null));
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.on("close", () => {
      try {
        const answer = out.trim() ? JSON.parse(out) : null;
        finish(answer && typeof answer === "object" ? answer : null);
      } catch {
        finish(null);
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(event));
  });
}

const said = (answer, field) => (answer && typeof answer[field] === "string" && answer[field] ? answer[field] : null);

export const VlkMemact = async ({ directory }) => {
  // Installed for the user and for the project: the second copy stays silent (every event once).
  if (globalThis[LOADED]) return {};
  globalThis[LOADED] = true;
  const kept = new Map(); // sessionID -> the texts every system prompt of the session carries
  const started = new Map(); // sessionID -> the session.start answer, asked once
  const once = new Map(); // sessionID -> notes for the next request only, and the captures still in flight
  const denied = new Set(); // callIDs thrown by us: their error part is our own reason, not a failure
  // Sessions with a recorded failure. Until a session has one, the guard has nothing to deny or warn
  // about and a success nothing to resolve, so those events are not handed over (no process started).
  const armed = new Set();
  const notes = (sessionID) => {
    if (!once.has(sessionID)) once.set(sessionID, { texts: [], pending: new Set() });
    return once.get(sessionID);
  };
  const base = (name, sessionID) => ({ hook_event_name: name, session_id: sessionID, cwd: directory });
  const start = (sessionID) => {
    if (!started.has(sessionID)) {
      started.set(sessionID, ask(base("session.start", sessionID)).then((answer) => {
        const text = said(answer, "system");
        kept.set(sessionID, text ? [text] : []);
        if (!answer || answer.armed !== false) armed.add(sessionID); // no answer: do not skip anything
      }));
    }
    return started.get(sessionID);
  };
  return {
    "chat.message": async (input) => {
      if (!input || !input.sessionID) return;
      if (!started.has(input.sessionID)) return start(input.sessionID);
      await started.get(input.sessionID);
      const text = said(await ask(base("chat.message", input.sessionID)), "system");
      if (text) kept.get(input.sessionID).push(text);
    },
    "experimental.chat.system.transform": async (input, output) => {
      if (!input || !input.sessionID) return;
      await start(input.sessionID);
      for (const text of kept.get(input.sessionID) || []) output.system.push(text);
      const next = notes(input.sessionID);
      await Promise.all([...next.pending]);
      for (const text of next.texts.splice(0)) output.system.push(text);
    },
    // A tool call that throws (a read of a missing file, an edit that does not apply) never reaches
    // tool.execute.after; its part turns to status "error" with the input and the message.
    event: async ({ event }) => {
      const part = event && event.type === "message.part.updated" && event.properties ? event.properties.part : null;
      if (!part || part.type !== "tool" || !part.state || part.state.status !== "error") return;
      if (denied.has(part.callID)) return;
      armed.add(part.sessionID);
      const next = notes(part.sessionID);
      const capture = ask({ ...base("tool.error", part.sessionID), tool: part.tool, call_id: part.callID,
                            args: part.state.input, error: String(part.state.error ?? "") }).then((answer) => {
        const text = said(answer, "system");
        if (text) next.texts.push(text);
      });
      next.pending.add(capture);
      await capture;
      next.pending.delete(capture);
    },
    "tool.execute.before": async (input, output) => {
      await start(input.sessionID);
      if (!armed.has(input.sessionID)) return;
      const event = { ...base("tool.execute.before", input.sessionID), tool: input.tool, call_id: input.callID,
                      args: output.args };
      const reason = said(await ask(event), "deny");
      if (reason) {
        denied.add(input.callID);
        throw new Error(reason); // the model reads it as the tool result; the call does not run
      }
    },
    "tool.execute.after": async (input, output) => {
      const exit = output && output.metadata ? output.metadata.exit : undefined;
      const failed = typeof exit === "number" && exit !== 0;
      if (failed) armed.add(input.sessionID);
      await start(input.sessionID);
      if (!armed.has(input.sessionID)) return;
      const event = { ...base("tool.execute.after", input.sessionID), tool: input.tool, call_id: input.callID,
                      args: input.args, metadata: { exit: typeof exit === "number" ? exit : null } };
      if (failed) {
        event.metadata.output = output.metadata.output;
        event.output = output.output;
      }
      const text = said(await ask(event), "append");
      if (text) output.output = `${output.output ?? ""}\n\n${text}`;
    },
    "experimental.session.compacting": async (input, output) => {
      const text = said(await ask(base("session.compacting", input.sessionID)), "context");
      if (text) output.context.push(text);
    },
  };
};
