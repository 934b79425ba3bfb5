"""Output schemas the clients validate cheaply: the same contract as pydantic's, with lists and nested
objects described rather than typed (light_output_schema says why)."""

from __future__ import annotations

from typing import Any

SLOT_ITEMS = {
    "type": "object",
    "description": "A timeline slot: id, content_id, session_id, sequence_order, temporal_state, learning_summary, "
    "created_at, constraint_type, raw_log, file_context, tool_payload, evidence, origin, fingerprint, "
    "retired_reason, retired_by, project, scope, fire_count, last_fired_at.",
}


# What the readable fields hold, in the output schemas (the dataclasses stay free of pydantic).
FIELD_DESCRIPTIONS = {
    "context": "The rendered context, exactly the text block: FUTURE constraints and [SYSTEM ANCHOR]s with their "
    "evidence, then PRESENT errors, then conflicts, each tagged [id:N], then the [VLK BUDGET] and [VLK PIPELINE] "
    "lines. Read it first.",
    "notice": "What the model must read about this record, one note per line: secrets replaced, log truncated, "
    "a lesson recalled with its evidence, the same error repeated. Empty when there is nothing to say.",
    "tokens": "Tokens of the context text (characters / 3.8); the whole structured result stays within max_tokens.",
}


def light_output_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The same contract, cheap for clients to validate on every call.

    The Python SDK's client validates structuredContent against outputSchema on each result, one
    sub-schema at a time (~10 us each, bench/results/profile.md, section 3): per-item schemas of lists made
    vlk_fetch_context's check cost more than the SDK's whole no-op round trip. So every field keeps its
    name, type and place (`properties`, `required`); list elements and nested objects are described, not
    typed (their fields named in the description), pydantic's `anyOf: [{type: X}, {type: null}]` becomes
    `type: [X, "null"]` (same meaning), and titles, which a validator ignores, go.
    """
    if schema is None:
        return None
    definitions = schema.get("$defs", {})
    properties = {}
    for name, prop in schema.get("properties", {}).items():
        prop = _collapse_nullable(prop)
        light = {k: v for k, v in prop.items() if k not in ("title", "items")}
        if name in FIELD_DESCRIPTIONS:
            light["description"] = FIELD_DESCRIPTIONS[name]
        elif name == "slots":
            light["description"] = SLOT_ITEMS["description"].replace("A timeline slot", "Timeline slots, each")
        elif "items" in prop:
            light["description"] = _items_description(prop["items"], definitions)
        elif "$ref" in prop or "properties" in prop:
            light = {"type": "object", "description": _object_description(prop, definitions)}
        properties[name] = light
    light_schema = {k: v for k, v in schema.items() if k not in ("$defs", "properties", "title")}
    light_schema["properties"] = properties
    return light_schema


def _definition(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return definitions.get(ref.rsplit("/", 1)[-1], {}) if isinstance(ref, str) else node


def _object_description(node: dict[str, Any], definitions: dict[str, Any]) -> str:
    found = _definition(node, definitions)
    fields = ", ".join(f"{k} ({_type_name(v)})" for k, v in found.get("properties", {}).items())
    return " ".join(x for x in (found.get("description", ""), f"Fields: {fields}." if fields else "") if x)


def _items_description(items: dict[str, Any], definitions: dict[str, Any]) -> str:
    found = _definition(items, definitions)
    if "properties" in found:
        return "A list of objects. " + _object_description(found, definitions)
    return f"A list of {_type_name(found)}s."


def _type_name(node: dict[str, Any]) -> str:
    kind = _collapse_nullable(node).get("type", "value")
    return " or ".join(kind) if isinstance(kind, list) else str(kind)


def _collapse_nullable(node: Any) -> Any:
    if isinstance(node, list):
        return [_collapse_nullable(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _collapse_nullable(v) for k, v in node.items()}
    options = node.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = next(o for o in options if o != {"type": "null"})
        if isinstance(other.get("type"), str) and "anyOf" not in other and "$ref" not in other:
            merged = {k: v for k, v in node.items() if k != "anyOf"}
            merged.update(other)
            merged["type"] = [other["type"], "null"]
            return merged
    return node
