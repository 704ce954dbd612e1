// memdir ⇄ the three.ws runtime, both ways, on ordinary data (issue 17).
//
//   node ci/threews/harness.mjs ORACLE_DIR MEMDIR_BINARY
//
// ORACLE_DIR holds the runtime's memory module (`index.js`, Apache-2.0), read from
// there at run time and never copied into this project (see its SOURCE.md). This
// script is the project's own: it shims what a browser would give the module
// (`localStorage`, a failing `fetch`, a clock we set), builds memories with the
// runtime's API, and drives the memdir binary for the other side.
//
// Checks (each prints `ok` or `FAIL`; the last line is `N passed, M failed`):
//   A. runtime → memdir: every field of every memory as `memdir read --json` shows it
//      equals what the runtime's `read` shows; the forget and every event arrive.
//   B. memdir → runtime (merge and replace): `read`, `recall` and `contextBlock` show
//      memdir's values, tags are one harmless value, no junk keys.
//   C. round trips runtime → memdir → runtime and memdir → runtime → memdir: values,
//      events (duplicates included) and, for memdir, every field unchanged.
//   D. a memory the runtime rewrote, imported with `replace`, keeps memdir-only fields.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [oracleDir, memdirBin] = process.argv.slice(2);
if (!oracleDir || !memdirBin) {
	console.error('usage: node harness.mjs ORACLE_DIR MEMDIR_BINARY');
	process.exit(2);
}

// ---- shims: storage, no network, a clock we set ----------------------------------
const store = new Map();
globalThis.localStorage = {
	getItem: (k) => (store.has(k) ? store.get(k) : null),
	setItem: (k, v) => store.set(k, String(v)),
	removeItem: (k) => store.delete(k),
	clear: () => store.clear(),
};
globalThis.fetch = async () => {
	throw new Error('no network in the harness');
};
const RealDate = Date;
let nowMs = RealDate.parse('2026-11-22T09:00:00.000Z');
class FixedDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) super(nowMs);
		else super(...args);
	}
	static now() {
		return nowMs;
	}
}
globalThis.Date = FixedDate;
const tick = (ms = 1000) => {
	nowMs += ms;
};
const nowIso = () => new RealDate(nowMs).toISOString();

const { Memory } = await import(pathToFileURL(path.join(path.resolve(oracleDir), 'index.js')).href);

// ---- reporting ----------------------------------------------------------------------
let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
	if (ok) {
		passed++;
		console.log(`ok   ${name}`);
	} else {
		failed++;
		console.log(`FAIL ${name}${detail ? `\n       ${detail}` : ''}`);
	}
	return ok;
}
const show = (v) => JSON.stringify(v);
// A crash mid-way is one more failure, and the summary is still the last line.
process.on('uncaughtException', (e) => {
	failed++;
	console.log(`FAIL the harness stopped: ${e && e.stack ? e.stack : e}`);
	console.log(`${passed} passed, ${failed} failed`);
	process.exit(1);
});
function eq(name, got, want) {
	return check(name, show(got) === show(want), `got ${show(got)}, want ${show(want)}`);
}

// ---- memdir -------------------------------------------------------------------------
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memdir-threews-'));
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }));

function memdir(dir, args, { input } = {}) {
	const r = spawnSync(memdirBin, ['--dir', dir, ...args], {
		input,
		encoding: 'utf8',
		env: { ...process.env, MEMDIR_NOW: nowIso(), MEMDIR_OFFLINE: '1' },
	});
	return { code: r.status, out: r.stdout, err: r.stderr };
}
function memdirJson(dir, args) {
	const r = memdir(dir, ['--json', ...args]);
	try {
		return { ...r, json: JSON.parse(r.out) };
	} catch {
		return { ...r, json: null };
	}
}
function writeBlob(name, blob) {
	const file = path.join(work, name);
	fs.writeFileSync(file, JSON.stringify(blob));
	return file;
}
function memdirEvents(dir) {
	const tl = path.join(dir, 'timeline');
	if (!fs.existsSync(tl)) return [];
	return fs
		.readdirSync(tl)
		.filter((f) => f.endsWith('.jsonl'))
		.sort()
		.flatMap((f) =>
			fs
				.readFileSync(path.join(tl, f), 'utf8')
				.split('\n')
				.filter((l) => l.trim())
				.map((l) => JSON.parse(l)),
		);
}
// Events compare by value: JSON numbers as JavaScript reads them.
const canon = (e) => JSON.stringify(JSON.parse(JSON.stringify(e)));
const sortedCanon = (evs) => evs.map(canon).sort();

