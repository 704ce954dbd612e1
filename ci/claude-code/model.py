"""A scripted model behind a loopback Anthropic Messages API, for ci/claude-code/run.sh.

This is NOT a model. It answers the real Claude Code CLI (ANTHROPIC_BASE_URL pointed
here) on 127.0.0.1 with replies written in advance, chosen by what the request holds:

- a request that offers memdir's tools, in `tools` or by name in Claude Code's list of
  deferred tools, with the user's prompt as its last turn: the prompt picks the tool
  ("Remember that ..." remember, "What is ...?" recall, "What do you remember ...?"
  memory_context). A deferred tool is loaded first, as Claude Code's system message
  tells the model to: a `tool_use` of ToolSearch with "select:<name>";
- with the tool's input schema in the request (from the start, or after ToolSearch's
  result): a `tool_use` of the tool, its input checked against that schema (remember's
  required fields and its `type` enum, recall's `query`);
- with the tool's `tool_result` as the last turn: a short text. After recall or
  memory_context the text quotes the tool result as it arrived, so whatever the
  final answer knows came from memdir through Claude Code, not from this script;
- anything else (a side request that offers none of memdir's tools): a one-line text.

It speaks the documented API: `POST /v1/messages` as Server-Sent Events when the
request says `"stream": true` (message_start, content_block_start, content_block_delta
with text_delta or input_json_delta, content_block_stop, message_delta with the
stop_reason, message_stop) and as one JSON message otherwise;
`POST /v1/messages/count_tokens` answers `{"input_tokens": N}` (characters / 4). Any
other path is 404 with the API's error shape. Every request is appended to LOG (one
JSON object a line: method, path, the headers that matter, the body, and what the
script decided), which run.sh checks.

Python 3 standard library only.
Usage: model.py PORT_FILE LOG   (writes the port it listens on, serves until killed)
"""
import json
import os
import re
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT_FILE, LOG = sys.argv[1], sys.argv[2]
LOCK = threading.Lock()
PREFIX = "mcp__memdir__"


