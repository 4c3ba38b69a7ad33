// E2B compatibility harness: drives the REAL E2B JS SDK (npm `e2b` 2.x, optionally
// `@e2b/code-interpreter`) against an E2B-compatible server, configured by environment
// variables only, exactly as a user would. Prints TAP lines ("ok - NAME", "not ok - NAME
// (detail)", "ok - NAME # SKIP reason") and a trailing plan; exits 0 when nothing failed.
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=e2b_... node tests/e2b/e2b_sdk_test.mjs
//
// Knobs (all optional):
//   E2B_SDK_DIR            node_modules holding e2b (default: <repo>/build/npm-e2b/node_modules)
//   E2B_TEST_TEMPLATE      template for Sandbox.create (default: the SDK default, "base")
//   E2B_TEST_SKIP          regex; tests whose name matches are reported as skipped
//   E2B_TEST_ONLY          regex; only tests whose name matches run (others skipped; the first,
//                          critical Sandbox.create test always runs)
//   E2B_TEST_STRICT_PATHS  1 (default): $HOME/pwd must be exactly /home/user (/root for root).
//                          0: only the suffix is checked (tests/e2b/run_mock.sh sets this,
//                          because the mock maps sandbox paths under a host temp dir).
//   E2B_TEST_CODE_INTERPRETER  1: run the @e2b/code-interpreter tests (port 49999),
//                          0: skip them, unset: skip with a reason.
//   E2B_TEST_VERBOSE=1     print stack traces of failures as TAP comments.
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';
import http from 'node:http';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const sdkDir = process.env.E2B_SDK_DIR || join(repo, 'build', 'npm-e2b', 'node_modules');
const env = process.env;

let planned = 0;
let failed = 0;
function tap(line) { planned++; console.log(line); }

if (!env.E2B_API_URL || !env.E2B_SANDBOX_URL || !env.E2B_API_KEY) {
	tap('ok - e2b sdk harness # SKIP E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY must be set');
	console.log(`1..${planned}`);
	process.exit(0);
}
if (!existsSync(join(sdkDir, 'e2b', 'package.json'))) {
	tap(`ok - e2b sdk harness # SKIP the e2b SDK is not installed in ${sdkDir} (run tests/e2b/setup.sh)`);
	console.log(`1..${planned}`);
	process.exit(0);
}

const e2b = await import(pathToFileURL(join(sdkDir, 'e2b', 'dist', 'index.mjs')).href);
const {
	Sandbox, CommandExitError, TimeoutError, NotFoundError, SandboxNotFoundError, FileNotFoundError,
	AuthenticationError, InvalidArgumentError, SandboxError, FileType,
} = e2b;
const sdkVersion = JSON.parse(await (await import('node:fs/promises')).readFile(join(sdkDir, 'e2b', 'package.json'), 'utf8')).version;
console.log(`# e2b SDK ${sdkVersion} against API ${env.E2B_API_URL}, sandbox ${env.E2B_SANDBOX_URL}`);