// What memdir's normalized body is for a runtime body (`\n` + body as `write` made it).
const bodyOf = (runtimeBody) => runtimeBody.replace(/^\n+/, '').trimEnd();

const stem = (file) => file.replace(/\.md$/, '');

// =====================================================================================
// A. runtime → memdir
// =====================================================================================
console.log('# A. memories made by the runtime, imported into memdir');
const A = await Memory.load({ mode: 'local', namespace: 'harness-a' });
const aCases = [
	{
		key: 'user_role',
		name: 'Role',
		description: 'Argentina fan, plays weekly 5-a-side on Saturdays',
		type: 'user',
		body: 'Plays 5-a-side every Saturday.\n\n**Why:** said so twice.\n**How to apply:** ask about the match.',
	},
	{ key: 'project_tracking', name: 'Tracking issue #42', description: 'announcements go to #general', type: 'project' },
	{ key: 'reference_channel', name: '#general', description: 'Runbook: deploys at 10:30 UTC', type: 'reference' },
	{
		key: 'feedback_quotes',
		name: "'single quoted'",
		description: '"double quoted" and it\'s fine',
		type: 'feedback',
		body: '> a quote\n\n```js\nconst x = { a: 1 };\n```',
	},
	{ key: 'project_partners', name: '&co partners', description: '!urgent fix the build', type: 'project', decay: '30d' },
	{ key: 'user_unicode', name: 'Café ☕ 日本語', description: 'naïve — “curly” quotes, emoji 🎉', type: 'user' },
	{ key: 'user_nullish', name: 'null', description: '~', type: 'user' },
	{ key: 'user_braces', name: '{braces}', description: '[brackets] and *stars*', type: 'user' },
	{ key: 'user_empty', name: '', description: '', type: 'user', body: 'Nothing in the frontmatter.' },
	{ key: 'project_numbers', name: '1.10', description: '2024', type: 'project', decay: '90d' },
	{ key: 'feedback_words', name: 'no', description: 'true', type: 'feedback', decay: 'never' },
	{ key: 'reference_marks', name: '@handle | pipe > gt % pct', description: '`tick` - dash, a: b # c', type: 'reference' },
	{ key: 'project_undefined', type: 'project', body: 'Written without a name or description.' },
	{ key: 'user_forgotten', name: 'Old phone', description: 'to be forgotten', type: 'user', body: 'x' },
	// Keys the runtime allows and memdir does not: imported under safe keys.
	{ key: 'UserProfile', name: 'Profile', description: 'camel case key', type: 'user' },
	{ key: 'user.name', name: 'Name', description: 'dotted key', type: 'user' },
	{ key: 'café_notes', name: 'Notes', description: 'accented key', type: 'project' },
	{ key: 'notes/today', name: 'Today', description: 'key with a slash', type: 'project' },
];
// The key memdir gives each (spec/cli.md#import).
const MAPPED = { UserProfile: 'userprofile', 'user.name': 'user_name', 'café_notes': 'cafe_notes', 'notes/today': 'notes_today' };
const memdirKey = (key) => MAPPED[key] || key;
for (const c of aCases) {
	const { key, ...fields } = c;
	A.write(key, fields);
	tick();
}
// A rewrite on a later day keeps `created` and bumps `updated`.
tick(86_400_000);
A.write('user_role', { ...aCases[0], key: undefined, body: `${aCases[0].body}\n\nUpdated a day later.` });
tick();
A.note('user_said', { text: "how's my form? #1" });
tick();
A.note('waved', { duration_ms: 1200, detail: { style: 'big', list: [1, 2.5, { a: null, b: true }] } });
// The same event twice in the same millisecond.
A.note('user_said', { text: 'again' });
A.note('user_said', { text: 'again' });
tick();
A.note('user_said', { text: 'ünïcödé ☕' });
tick();
// A forget done the documented way: delete the file, rebuild MEMORY.md, log `forgot`.
A.files.delete('user_forgotten.md');
A._rebuildIndex();
A.note('forgot', { key: 'user_forgotten' });
tick();
const blobA = await A.export();
const blobAFile = writeBlob('a.json', blobA);