def log(entry):
    with LOCK, open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def text_of(content):
    """The text of a message's or a tool_result's content (a string or blocks)."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def memdir_tools(body):
    """memdir's tools whose schemas the request carries in `tools`."""
    return {t["name"]: t for t in body.get("tools") or [] if t.get("name", "").startswith(PREFIX)}


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def system_texts(body):
    """The system prompt and the system messages Claude Code puts among the messages."""
    texts = [text_of(body.get("system"))]
    texts += [text_of(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system"]
    return texts


def deferred(body):
    """memdir's tools named in Claude Code's list of deferred tools (loaded by ToolSearch)."""
    return sorted(set(re.findall(r"^(" + PREFIX + r"\w+)$", "\n".join(system_texts(body)), re.M)))


def prompt_of(body):
    """The user's prompt: the first user turn's last text that is not a system reminder."""
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            c = m.get("content")
            texts = [c] if isinstance(c, str) else [b.get("text", "") for b in c if b.get("type") == "text"]
            texts = [t for t in texts if not t.lstrip().startswith("<system-reminder>")]
            return texts[-1] if texts else ""
    return ""


def functions_of(text):
    """The tool definitions a ToolSearch result holds, one <function>{json}</function> each."""
    found = {}
    for raw in re.findall(r"<function>(.*?)</function>", text, re.S):
        try:
            f = json.loads(raw)
        except ValueError:
            continue
        found[f.get("name")] = f
    return found


def remember_input(schema):
    """The remember call for the prompt, checked against the schema Claude Code sent."""
    args = {
        "key": "user_favourite_editor",
        "name": "Favourite editor",
        "description": "The user's favourite editor",
        "type": "user",
        "body": "The user's favourite editor is Helix.",
    }
    props = schema.get("properties", {})
    missing = [r for r in schema.get("required", []) if r not in args]
    unknown = [a for a in args if a not in props]
    types = props.get("type", {}).get("enum")
    problems = []
    if missing:
        problems.append(f"the schema requires {missing}, which this script does not fill")
    if unknown:
        problems.append(f"the schema has no property {unknown}")
    if types is not None and args["type"] not in types:
        problems.append(f"type {args['type']!r} is not in the schema's enum {types}")
    return args, problems


SCRIPT = [  # (the prompt starts with, memdir's tool to call)
    ("Remember that", "remember"),
    ("What is", "recall"),
    ("What do you remember", "memory_context"),
]


def tool_call(tool, schema):
    """The input for TOOL given its input schema, or the problems that stop the call."""
    props = schema.get("properties", {})
    if tool == "remember":
        return remember_input(schema)
    if tool == "recall":
        return {"query": "favourite editor"}, [] if "query" in props else ["recall's schema has no `query`"]
    return {}, []


def text(reply):
    return [{"type": "text", "text": reply}]


def use(name, inp):
    return [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": name, "input": inp}]


def decide(body):
    """What the scripted model answers: (content blocks, stop_reason, note for the log)."""
    loaded, listed = memdir_tools(body), deferred(body)
    if not loaded and not listed:
        return text("OK."), "end_turn", {"kind": "side"}
    messages = body.get("messages") or []
    prompt = prompt_of(body)
    tool = next((t for start, t in SCRIPT if prompt.startswith(start)), None)
    name = PREFIX + (tool or "")
    note = {"prompt": prompt, "tools": [t.get("name") for t in body.get("tools") or []],
            "memdir_loaded": sorted(loaded), "memdir_deferred": listed,
            "memdir_instructions": any("\n## memdir\n" in t for t in system_texts(body))}
    if loaded:
        note["memdir_tools_json_bytes"] = len(compact(list(loaded.values())).encode())
        note["memdir_tools_json_chars"] = len(compact(list(loaded.values())))
        note["all_tools_json_bytes"] = len(compact(body.get("tools") or []).encode())
    users = [m for m in messages if m.get("role") == "user"]
    last = users[-1].get("content") if users else None
    results = [b for b in last if b.get("type") == "tool_result"] if isinstance(last, list) else []
    if results:
        r = results[0]
        said = text_of(r.get("content")).strip()
        called = None  # the tool_use with that id in an assistant turn before
        for m in messages:
            if m.get("role") == "assistant" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if b.get("type") == "tool_use" and b.get("id") == r.get("tool_use_id"):
                        called = b.get("name")
        note.update(kind="tool_result", tool=called, tool_use_id=r.get("tool_use_id"),
                    is_error=bool(r.get("is_error")), content=said)
        if called == "ToolSearch":
            # Claude Code answers with `tool_reference` blocks and sends the tool's
            # definition in `tools` from then on; a <functions> text (as ToolSearch's
            # description puts it) would carry it in the result itself.
            blocks = r.get("content") if isinstance(r.get("content"), list) else []
            note["references"] = [b.get("tool_name") for b in blocks if b.get("type") == "tool_reference"]
            found = functions_of(said)
            schema = (loaded.get(name) or {}).get("input_schema") or (found.get(name) or {}).get("parameters")
            if schema is None:
                note["problems"] = [f"ToolSearch did not give {name}'s schema"]
                return text(f"scripted model: no schema for {name}"), "end_turn", note
            inp, problems = tool_call(tool, schema)
            note["problems"] = problems
            if problems:
                return text("scripted model: " + "; ".join(problems)), "end_turn", note
            note["tool_use"] = {"name": name, "input": inp}
            return use(name, inp), "tool_use", note
        if r.get("is_error"):
            return text(f"The tool failed: {said}"), "end_turn", note
        if called in (PREFIX + "recall", PREFIX + "memory_context"):
            return text(f'memdir\'s {called[len(PREFIX):]} answered: "{said}"'), "end_turn", note
        return text("Saved to memdir."), "end_turn", note
    note["kind"] = "prompt"
    if tool is None:
        return text("scripted model: no script for this prompt"), "end_turn", note
    if name in loaded:  # the schema is in `tools`: call it
        inp, problems = tool_call(tool, loaded[name].get("input_schema") or {})
        note["problems"] = problems
        if problems:
            return text("scripted model: " + "; ".join(problems)), "end_turn", note
        note["tool_use"] = {"name": name, "input": inp}
        return use(name, inp), "tool_use", note
    if name in listed and any(t.get("name") == "ToolSearch" for t in body.get("tools") or []):
        # Deferred: load its schema first, as Claude Code's system message says to.
        inp = {"query": "select:" + name}
        note["tool_use"] = {"name": "ToolSearch", "input": inp}
        return use("ToolSearch", inp), "tool_use", note
    note["problems"] = [f"{name} is neither in `tools` nor deferred"]
    return text(f"scripted model: {name} is not offered"), "end_turn", note


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # the JSON log says it all; keep stderr quiet
        pass

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return {"unparsed": raw[:2000].decode("utf-8", "replace")}

    def record(self, body, **extra):
        keep = ("user-agent", "anthropic-version", "anthropic-beta", "x-api-key", "content-type")
        log({"method": self.command, "path": self.path,
             "headers": {k: v for k, v in self.headers.items() if k.lower() in keep},
             "body": body, **extra})

    def do_GET(self):
        self.record(None)
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"{self.path} is not served by the scripted model"}})

    do_HEAD = do_GET

    def do_POST(self):
        body = self.read_body()
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":
            n = max(1, len(json.dumps(body)) // 4)
            self.record(body, answer={"input_tokens": n})
            return self.send_json(200, {"input_tokens": n})
        if path != "/v1/messages" or not isinstance(body, dict):
            self.record(body)
            return self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"{self.path} is not served by the scripted model"}})
        content, stop, note = decide(body)
        self.record(body, decided=note, answer=content)
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        model = body.get("model", "scripted")
        usage_in = max(1, len(json.dumps(body)) // 4)
        usage_out = max(1, len(json.dumps(content)) // 4)
        if not body.get("stream"):
            return self.send_json(200, {
                "id": msg_id, "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": usage_in, "output_tokens": usage_out}})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        out = [sse("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": usage_in, "output_tokens": 1}}})]
        out.append(sse("ping", {"type": "ping"}))
        for i, block in enumerate(content):
            if block["type"] == "text":
                out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "text", "text": ""}}))
                words = block["text"].split(" ")
                for j, w in enumerate(words):
                    piece = w if j == 0 else " " + w
                    out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                           "delta": {"type": "text_delta", "text": piece}}))
            else:
                out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "tool_use", "id": block["id"],
                                                                         "name": block["name"], "input": {}}}))
                js = json.dumps(block["input"])
                for j in range(0, len(js), 16):  # partial JSON, as the API streams it
                    out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                           "delta": {"type": "input_json_delta", "partial_json": js[j:j + 16]}}))
            out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
        out.append(sse("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": usage_out}}))
        out.append(sse("message_stop", {"type": "message_stop"}))
        for chunk in out:
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(PORT_FILE + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(PORT_FILE + ".tmp", PORT_FILE)
    server.serve_forever()


if __name__ == "__main__":
    main()
