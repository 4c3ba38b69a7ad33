// Negative checks: what the real E2B JS SDK does when a server gets the details of
// docs/e2b-protocol.md wrong. A tiny in-process Node HTTP server plays a sandbox that answers
// each call in one deliberately right or wrong way; each TAP line asserts the SDK's reaction.
// It documents *why* the spec insists on those details (JSON error bodies with numeric codes,
// end-stream frames, HTTP 200 for unary success, ...). No agentjail involved.
//
//   node tests/e2b/sdk_strictness.mjs [SDK_NODE_MODULES]   (default build/npm-e2b/node_modules)
import http from 'node:http';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const sdkDir = process.argv[2] || process.env.E2B_SDK_DIR || join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'build', 'npm-e2b', 'node_modules');
if (!existsSync(join(sdkDir, 'e2b', 'package.json'))) {
	console.log(`ok - sdk strictness checks # SKIP e2b is not installed in ${sdkDir} (tests/e2b/setup.sh)`);
	process.exit(0);
}
const { Sandbox, SandboxError, CommandExitError } = await import(pathToFileURL(join(sdkDir, 'e2b', 'dist', 'index.mjs')).href);

let mode = '';
const frame = (flags, o) => {
	const b = Buffer.from(typeof o === 'string' ? o : JSON.stringify(o));
	const h = Buffer.alloc(5); h[0] = flags; h.writeUInt32BE(b.length, 1);
	return Buffer.concat([h, b]);
};
const json = (res, status, obj) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(obj)); };
const srv = http.createServer((req, res) => {
	req.resume();
	req.on('end', () => {
		const p = req.url.split('?')[0];
		if (p === '/v2/sandboxes') return json(res, 201, { sandboxID: 'istrict', templateID: 'base', clientID: 'x', envdVersion: '0.5.7', envdAccessToken: 't' });
		if (p === '/sandboxes/istrict' && req.method === 'DELETE') {
			if (mode === 'json404') return json(res, 404, { code: 404, message: 'not found' });
			res.writeHead(404); return res.end();
		}
		if (p === '/sandboxes/istrict/pause') {
			if (mode === 'json409') return json(res, 409, { code: 409, message: 'already paused' });
			res.writeHead(409, { 'content-type': 'text/plain' }); return res.end('already paused');
		}
		if (p === '/filesystem.Filesystem/Stat') {
			if (mode === 'bare404') { res.writeHead(404, { 'content-type': 'text/plain' }); return res.end('nope'); }
			if (mode === 'json404') return json(res, 404, { code: 'not_found', message: 'file not found' });
			if (mode === '204') { res.writeHead(204); return res.end(); }
			return json(res, 200, {});
		}
		if (p === '/process.Process/Start') {
			res.writeHead(200, { 'content-type': 'application/connect+json' });
			if (mode === 'nostart') res.write(frame(0, { event: { data: { stdout: 'aGkK' } } }));
			res.write(frame(0, { event: { start: { pid: 7 } } }));
			res.write(frame(0, { event: { keepalive: {} } }));
			res.write(frame(0, { event: { data: { stdout: Buffer.from('hi\n').toString('base64') } } }));
			if (mode !== 'noendevent') res.write(frame(0, { event: { end: mode === 'exit3' ? { exitCode: 3, exited: true, status: 'exit status 3', error: 'exit status 3' } : { exited: true, status: 'exit status 0' } } }));
			if (mode === 'noendstream') return res.end();
			res.write(frame(2, '{}'));
			if (mode === 'bodyopen') return; // never end the HTTP body
			return res.end();
		}
		res.writeHead(500); res.end();
	});
});
await new Promise((r) => srv.listen(0, '127.0.0.1', r));
process.env.E2B_API_URL = process.env.E2B_SANDBOX_URL = `http://127.0.0.1:${srv.address().port}`;
process.env.E2B_API_KEY = 'e2b_strict';
const s = await Sandbox.create();

let failed = 0;
async function check(name, m, fn, expect) {
	mode = m;
	let r;
	try {
		r = { value: await Promise.race([fn(), new Promise((_, rej) => setTimeout(() => rej(Object.assign(new Error('did not settle within 3 s'), { name: 'Hang' })), 3000))]) };
	} catch (e) { r = { error: e }; }
	const ok = expect(r);
	if (!ok) failed++;
	const got = r.error ? `${r.error.name}: ${r.error.message.slice(0, 100)}` : JSON.stringify(r.value);
	console.log(`${ok ? 'ok' : 'not ok'} - ${name} (${got})`);
}
const throwsName = (n) => (r) => r.error?.name === n;

await check('stream with keepalive + end-stream {}: run() resolves', 'ok', () => s.commands.run('x'), (r) => r.value?.stdout === 'hi\n' && r.value.exitCode === 0);
await check('end.exitCode 3 -> CommandExitError', 'exit3', () => s.commands.run('x'), (r) => r.error instanceof CommandExitError && r.error.exitCode === 3);
await check('no end-stream frame -> SandboxError "missing EndStreamResponse"', 'noendstream', () => s.commands.run('x'), (r) => r.error instanceof SandboxError && /missing EndStreamResponse/.test(r.error.message));
await check('end-stream but HTTP body left open -> wait() never settles', 'bodyopen', () => s.commands.run('x'), throwsName('Hang'));
await check('no end event -> SandboxError "Process exited without a result"', 'noendevent', () => s.commands.run('x'), (r) => /without a result/.test(r.error?.message ?? ''));
await check('data before start -> "Expected start event"', 'nostart', () => s.commands.run('x'), (r) => /Expected start event/.test(r.error?.message ?? ''));
await check('unary not_found with JSON body -> exists() false', 'json404', () => s.files.exists('/x'), (r) => r.value === false);
await check('unary bare 404 (no JSON) -> exists() throws (unimplemented)', 'bare404', () => s.files.exists('/x'), (r) => r.error instanceof SandboxError && /unimplemented/.test(r.error.message));
await check('unary success as 204 -> throws', '204', () => s.files.getInfo('/x'), (r) => r.error instanceof SandboxError && /HTTP 204/.test(r.error.message));
await check('DELETE 404 {"code":404} -> kill() false', 'json404', () => s.kill(), (r) => r.value === false);
await check('DELETE 404 empty body -> kill() throws SandboxError', 'empty404', () => s.kill(), (r) => r.error instanceof SandboxError && r.error.statusCode === 404);
await check('pause 409 {"code":409} -> pause() false', 'json409', () => s.pause(), (r) => r.value === false);
await check('pause 409 text body -> pause() throws SandboxError', 'text409', () => s.pause(), (r) => r.error instanceof SandboxError && r.error.statusCode === 409);

srv.closeAllConnections?.();
srv.close();
console.log('1..13');
process.exit(failed ? 1 : 0);