const dirA = path.join(work, 'a');
// Only `init` (or --create) makes a memory directory (spec/cli.md#the-memory-directory).
check('A: memdir init', memdir(dirA, ['init']).code === 0);
const impA = memdirJson(dirA, ['import', blobAFile]);
check('A: memdir import of the runtime export exits 0', impA.code === 0, impA.err);
check(
	'A: nothing skipped',
	impA.json && impA.json.skipped === 0,
	impA.json && show(impA.json.skipped_items),
);
// Every file read the runtime's way, or under a mapped key, is reported with why.
{
	const conv = new Map(((impA.json && impA.json.converted) || []).map((c) => [c.item, c.reason]));
	for (const [file, field] of [
		['project_tracking.md', '`name`'],
		['reference_channel.md', '`name`'],
		['project_partners.md', '`description`'],
		['user_nullish.md', '`name`'],
		['user_empty.md', '`name`'],
		['project_numbers.md', '`name`'],
		['UserProfile.md', 'imported as `userprofile`'],
		['notes/today.md', 'imported as `notes_today`'],
	]) {
		check(`A: ${file} is reported as converted, naming ${field}`, (conv.get(file) || '').includes(field), conv.get(file));
	}
	const plain = memdir(dirA, ['import', '--dry-run', blobAFile]);
	check('A: the text report says what was converted and why', /convert +project_tracking\.md: `name` is "Tracking issue #42"/.test(plain.out), plain.out);
	check('A: nothing claims a rewrite that did not happen', !/rewritten as YAML/.test(plain.out), plain.out);
}
const files = [...A.files.keys()];
for (const file of files) {
	const key = stem(file);
	const theirs = A.read(key);
	const r = memdirJson(dirA, ['read', memdirKey(key)]);
	if (!check(`A: ${key} loads in memdir`, r.code === 0 && r.json, r.err)) continue;
	const m = r.json.meta;
	for (const field of ['name', 'description', 'type', 'created', 'updated', 'decay']) {
		const want = theirs.meta[field];
		eq(`A: ${key} ${field}`, m[field] ?? undefined, want);
	}
	eq(`A: ${key} body`, r.json.body, bodyOf(theirs.body));
}
{
	const r = memdir(dirA, ['check']);
	check('A: memdir check finds every imported file loadable', r.code === 0, r.out + r.err);
	const l = memdirJson(dirA, ['list']);
	const n = l.json && (Array.isArray(l.json) ? l.json : l.json.memories || l.json.items || []).length;
	eq('A: memdir lists every runtime memory', n, files.length);
	const f = memdir(dirA, ['read', 'user_forgotten']);
	check('A: the forgotten memory is not in memdir', f.code !== 0, f.out);
	eq('A: every event arrives, duplicates included', sortedCanon(memdirEvents(dirA)), sortedCanon(blobA.timeline));
}

// Round trip runtime → memdir → runtime.
{
	const ex = memdir(dirA, ['export']);
	check('A→M→A: memdir export exits 0', ex.code === 0, ex.err);
	const back = JSON.parse(ex.out);
	const A2 = await Memory.load({ mode: 'local', namespace: 'harness-a2' });
	await A2.import(back, { strategy: 'replace' });
	const after = await A2.export();
	const mappedFile = (f) => `${memdirKey(stem(f))}.md`;
	eq('A→M→A: the same files (keys memdir mapped under their memdir key)', Object.keys(after.files).sort(), Object.keys(blobA.files).map(mappedFile).sort());
	for (const file of files) {
		const key = stem(file);
		const a = A.read(key);
		const b = A2.read(memdirKey(key));
		if (!check(`A→M→A: ${key} is there`, !!b)) continue;
		eq(`A→M→A: ${key} frontmatter as the runtime reads it`, b.meta, a.meta);
		eq(`A→M→A: ${key} body`, b.body.trimEnd(), a.body.trimEnd());
		eq(`A→M→A: ${key} file text byte for byte`, after.files[mappedFile(file)], blobA.files[file]);
	}
	eq('A→M→A: the same events, in order', after.timeline.map(canon), blobA.timeline.map(canon));
	eq('A→M→A: the same file order', Object.keys(after.files), Object.keys(blobA.files).map(mappedFile));
	const again = memdirJson(dirA, ['import', writeBlob('a-back.json', after)]);
	check(
		'A→M→A→M: importing it back changes nothing',
		again.code === 0 && again.json && again.json.added === 0 && again.json.updated === 0 && again.json.events_added === 0,
		show(again.json) + again.err,
	);
	const stale = memdirJson(dirA, ['import', writeBlob('a-stale.json', blobA)]);
	check(
		'A: importing the runtime export again changes nothing (idempotent, the forget holds)',
		stale.code === 0 && stale.json && stale.json.added === 0 && stale.json.events_added === 0,
		show(stale.json),
	);
}