const strictPaths = (env.E2B_TEST_STRICT_PATHS ?? '1') !== '0';
const skipRe = env.E2B_TEST_SKIP ? new RegExp(env.E2B_TEST_SKIP) : null;
const onlyRe = env.E2B_TEST_ONLY ? new RegExp(env.E2B_TEST_ONLY) : null;
const RUN = `run${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
const tmpl = env.E2B_TEST_TEMPLATE ? { template: env.E2B_TEST_TEMPLATE } : {};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const enc = (s) => new TextEncoder().encode(s);
const dec = (b) => new TextDecoder().decode(b);
// Metadata is a JSON object (a Go map in E2B's API, whose encoder sorts the keys): compared
// without regard to key order.
const canon = (o) => (o && typeof o === 'object' ? JSON.stringify(Object.keys(o).sort().map((k) => [k, o[k]])) : short(o));
const short = (v) => { try { return typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v, (k, x) => (x instanceof Date ? x.toISOString() : x)); } catch { return String(v); } };

class Fail extends Error {}
function assert(cond, msg) { if (!cond) throw new Fail(msg); }
function eq(actual, expected, what) {
	if (actual !== expected) throw new Fail(`${what}: expected ${short(expected)}, got ${short(actual)}`);
}
function pathIs(actual, expected, what) {
	const ok = strictPaths ? actual === expected : (typeof actual === 'string' && actual.endsWith(expected));
	if (!ok) throw new Fail(`${what}: expected ${strictPaths ? '' : '...'}${short(expected)}, got ${short(actual)}`);
}
async function rejects(promise, klass, what) {
	try {
		const v = await promise;
		throw new Fail(`${what}: expected ${klass.name}, resolved with ${short(v)}`);
	} catch (e) {
		if (e instanceof Fail) throw e;
		if (!(e instanceof klass)) throw new Fail(`${what}: expected ${klass.name}, got ${e?.name}: ${e?.message}`);
		return e;
	}
}
async function until(fn, ms, what) {
	const end = Date.now() + ms;
	for (;;) {
		if (await fn()) return;
		if (Date.now() > end) throw new Fail(`timed out after ${ms} ms waiting for ${what}`);
		await sleep(50);
	}
}
function withTimeout(p, ms) {
	let t;
	return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Fail(`test timed out after ${ms} ms`)), ms); })])
		.finally(() => clearTimeout(t));
}

const tests = [];
function test(name, fn, opts = {}) { tests.push({ name, fn, ...opts }); }

// Shared state between tests (they run in order).
const S = { cleanup: [] };
const created = (s) => { S.cleanup.push(s.sandboxId); return s; };

// ------------------------------------------------------------------------------------------
// Control plane
// ------------------------------------------------------------------------------------------
test('Sandbox.create with metadata, envs and timeoutMs', async () => {
	S.meta = { suite: RUN, role: 'main', 'odd key&=': 'v a/l?ue%' };
	S.sbx = created(await Sandbox.create({ ...tmpl, metadata: S.meta, envs: { SBX_ENV: 'sandbox-level' }, timeoutMs: 180_000 }));
	assert(typeof S.sbx.sandboxId === 'string' && S.sbx.sandboxId.length > 0, `sandboxId: ${short(S.sbx.sandboxId)}`);
}, { critical: true });

test('sandbox.isRunning() is true (GET /health -> 2xx)', async () => {
	eq(await S.sbx.isRunning(), true, 'isRunning');
});

test('sandbox.getInfo(): id, metadata, state, startedAt/endAt, envdVersion', async () => {
	const i = await S.sbx.getInfo();
	eq(i.sandboxId, S.sbx.sandboxId, 'sandboxId');
	eq(canon(i.metadata), canon(S.meta), 'metadata');
	eq(i.state, 'running', 'state');
	assert(i.startedAt instanceof Date && !isNaN(i.startedAt), `startedAt ${i.startedAt}`);
	const life = (i.endAt - i.startedAt) / 1000;
	assert(Math.abs(life - 180) < 10, `endAt - startedAt should be ~180 s, is ${life}`);
	assert(/^\d+\.\d+\.\d+/.test(i.envdVersion), `envdVersion ${i.envdVersion}`);
	assert(typeof i.templateId === 'string' && i.templateId, `templateId ${i.templateId}`);
	assert(typeof i.cpuCount === 'number' && typeof i.memoryMB === 'number', `cpuCount/memoryMB ${i.cpuCount}/${i.memoryMB}`);
});

test('Sandbox.getInfo(id) (static) matches', async () => {
	const i = await Sandbox.getInfo(S.sbx.sandboxId);
	eq(i.sandboxId, S.sbx.sandboxId, 'sandboxId');
});

test('sandbox.setTimeout() moves endAt (POST /sandboxes/{id}/timeout)', async () => {
	await S.sbx.setTimeout(240_000);
	const i = await S.sbx.getInfo();
	const left = (i.endAt - Date.now()) / 1000;
	assert(left > 225 && left < 250, `endAt should be ~240 s from now, is ${left}`);
});

test('Sandbox.list paging: limit + X-Next-Token, metadata filter', async () => {
	S.extra = [];
	for (let i = 0; i < 2; i++) S.extra.push(created(await Sandbox.create({ ...tmpl, metadata: { suite: RUN, role: `extra${i}` }, timeoutMs: 120_000 })));
	const pager = Sandbox.list({ query: { metadata: { suite: RUN } }, limit: 2 });
	const p1 = await pager.nextItems();
	eq(p1.length, 2, 'first page size');
	eq(pager.hasNext, true, 'hasNext after page 1');
	assert(typeof pager.nextToken === 'string' && pager.nextToken, 'nextToken set');
	const p2 = await pager.nextItems();
	eq(p2.length, 1, 'second page size');
	eq(pager.hasNext, false, 'hasNext after page 2');
	const ids = new Set([...p1, ...p2].map((s) => s.sandboxId));
	eq(ids.size, 3, 'distinct sandboxes over both pages');
	for (const s of [S.sbx, ...S.extra]) assert(ids.has(s.sandboxId), `${s.sandboxId} listed`);
	const item = [...p1, ...p2].find((s) => s.sandboxId === S.sbx.sandboxId);
	eq(item.state, 'running', 'listed state');
	eq(canon(item.metadata), canon(S.meta), 'listed metadata');
	assert(item.startedAt instanceof Date && item.endAt instanceof Date, 'listed dates');
});

test('Sandbox.list metadata filter with reserved characters in key and value', async () => {
	const items = await Sandbox.list({ query: { metadata: { 'odd key&=': 'v a/l?ue%', suite: RUN } } }).nextItems();
	eq(items.map((s) => s.sandboxId).join(','), S.sbx.sandboxId, 'matched sandboxes');
	const none = await Sandbox.list({ query: { metadata: { suite: RUN, role: 'nope' } } }).nextItems();
	eq(none.length, 0, 'non-matching filter');
});

test('Sandbox.list state filter (state=running,paused form/explode=false)', async () => {
	const running = await Sandbox.list({ query: { metadata: { suite: RUN }, state: ['running'] } }).nextItems();
	eq(running.length, 3, 'running');
	const paused = await Sandbox.list({ query: { metadata: { suite: RUN }, state: ['paused'] } }).nextItems();
	eq(paused.length, 0, 'paused');
});

test('Sandbox.connect(id) to a running sandbox (POST /v2/sandboxes/{id}/connect -> 200)', async () => {
	S.sbx2 = await Sandbox.connect(S.sbx.sandboxId);
	eq(S.sbx2.sandboxId, S.sbx.sandboxId, 'sandboxId');
	eq(await S.sbx2.isRunning(), true, 'isRunning via the second instance');
});

// ------------------------------------------------------------------------------------------
// Commands
// ------------------------------------------------------------------------------------------
test('commands.run: stdout, stderr, exitCode 0', async () => {
	const r = await S.sbx.commands.run('echo out; echo err >&2');
	eq(r.exitCode, 0, 'exitCode');
	eq(r.stdout, 'out\n', 'stdout');
	eq(r.stderr, 'err\n', 'stderr');
});

test('commands.run: non-zero exit -> CommandExitError with exitCode/stdout/stderr', async () => {
	const e = await rejects(S.sbx.commands.run('echo partial; echo bad >&2; exit 3'), CommandExitError, 'exit 3');
	eq(e.exitCode, 3, 'exitCode');
	eq(e.stdout, 'partial\n', 'stdout');
	eq(e.stderr, 'bad\n', 'stderr');
	assert(e instanceof SandboxError, 'CommandExitError is a SandboxError');
});

test('commands.run: sandbox envs (create envVars) are visible', async () => {
	eq((await S.sbx.commands.run('echo "$SBX_ENV"')).stdout, 'sandbox-level\n', 'stdout');
});

test('commands.run: per-command envs, overriding sandbox envs', async () => {
	const r = await S.sbx.commands.run('echo "$A $SBX_ENV"', { envs: { A: '1', SBX_ENV: 'cmd-level' } });
	eq(r.stdout, '1 cmd-level\n', 'stdout');
});

test('commands.run: default user is "user", cwd and $HOME are /home/user', async () => {
	const r = await S.sbx.commands.run('echo "$USER"; pwd; echo "$HOME"');
	const [user, pwd, home] = r.stdout.trim().split('\n');
	eq(user, 'user', '$USER');
	pathIs(pwd, '/home/user', 'pwd');
	pathIs(home, '/home/user', '$HOME');
});

test('commands.run: user "root" (Authorization: Basic cm9vdDo=)', async () => {
	const r = await S.sbx.commands.run('echo "$USER"; echo "$HOME"', { user: 'root' });
	const [user, home] = r.stdout.trim().split('\n');
	eq(user, 'root', '$USER');
	pathIs(home, '/root', '$HOME');
});

test('commands.run: cwd option', async () => {
	await S.sbx.files.makeDir('/home/user/wd');
	const r = await S.sbx.commands.run('pwd', { cwd: '/home/user/wd' });
	pathIs(r.stdout.trim(), '/home/user/wd', 'pwd');
});

test('commands.run: missing cwd -> InvalidArgumentError', async () => {
	await rejects(S.sbx.commands.run('pwd', { cwd: '/nonexistent-e2b-test-dir' }), InvalidArgumentError, 'missing cwd');
});

test('commands.run: onStdout/onStderr callbacks', async () => {
	const out = []; const err = [];
	await S.sbx.commands.run('echo a; echo b; echo c >&2', { onStdout: (d) => out.push(d), onStderr: (d) => err.push(d) });
	eq(out.join(''), 'a\nb\n', 'stdout chunks');
	eq(err.join(''), 'c\n', 'stderr chunks');
});

test('commands.run: large output arrives complete and in order', async () => {
	const r = await S.sbx.commands.run('seq 1 20000');
	const lines = r.stdout.trim().split('\n');
	eq(lines.length, 20000, 'line count');
	eq(lines[19999], '20000', 'last line');
});

test('commands.run: timeoutMs (Connect-Timeout-Ms) ends the command', async () => {
	const t0 = Date.now();
	try {
		await S.sbx.commands.run('sleep 30; echo not-killed', { timeoutMs: 1500 });
		throw new Fail('resolved');
	} catch (e) {
		if (e instanceof Fail) throw e;
		assert(e instanceof TimeoutError || (e instanceof CommandExitError && e.exitCode !== 0),
			`expected TimeoutError (or CommandExitError), got ${e?.name}: ${e?.message}`);
	}
	const took = Date.now() - t0;
	assert(took < 10_000, `took ${took} ms`);
	// envd kills the process when its Connect-Timeout-Ms elapses.
	await until(async () => !(await S.sbx.commands.list()).some((p) => p.args.join(' ').includes('not-killed')), 5000, 'the process to go away');
});

test('commands.run background: handle.pid, handle.wait()', async () => {
	const h = await S.sbx.commands.run('sleep 0.5; echo done', { background: true });
	assert(Number.isInteger(h.pid) && h.pid > 0, `pid ${h.pid}`);
	const r = await h.wait();
	eq(r.stdout, 'done\n', 'stdout');
	eq(r.exitCode, 0, 'exitCode');
});

test('commands.list shows a running background command (cmd, args, envs)', async () => {
	S.bg = await S.sbx.commands.run('sleep 60', { background: true, envs: { LISTED: 'yes' } });
	const procs = await S.sbx.commands.list();
	const p = procs.find((x) => x.pid === S.bg.pid);
	assert(p, `pid ${S.bg.pid} in ${short(procs)}`);
	eq(p.cmd, '/bin/bash', 'cmd');
	eq(short(p.args), short(['-l', '-c', 'sleep 60']), 'args');
	eq(p.envs?.LISTED, 'yes', 'envs.LISTED');
});

test('handle.kill() -> true; wait() rejects with a non-zero exit; kill again -> false', async () => {
	eq(await S.bg.kill(), true, 'kill');
	const e = await rejects(S.bg.wait(), CommandExitError, 'wait after kill');
	assert(e.exitCode !== 0, `exitCode ${e.exitCode}`);
	await until(async () => !(await S.sbx.commands.list()).some((p) => p.pid === S.bg.pid), 5000, 'process to leave the list');
	eq(await S.sbx.commands.kill(S.bg.pid), false, 'second kill (not_found)');
});

test('commands.run stdin: true + handle.sendStdin', async () => {
	const h = await S.sbx.commands.run('read line; echo "got:$line"', { background: true, stdin: true });
	await h.sendStdin('hello\n');
	eq((await h.wait()).stdout, 'got:hello\n', 'stdout');
});

test('commands.sendStdin(pid) + commands.closeStdin(pid) (EOF)', async () => {
	const h = await S.sbx.commands.run('cat; echo "[eof]"', { background: true, stdin: true });
	await S.sbx.commands.sendStdin(h.pid, 'abc');
	await S.sbx.commands.sendStdin(h.pid, enc('def'));
	await S.sbx.commands.closeStdin(h.pid);
	eq((await h.wait()).stdout, 'abcdef[eof]\n', 'stdout');
});

test('commands.connect(pid) from a second Sandbox.connect instance', async () => {
	// The ticks start once the second client is connected, however slow connecting is.
	const h = await S.sbx.commands.run('for w in $(seq 600); do [ -e "$HOME/go-connect" ] && break; sleep 0.05; done; for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.3; done', { background: true, timeoutMs: 0 });
	const seen = [];
	const h2 = await S.sbx2.commands.connect(h.pid, { onStdout: (d) => seen.push(d) });
	eq(h2.pid, h.pid, 'pid');
	await S.sbx.commands.run('touch "$HOME/go-connect"');
	const r2 = await h2.wait();
	eq(r2.exitCode, 0, 'exitCode via connect');
	assert(seen.join('').includes('tick6'), `connected stdout: ${short(seen.join(''))}`);
	eq((await h.wait()).stdout.split('\n').filter(Boolean).length, 6, 'original handle got everything');
});

test('commands.connect(unknown pid) -> NotFoundError', async () => {
	await rejects(S.sbx.commands.connect(999999), NotFoundError, 'connect unknown pid');
});

test('a command survives client disconnect (handle.disconnect)', async () => {
	const h = await S.sbx.commands.run('sleep 1; echo survived > "$HOME/survive.txt"', { background: true, timeoutMs: 0 });
	await h.disconnect();
	await until(async () => S.sbx.files.exists('/home/user/survive.txt'), 8000, 'survive.txt');
	eq(await S.sbx.files.read('/home/user/survive.txt'), 'survived\n', 'content');
});

// ------------------------------------------------------------------------------------------
// PTY
// ------------------------------------------------------------------------------------------
test('pty.create + sendInput + resize + kill', async () => {
	let out = '';
	const term = await S.sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += dec(d); }, timeoutMs: 0 });
	assert(Number.isInteger(term.pid) && term.pid > 0, `pid ${term.pid}`);
	await S.sbx.pty.sendInput(term.pid, enc('echo "PTY$((6*7)) $TERM"\n'));
	await until(() => out.includes('PTY42 xterm-256color'), 10_000, `PTY42 in ${short(out.slice(-300))}`);
	await S.sbx.pty.sendInput(term.pid, enc('stty size\n'));
	await until(() => /24 80/.test(out), 10_000, `"24 80" in ${short(out.slice(-300))}`);
	await S.sbx.pty.resize(term.pid, { cols: 100, rows: 40 });
	await S.sbx.pty.sendInput(term.pid, enc('stty size\n'));
	await until(() => /40 100/.test(out), 10_000, `"40 100" in ${short(out.slice(-300))}`);
	eq(await S.sbx.pty.kill(term.pid), true, 'pty.kill');
	try { await term.wait(); } catch (e) { assert(e instanceof CommandExitError, `wait: ${e?.name} ${e?.message}`); }
});

test('pty: exit from the shell ends the handle with exit code', async () => {
	const term = await S.sbx.pty.create({ cols: 80, rows: 24, onData: () => {}, timeoutMs: 0 });
	await S.sbx.pty.sendInput(term.pid, enc('exit 5\n'));
	const e = await rejects(term.wait(), CommandExitError, 'wait');
	eq(e.exitCode, 5, 'exitCode');
});

// ------------------------------------------------------------------------------------------
// Files
// ------------------------------------------------------------------------------------------
test('files.write text -> WriteInfo; files.read text', async () => {
	const w = await S.sbx.files.write('/home/user/hello.txt', 'hello e2b\n');
	eq(w.path, '/home/user/hello.txt', 'path');
	eq(w.name, 'hello.txt', 'name');
	eq(w.type, FileType.FILE, 'type');
	eq(await S.sbx.files.read('/home/user/hello.txt'), 'hello e2b\n', 'read');
});

test('files written through the API are visible to commands (relative to $HOME)', async () => {
	eq((await S.sbx.commands.run('cat hello.txt')).stdout, 'hello e2b\n', 'cat');
});

test('files.write relative path resolves against /home/user', async () => {
	const w = await S.sbx.files.write('rel/dir/r.txt', 'r');
	eq(w.path, '/home/user/rel/dir/r.txt', 'path (parents created)');
	eq(await S.sbx.files.read('/home/user/rel/dir/r.txt'), 'r', 'read back');
});

test('files.write/read bytes, blob and stream formats', async () => {
	const bytes = new Uint8Array(256); for (let i = 0; i < 256; i++) bytes[i] = i;
	await S.sbx.files.write('/home/user/bin.dat', bytes.buffer);
	const b = await S.sbx.files.read('/home/user/bin.dat', { format: 'bytes' });
	assert(b instanceof Uint8Array && b.length === 256 && b.every((x, i) => x === i), `bytes ${b?.length}`);
	const blob = await S.sbx.files.read('/home/user/bin.dat', { format: 'blob' });
	eq(blob.size, 256, 'blob size');
	const stream = await S.sbx.files.read('/home/user/bin.dat', { format: 'stream' });
	const chunks = []; for await (const c of stream) chunks.push(...c);
	eq(chunks.length, 256, 'stream length');
	eq(chunks[255], 255, 'stream last byte');
});

test('files.write a Blob and a ReadableStream (octet-stream upload)', async () => {
	await S.sbx.files.write('/home/user/blob.txt', new Blob(['from-blob']));
	eq(await S.sbx.files.read('/home/user/blob.txt'), 'from-blob', 'blob');
	const rs = new ReadableStream({ start(c) { c.enqueue(enc('from-')); c.enqueue(enc('stream')); c.close(); } });
	const w = await S.sbx.files.write('/home/user/stream.txt', rs);
	eq(w.path, '/home/user/stream.txt', 'path');
	eq(await S.sbx.files.read('/home/user/stream.txt'), 'from-stream', 'stream');
});

test('files.write useOctetStream: true and gzip: true', async () => {
	await S.sbx.files.write('/home/user/oct.txt', 'octet', { useOctetStream: true });
	eq(await S.sbx.files.read('/home/user/oct.txt'), 'octet', 'octet-stream');
	await S.sbx.files.write('/home/user/gz.txt', 'gzipped body', { gzip: true });
	eq(await S.sbx.files.read('/home/user/gz.txt'), 'gzipped body', 'gzip upload');
});

test('files.write empty file; read returns ""', async () => {
	await S.sbx.files.write('/home/user/empty.txt', '');
	eq(await S.sbx.files.read('/home/user/empty.txt'), '', 'read');
	eq((await S.sbx.files.read('/home/user/empty.txt', { format: 'bytes' })).length, 0, 'bytes');
});

test('files.write multiple files in one multipart request', async () => {
	const ws = await S.sbx.files.write([
		{ path: '/home/user/multi/a.txt', data: 'A' },
		{ path: '/home/user/multi/b.txt', data: new Uint8Array([66]).buffer },
		{ path: '/home/user/odd name/q"uote %20.txt', data: 'Q' },
	]);
	assert(Array.isArray(ws) && ws.length === 3, `result ${short(ws)}`);
	eq(ws.map((w) => w.path).sort().join(','), '/home/user/multi/a.txt,/home/user/multi/b.txt,/home/user/odd name/q"uote %20.txt', 'paths');
	eq(await S.sbx.files.read('/home/user/multi/a.txt'), 'A', 'a');
	eq(await S.sbx.files.read('/home/user/multi/b.txt'), 'B', 'b');
	eq(await S.sbx.files.read('/home/user/odd name/q"uote %20.txt'), 'Q', 'multipart filename escaping (only %0A %0D %22 are escapes)');
});

test('files.read missing file -> FileNotFoundError (NotFoundError)', async () => {
	const e = await rejects(S.sbx.files.read('/home/user/no-such-file'), FileNotFoundError, 'read');
	assert(e instanceof NotFoundError, 'is NotFoundError');
});

test('files.read a directory -> InvalidArgumentError (400)', async () => {
	await rejects(S.sbx.files.read('/home/user/multi'), InvalidArgumentError, 'read dir');
});

test('files.list (depth 1 and 2)', async () => {
	const l = await S.sbx.files.list('/home/user/multi');
	eq(l.map((e) => e.name).sort().join(','), 'a.txt,b.txt', 'names');
	const a = l.find((e) => e.name === 'a.txt');
	eq(a.type, FileType.FILE, 'type');
	eq(a.path, '/home/user/multi/a.txt', 'path');
	eq(a.size, 1, 'size');
	assert(a.modifiedTime instanceof Date && !isNaN(a.modifiedTime), 'modifiedTime');
	const deep = await S.sbx.files.list('/home/user/rel', { depth: 2 });
	const paths = deep.map((e) => e.path).sort();
	eq(paths.join(','), '/home/user/rel/dir,/home/user/rel/dir/r.txt', 'depth 2 paths');
	eq(deep.find((e) => e.name === 'dir').type, FileType.DIR, 'dir type');
});

test('files.list missing dir -> FileNotFoundError', async () => {
	await rejects(S.sbx.files.list('/home/user/nope-dir'), FileNotFoundError, 'list');
});

test('files.exists', async () => {
	eq(await S.sbx.files.exists('/home/user/hello.txt'), true, 'existing file');
	eq(await S.sbx.files.exists('/home/user/multi'), true, 'existing dir');
	eq(await S.sbx.files.exists('/home/user/nothing-here'), false, 'missing');
});

test('files.makeDir: true when created (with parents), false when it exists', async () => {
	eq(await S.sbx.files.makeDir('/home/user/mk/a/b'), true, 'create');
	eq(await S.sbx.files.makeDir('/home/user/mk/a/b'), false, 'again');
	eq((await S.sbx.files.getInfo('/home/user/mk/a')).type, FileType.DIR, 'parent is a dir');
});

test('files.rename', async () => {
	await S.sbx.files.write('/home/user/old.txt', 'moved');
	const e = await S.sbx.files.rename('/home/user/old.txt', '/home/user/mk/new.txt');
	eq(e.path, '/home/user/mk/new.txt', 'path');
	eq(e.name, 'new.txt', 'name');
	eq(await S.sbx.files.exists('/home/user/old.txt'), false, 'old gone');
	eq(await S.sbx.files.read('/home/user/mk/new.txt'), 'moved', 'content');
	await rejects(S.sbx.files.rename('/home/user/old.txt', '/home/user/x.txt'), FileNotFoundError, 'rename missing');
});

test('files.remove file, directory tree, missing path', async () => {
	await S.sbx.files.remove('/home/user/mk/new.txt');
	eq(await S.sbx.files.exists('/home/user/mk/new.txt'), false, 'file removed');
	await S.sbx.files.remove('/home/user/mk');
	eq(await S.sbx.files.exists('/home/user/mk'), false, 'tree removed');
	await S.sbx.files.remove('/home/user/never-existed');
});

test('files.getInfo file and directory', async () => {
	const f = await S.sbx.files.getInfo('/home/user/hello.txt');
	eq(f.name, 'hello.txt', 'name');
	eq(f.type, FileType.FILE, 'type');
	eq(f.path, '/home/user/hello.txt', 'path');
	eq(f.size, 10, 'size');
	assert(typeof f.mode === 'number' && (f.mode & 0o400), `mode ${f.mode}`);
	assert(/^-[rwx-]{9}$/.test(f.permissions), `permissions ${f.permissions}`);
	assert(typeof f.owner === 'string' && typeof f.group === 'string', 'owner/group');
	const d = await S.sbx.files.getInfo('/home/user/multi');
	eq(d.type, FileType.DIR, 'dir type');
	assert(/^d/.test(d.permissions), `dir permissions ${d.permissions}`);
	await rejects(S.sbx.files.getInfo('/home/user/missing-thing'), FileNotFoundError, 'missing');
});

test('files.watchDir: create and write events; stop()', async () => {
	await S.sbx.files.makeDir('/home/user/watched');
	const events = [];
	let exited = null;
	const w = await S.sbx.files.watchDir('/home/user/watched', (e) => events.push(e), { onExit: (err) => { exited = err ?? 'clean'; } });
	await sleep(200);
	await S.sbx.files.write('/home/user/watched/new.txt', 'x');
	await until(() => events.some((e) => e.name === 'new.txt' && (e.type === 'create' || e.type === 'write')), 10_000, `events ${short(events)}`);
	await S.sbx.files.remove('/home/user/watched/new.txt');
	await until(() => events.some((e) => e.name === 'new.txt' && e.type === 'remove'), 10_000, `remove event in ${short(events)}`);
	await w.stop();
	await until(() => exited !== null, 5000, 'onExit');
});

test('files.watchDir on a missing directory -> FileNotFoundError', async () => {
	await rejects(S.sbx.files.watchDir('/home/user/not-a-dir', () => {}), FileNotFoundError, 'watch missing');
});

test('downloadUrl/uploadUrl: signed URLs work without routing headers', async () => {
	const up = await S.sbx.uploadUrl('/home/user/signed.txt');
	const fd = new FormData();
	fd.append('file', new Blob(['signed upload']), 'signed.txt');
	const ur = await fetch(up, { method: 'POST', body: fd });
	eq(ur.status, 200, `upload status (${up})`);
	const down = await S.sbx.downloadUrl('/home/user/signed.txt');
	const dr = await fetch(down);
	eq(dr.status, 200, `download status (${down})`);
	eq(await dr.text(), 'signed upload', 'downloaded content');
});

// ------------------------------------------------------------------------------------------
// Lifecycle: pause / resume / kill / expiry
// ------------------------------------------------------------------------------------------
test('betaPause() -> true; pause() again -> false (409); state paused; sandbox routes 502', async () => {
	const p = S.extra[0];
	await p.files.write('/home/user/persist.txt', 'kept');
	eq(await p.betaPause(), true, 'first pause');
	eq(await p.pause(), false, 'second pause (409)');
	eq((await p.getInfo()).state, 'paused', 'getInfo state');
	const paused = await Sandbox.list({ query: { metadata: { suite: RUN }, state: ['paused'] } }).nextItems();
	eq(paused.map((s) => s.sandboxId).join(','), p.sandboxId, 'list state=paused');
	eq(await p.isRunning(), false, 'isRunning on a paused sandbox (502)');
	await rejects(p.files.read('/home/user/persist.txt'), TimeoutError, 'files.read while paused (502)');
});

test('Sandbox.connect(id) resumes a paused sandbox (201); state is kept', async () => {
	const p = S.extra[0];
	const r = await Sandbox.connect(p.sandboxId, { timeoutMs: 120_000 });
	eq(await r.isRunning(), true, 'isRunning after resume');
	eq((await r.getInfo()).state, 'running', 'state');
	eq(await r.files.read('/home/user/persist.txt'), 'kept', 'file survived pause');
	eq((await r.commands.run('echo resumed')).stdout, 'resumed\n', 'commands after resume');
});

test('sandbox.connect() (instance) resumes after pause()', async () => {
	const p = S.extra[1];
	eq(await p.pause(), true, 'pause');
	const same = await p.connect();
	eq(same, p, 'returns this');
	eq(await p.isRunning(), true, 'isRunning');
});

test('timeout expiry kills the sandbox (default onTimeout kill)', async () => {
	const s = created(await Sandbox.create({ ...tmpl, metadata: { suite: RUN, role: 'short' }, timeoutMs: 2000 }));
	eq(await s.isRunning(), true, 'running at first');
	await until(async () => !(await s.isRunning()), 15_000, 'the sandbox to expire');
	await rejects(Sandbox.getInfo(s.sandboxId), NotFoundError, 'getInfo after expiry');
}, { timeout: 30_000 });

test('timeout expiry pauses with lifecycle.onTimeout = pause; connect resumes', async () => {
	const s = created(await Sandbox.create({ ...tmpl, metadata: { suite: RUN, role: 'autopause' }, timeoutMs: 2000, lifecycle: { onTimeout: 'pause' } }));
	await s.files.write('/home/user/ap.txt', 'ap');
	await until(async () => (await Sandbox.getInfo(s.sandboxId)).state === 'paused', 15_000, 'auto-pause');
	const info = await Sandbox.getInfo(s.sandboxId);
	eq(info.lifecycle?.onTimeout, 'pause', 'lifecycle.onTimeout');
	const r = await Sandbox.connect(s.sandboxId, { timeoutMs: 60_000 });
	eq(await r.files.read('/home/user/ap.txt'), 'ap', 'file after auto-pause + resume');
	await r.kill();
}, { timeout: 30_000 });

test('kill() -> true; Sandbox.kill(id) again -> false; isRunning false', async () => {
	const k = S.extra[1];
	eq(await k.kill(), true, 'kill');
	eq(await Sandbox.kill(k.sandboxId), false, 'second kill (404)');
	eq(await k.isRunning(), false, 'isRunning after kill (502)');
	await rejects(Sandbox.getInfo(k.sandboxId), SandboxNotFoundError, 'getInfo after kill');
});

test('operations on a killed sandbox: commands -> SandboxNotFoundError, files -> TimeoutError', async () => {
	const k = S.extra[1];
	await rejects(k.commands.run('true'), SandboxNotFoundError, 'commands.run');
	await rejects(k.files.read('/home/user/x'), TimeoutError, 'files.read');
	await rejects(k.files.list('/home/user'), TimeoutError, 'files.list (RPC unavailable)');
});

// ------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------
test('unknown sandbox id -> NotFoundError (connect, getInfo, setTimeout); kill -> false', async () => {
	const bogus = 'inotasandbox000000000';
	await rejects(Sandbox.connect(bogus), SandboxNotFoundError, 'connect');
	await rejects(Sandbox.getInfo(bogus), NotFoundError, 'getInfo');
	await rejects(Sandbox.setTimeout(bogus, 10_000), NotFoundError, 'setTimeout');
	eq(await Sandbox.kill(bogus), false, 'kill');
});

test('bad API key -> AuthenticationError (create, list, getInfo)', async () => {
	const apiKey = 'e2b_this_key_is_wrong';
	await rejects(Sandbox.create({ ...tmpl, apiKey }), AuthenticationError, 'create');
	await rejects(Sandbox.list({ apiKey }).nextItems(), AuthenticationError, 'list');
	await rejects(Sandbox.getInfo(S.sbx.sandboxId, { apiKey }), AuthenticationError, 'getInfo');
});

test('create with timeout above the maximum -> SandboxError 400', async () => {
	const e = await rejects(Sandbox.create({ ...tmpl, timeoutMs: 10 * 86_400_000 }), SandboxError, 'create');
	eq(e.statusCode, 400, 'statusCode');
});

// ------------------------------------------------------------------------------------------
// Servers inside: getHost(port) through the daemon's preview listener (E2B_PREVIEW_PORT)
// ------------------------------------------------------------------------------------------
const previewPort = env.E2B_PREVIEW_PORT;
const previewSkip = previewPort ? null : 'set E2B_PREVIEW_PORT (serve --preview-listen) to test getHost';
// GET http://127.0.0.1:PORT/PATH with these headers: [status, body].
function get(port, path, headers) {
	return new Promise((resolve, reject) => {
		const q = http.request({ host: '127.0.0.1', port, path, headers, timeout: 10_000 }, (res) => {
			let b = '';
			res.on('data', (d) => (b += d));
			res.on('end', () => resolve([res.statusCode, b]));
		});
		q.on('error', reject);
		q.on('timeout', () => q.destroy(new Error('timeout')));
		q.end();
	});
}
async function serveInside(sbx, port) {
	await sbx.commands.run(`cd /tmp && echo inside-${port} >p.txt && exec python3 -m http.server ${port} --bind 127.0.0.1`, { background: true });
	await until(async () => (await sbx.commands.run(`curl -s -o /dev/null http://127.0.0.1:${port}/ && echo up || true`)).stdout.includes('up'), 15_000, 'the server inside');
}
test('getHost(port): PORT-ID.DOMAIN, which the preview listener routes to the port (public traffic)', async () => {
	await serveInside(S.sbx, 8000);
	const host = S.sbx.getHost(8000);
	eq(host, `8000-${S.sbx.sandboxId}.localhost:${previewPort}`, 'getHost(8000)');
	const [st, body] = await get(previewPort, '/p.txt', { Host: host });
	eq(st, 200, 'status'); eq(body.trim(), 'inside-8000', 'body');
}, { skip: previewSkip });
test('E2b-Sandbox-Port 8000 on the E2B listener reaches the same server', async () => {
	const u = new URL(env.E2B_SANDBOX_URL);
	const [st, body] = await get(u.port, '/p.txt', { 'E2b-Sandbox-Id': S.sbx.sandboxId, 'E2b-Sandbox-Port': '8000' });
	eq(st, 200, 'status'); eq(body.trim(), 'inside-8000', 'body');
}, { skip: previewSkip });
test('network.allowPublicTraffic false: a trafficAccessToken, needed as e2b-traffic-access-token', async () => {
	const p = created(await Sandbox.create({ ...tmpl, network: { allowPublicTraffic: false }, timeoutMs: 120_000 }));
	assert(typeof p.trafficAccessToken === 'string' && p.trafficAccessToken.length > 0, `trafficAccessToken: ${short(p.trafficAccessToken)}`);
	await serveInside(p, 8001);
	const host = p.getHost(8001);
	eq((await get(previewPort, '/p.txt', { Host: host }))[0], 401, 'without the token');
	eq((await get(previewPort, '/p.txt', { Host: host, 'e2b-traffic-access-token': 'f'.repeat(32) }))[0], 401, 'with a wrong token');
	const [st, body] = await get(previewPort, '/p.txt', { Host: host, 'e2b-traffic-access-token': p.trafficAccessToken });
	eq(st, 200, 'with the token'); eq(body.trim(), 'inside-8001', 'body');
	eq((await get(previewPort, '/p.txt', { Host: `8000-${p.sandboxId}.localhost:${previewPort}`, 'e2b-traffic-access-token': S.sbx.trafficAccessToken ?? 'x' }))[0], 401, "another sandbox's token");
}, { skip: previewSkip });

