// The sandbox cycle of bench/run-e2b.sh, timed from node: create a sandbox, run `true` in it,
// kill it, through the real E2B JS SDK against agentjail's E2B API, and the same cycle on
// agentjail's own HTTP API (docs/api.md) with node's fetch, so both pay the same client
// runtime (undici, keep-alive connections). The rows run alternately, one iteration of each in
// turn, so that a drift of the machine touches them alike.
//
//   node bench/e2b-cycle.mjs ITERATIONS WARMUP
//
// Environment: E2B_SDK_DIR (node_modules holding e2b), E2B_API_URL, E2B_SANDBOX_URL,
// E2B_API_KEY (the SDK's own configuration), AJ_API_URL and AJ_TOKEN (the HTTP API over TCP),
// AJ_POLICY (the policy of the native sandboxes: the E2B template's). Prints one JSON line per
// row: n, errors, the cycle's p50/p99/mean/min/max in ms, the same for each phase, and the first
// error seen.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';

const env = process.env;
const [iterations, warmup] = [Number(process.argv[2] || 30), Number(process.argv[3] || 3)];
const { Sandbox } = await import(pathToFileURL(join(env.E2B_SDK_DIR, 'e2b', 'dist', 'index.mjs')).href);
const sdkVersion = JSON.parse(readFileSync(join(env.E2B_SDK_DIR, 'e2b', 'package.json'), 'utf8')).version;
const policy = JSON.parse(env.AJ_POLICY || '{}');
const auth = { Authorization: `Bearer ${env.AJ_TOKEN}` };

// The SDK runs a command as `/bin/bash -l -c CMD` (docs/e2b-protocol.md 7.1): the native row
// "same command" runs exactly that, the other the bare `true` of docs/api.md.
const BASH_TRUE = ['/bin/bash', '-l', '-c', 'true'];

async function e2bCycle(t) {
	const sbx = await Sandbox.create('base', { timeoutMs: 300_000 });
	t.mark('create');
	try {
		const r = await sbx.commands.run('true');
		if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`);
		t.mark('run');
	} finally {
		await sbx.kill();
	}
	t.mark('kill');
}

async function call(method, path, body) {
	const res = await fetch(env.AJ_API_URL + path, {
		method,
		headers: body ? { ...auth, 'Content-Type': 'application/json' } : auth,
		body: body ? JSON.stringify(body) : undefined,
	});
	const text = await res.text(); // the whole body: a stream ends with its exit line
	if (res.status >= 300) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`);
	return text;
}

function nativeCycle(argv) {
	return async (t) => {
		const sb = JSON.parse(await call('POST', '/v1/sandboxes', { policy }));
		t.mark('create');
		try {
			const lines = (await call('POST', `/v1/sandboxes/${sb.id}/exec`, { argv })).trim().split('\n');
			const exit = JSON.parse(lines[lines.length - 1]);
			if (exit.type !== 'exit' || exit.exit_code !== 0) throw new Error(`exec: ${lines.at(-1)}`);
			t.mark('run');
		} finally {
			await call('DELETE', `/v1/sandboxes/${sb.id}?force=true`);
		}
		t.mark('kill');
	};
}

const rows = [
	{ name: `e2b: SDK ${sdkVersion}, Sandbox.create + commands.run('true') + kill`, fn: e2bCycle },
	{ name: 'api-bash: fetch, create + exec bash -l -c true + delete', fn: nativeCycle(BASH_TRUE) },
	{ name: 'api-true: fetch, create + exec true + delete', fn: nativeCycle(['true']) },
];
for (const row of rows) row.samples = { cycle: [], create: [], run: [], kill: [] };

function timer() {
	const t0 = performance.now();
	let last = t0;
	const phases = {};
	return {
		phases,
		mark(name) {
			const now = performance.now();
			phases[name] = now - last;
			last = now;
		},
		total: () => performance.now() - t0,
	};
}

for (let i = 0; i < warmup + iterations; i++) {
	for (const row of rows) {
		const t = timer();
		try {
			await row.fn(t);
		} catch (e) {
			row.errors = (row.errors || 0) + 1;
			row.firstError ??= String(e && e.message ? e.message : e).slice(0, 300);
			continue;
		}
		if (i < warmup) continue;
		row.samples.cycle.push(t.total());
		for (const [k, v] of Object.entries(t.phases)) row.samples[k].push(v);
	}
}

// Nearest-rank percentiles: with 30 samples p99 is the largest one.
function stats(v) {
	const s = [...v].sort((a, b) => a - b);
	const pct = (p) => s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
	const r3 = (x) => (x === undefined ? null : Math.round(x * 1000) / 1000);
	return {
		p50: r3(pct(50)), p99: r3(pct(99)), mean: r3(s.reduce((a, b) => a + b, 0) / (s.length || 1)),
		min: r3(s[0]), max: r3(s[s.length - 1]),
	};
}

for (const row of rows) {
	const out = { row: row.name, n: row.samples.cycle.length, errors: row.errors || 0 };
	for (const [k, v] of Object.entries(row.samples)) out[k] = stats(v);
	if (row.firstError) out.first_error = row.firstError;
	console.log(JSON.stringify(out));
}