// memdir forgets a memory; the runtime takes memdir's export (the forget in its
// timeline) and writes the key again later the same day: memdir takes the new memory,
// since the blob's timeline shows it was written after that forget.
{
	const f = memdir(dirA, ['forget', 'feedback_words']);
	check('A: memdir forgets feedback_words', f.code === 0, f.err);
	tick();
	const stale = memdirJson(dirA, ['import', '--dry-run', blobAFile]);
	check('A: an export from before the forget does not bring it back', stale.json && stale.json.added === 0, show(stale.json));
	const ex = JSON.parse(memdir(dirA, ['export']).out);
	const R = await Memory.load({ mode: 'local', namespace: 'harness-a3' });
	await R.import(ex, { strategy: 'replace' });
	tick(60_000);
	R.write('feedback_words', { name: 'no', description: 'written again the same day', type: 'feedback' });
	tick();
	const again = memdirJson(dirA, ['import', writeBlob('a-rewrite.json', await R.export())]);
	const r = memdirJson(dirA, ['read', 'feedback_words']);
	eq('A: a memory written again after a same-day forget comes back', r.json && r.json.meta.description, 'written again the same day');
	check('A: it is reported as added', again.json && again.json.added === 1, show(again.json));
}

// =====================================================================================
// B. memdir → runtime
// =====================================================================================
console.log('# B. memories made by memdir, imported into the runtime');
const dirB = path.join(work, 'b');
check('B: memdir init', memdir(dirB, ['init']).code === 0);
const bCases = [
	{
		key: 'user_role',
		name: 'Role',
		description: 'Argentina fan, plays weekly 5-a-side on Saturdays',
		type: 'user',
		tags: ['football', 'argentina', 'with space'],
		important: true,
		source: 'chat 2026-11-20',
		body: 'Plays 5-a-side every Saturday.\n\n- left foot\n- keeper sometimes',
	},
	{
		key: 'project_runbook',
		name: 'Runbook: deploys',
		description: 'Tracking issue #42, see #general',
		type: 'project',
		tags: ['ops', 'a, b', '#hash', 'no', '1.10'],
		decay: '30d',
		body: '# Deploys\n\n1. build\n2. ship',
	},
	{ key: 'feedback_tone', name: "'quoted' words", description: '"double" and it\'s fine', type: 'feedback', decay: 'never' },
	{ key: 'reference_amp', name: '&co', description: '!urgent: ping @ops', type: 'reference', source: 'note: from #ops' },
	{ key: 'user_plain', name: 'no', description: '1.10', type: 'user', tags: ['solo'] },
	{ key: 'user_unicode', name: 'Café ☕', description: 'naïve — 日本語', type: 'user', important: true },
	// Agent state (issue 16): the runtime keeps any type, so `type: state` goes out as it is.
	{ key: 'state_mood', name: 'mood', description: 'agent state mood', type: 'state', body: 'calm, focused on the deploy' },
];
for (const c of bCases) {
	const args = ['write', c.key, '--name', c.name, '--description', c.description, '--type', c.type];
	for (const t of c.tags || []) args.push('--tag', t);
	if (c.important) args.push('--important');
	if (c.decay) args.push('--decay', c.decay);
	if (c.source) args.push('--source', c.source);
	args.push('--body', c.body || `Body of ${c.key}.`);
	const r = memdir(dirB, args);
	check(`B: memdir write ${c.key}`, r.code === 0, r.err);
	tick();
}
memdir(dirB, ['note', 'user_said', 'text=hello #1']);
tick();
memdir(dirB, ['note', 'waved', '--data', '{"duration_ms": 1.0, "scale": 1e2, "nested": {"a": [1, 2.50]}}']);
tick();
const exB = memdir(dirB, ['export']);
check('B: memdir export exits 0', exB.code === 0, exB.err);
const blobB = JSON.parse(exB.out);
const memdirView = {};
for (const c of bCases) memdirView[c.key] = memdirJson(dirB, ['read', c.key]).json;