// ------------------------------------------------------------------------------------------
// @e2b/code-interpreter (port 49999)
// ------------------------------------------------------------------------------------------
const ciMode = env.E2B_TEST_CODE_INTERPRETER;
const ciSkip = ciMode === undefined ? 'set E2B_TEST_CODE_INTERPRETER=1 to test @e2b/code-interpreter (port 49999)'
	: ciMode === '0' ? 'E2B_TEST_CODE_INTERPRETER=0'
		: !existsSync(join(sdkDir, '@e2b', 'code-interpreter', 'package.json')) ? '@e2b/code-interpreter is not installed' : null;
test('code-interpreter: runCode result, stdout, state across calls, error', async () => {
	const ci = await import(pathToFileURL(join(sdkDir, '@e2b', 'code-interpreter', 'dist', 'index.mjs')).href);
	const c = created(await ci.Sandbox.create({ ...(env.E2B_TEST_CI_TEMPLATE ? { template: env.E2B_TEST_CI_TEMPLATE } : {}), timeoutMs: 120_000 }));
	const e1 = await c.runCode('x = 21\nprint("hi")\nx * 2');
	eq(e1.text, '42', 'main result text');
	eq(e1.logs.stdout.join(''), 'hi\n', 'stdout');
	const e2 = await c.runCode('x + 1');
	eq(e2.text, '22', 'state kept between runCode calls');
	const e3 = await c.runCode('1/0');
	eq(e3.error?.name, 'ZeroDivisionError', 'error name');
	await c.kill();
}, { skip: ciSkip, timeout: 60_000 });