const KNOWN = new Set(['name', 'description', 'type', 'created', 'updated', 'decay', 'source', 'tags', 'important']);
async function checkRuntimeView(label, mem, keys) {
	const block = mem.contextBlock({ maxTokens: 100000 });
	for (const key of keys) {
		const ours = memdirView[key];
		const theirs = mem.read(key);
		if (!check(`${label}: ${key} is there`, !!theirs)) continue;
		for (const field of ['name', 'description', 'type', 'created', 'updated', 'decay', 'source']) {
			eq(`${label}: ${key} ${field} in read`, theirs.meta[field], ours.meta[field]);
		}
		const junk = Object.keys(theirs.meta).filter((k) => !KNOWN.has(k));
		eq(`${label}: ${key} has no junk keys`, junk, []);
		if (ours.meta.tags && ours.meta.tags.length) {
			check(
				`${label}: ${key} tags are one value`,
				typeof theirs.meta.tags === 'string' && !theirs.meta.tags.includes('\n'),
				show(theirs.meta.tags),
			);
		}
		eq(`${label}: ${key} body in read`, theirs.body.trim(), ours.body);
		const word = ours.meta.name;
		const hits = await mem.recall(word, { limit: 50 });
		const hit = hits.find((h) => h.file === `${key}.md`);
		check(`${label}: ${key} recall by its name`, !!hit && hit.meta.name === ours.meta.name, show(hits.map((h) => h.meta.name)));
		const line = `- [${ours.meta.name}](${key}.md) — ${ours.meta.description}`;
		check(`${label}: ${key} index line in contextBlock`, block.includes(line), line);
	}
}

{
	// merge into a runtime store that already has one of the keys and one of its own
	const B1 = await Memory.load({ mode: 'local', namespace: 'harness-b1' });
	B1.write('user_role', { name: 'Their role', description: 'runtime version', type: 'user', body: 'theirs' });
	B1.write('project_own', { name: 'Own', description: 'only in the runtime', type: 'project', body: 'own' });
	await B1.import(blobB, { strategy: 'merge' });
	eq('B merge: the runtime keeps its own version on conflict', B1.read('user_role').meta.name, 'Their role');
	check('B merge: the runtime keeps its own memory', !!B1.read('project_own'));
	await checkRuntimeView('B merge', B1, bCases.map((c) => c.key).filter((k) => k !== 'user_role'));
}
const B2 = await Memory.load({ mode: 'local', namespace: 'harness-b2' });
B2.write('project_own', { name: 'Own', description: 'only in the runtime', type: 'project', body: 'own' });
await B2.import(blobB, { strategy: 'replace' });
check('B replace: the runtime store is the blob', !B2.read('project_own'));
await checkRuntimeView('B replace', B2, bCases.map((c) => c.key));

// Round trip memdir → runtime → memdir.
{
	const back = await B2.export();
	const dirB2 = path.join(work, 'b2');
	check('M→A→M: memdir init', memdir(dirB2, ['init']).code === 0);
	const imp = memdirJson(dirB2, ['import', writeBlob('b-back.json', back)]);
	check('M→A→M: import exits 0, nothing skipped', imp.code === 0 && imp.json && imp.json.skipped === 0, show(imp.json) + imp.err);
	for (const c of bCases) {
		const r = memdirJson(dirB2, ['read', c.key]);
		eq(`M→A→M: ${c.key} every field`, r.json, memdirView[c.key]);
	}
	eq('M→A→M: the same events', sortedCanon(memdirEvents(dirB2)), sortedCanon(memdirEvents(dirB)));
	const again = memdirJson(dirB, ['import', writeBlob('b-back2.json', back)]);
	check(
		'M→A→M: importing it into the original changes nothing',
		again.code === 0 && again.json && again.json.added + again.json.updated === 0 && again.json.events_added === 0,
		show(again.json),
	);
}

// =====================================================================================
// D. a memory the runtime rewrote comes back with memdir's own fields kept
// =====================================================================================
console.log('# D. a runtime rewrite imported with replace');
{
	tick(86_400_000);
	B2.write('user_role', { name: 'Role', description: 'now plays on Sundays', type: 'user', body: 'Sundays now.' });
	const blob = await B2.export();
	const imp = memdirJson(dirB, ['import', '--strategy', 'replace', writeBlob('d.json', blob)]);
	check('D: import --strategy replace exits 0', imp.code === 0, imp.err);
	const r = memdirJson(dirB, ['read', 'user_role']).json;
	eq('D: the runtime edit wins', r && [r.meta.description, r.body], ['now plays on Sundays', 'Sundays now.']);
	const o = memdirView.user_role.meta;
	eq('D: tags, important and source are kept', r && [r.meta.tags, r.meta.important, r.meta.source], [o.tags, o.important, o.source]);
}

console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