// ------------------------------------------------------------------------------------------
for (const t of tests) {
	if (onlyRe && !onlyRe.test(t.name) && !t.critical) { tap(`ok - ${t.name} # SKIP not selected by E2B_TEST_ONLY`); continue; }
	if (skipRe && skipRe.test(t.name)) { tap(`ok - ${t.name} # SKIP matched E2B_TEST_SKIP`); continue; }
	if (t.skip) { tap(`ok - ${t.name} # SKIP ${t.skip}`); continue; }
	const t0 = Date.now();
	try {
		await withTimeout(t.fn(), t.timeout ?? 30_000);
		tap(`ok - ${t.name}`);
	} catch (e) {
		failed++;
		const msg = e instanceof Fail ? e.message : `${e?.name}: ${e?.message}`;
		tap(`not ok - ${t.name} (${String(msg).slice(0, 600).replace(/\n/g, '\\n')})`);
		if (env.E2B_TEST_VERBOSE && e?.stack) console.log(e.stack.split('\n').map((l) => `# ${l}`).join('\n'));
		if (t.critical) {
			for (const rest of tests.slice(tests.indexOf(t) + 1)) tap(`ok - ${rest.name} # SKIP a critical test failed`);
			break;
		}
	}
	if (env.E2B_TEST_VERBOSE) console.log(`# ${Date.now() - t0} ms`);
}

for (const id of S.cleanup) {
	try { await Sandbox.kill(id); } catch { /* best effort */ }
}
console.log(`1..${planned}`);
process.exit(failed ? 1 : 0);
