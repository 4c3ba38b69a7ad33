// A real MCP client against `agentjail mcp`: the official TypeScript SDK's Client over
// StdioClientTransport spawns `agentjail mcp --create --rm`, lists the tools, calls each one
// and checks the results, then tries to get out through the file tools. Prints TAP lines.
//
//   node sdk_client.mjs SDK_DIR AGENTJAIL STATE_DIR NAME [EXTRA_MCP_ARGS...]
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [sdkDir, aj, stateDir, sbName, ...extra] = process.argv.slice(2);
const esm = (p) => import(pathToFileURL(`${sdkDir}/dist/esm/${p}`).href);
const { Client } = await esm('client/index.js');
const { StdioClientTransport } = await esm('client/stdio.js');

let failed = 0;
function check(name, cond, detail) {
	if (cond) {
		console.log(`ok - ${name}`);
	} else {
		failed++;
		const d = detail === undefined ? '' : ` (${String(detail).slice(0, 400).replace(/\n/g, '\\n')})`;
		console.log(`not ok - ${name}${d}`);
	}
}
const text = (r) => (r.content || []).map((c) => c.text).join('');
const first = (r) => (r.content && r.content[0] ? r.content[0].text : undefined);
const sha = (p) => { try { return createHash('sha256').update(readFileSync(p)).digest('hex'); } catch { return 'unreadable'; } };

const transport = new StdioClientTransport({
	command: aj,
	args: ['mcp', '--state-dir', stateDir, '--create', '--rm', '--name', sbName, ...extra],
	stderr: 'pipe',
});
let serverErr = '';
transport.stderr?.on('data', (d) => { serverErr += d; });
const client = new Client({ name: 'agentjail-sdk-test', version: '1.0.0' });

async function call(name, args, opts) {
	return client.callTool({ name, arguments: args }, undefined, opts);
}
async function shell(command, extraArgs = {}) {
	return call('shell', { command, ...extraArgs });
}

async function protocol() {
	await client.connect(transport);
	check('connect: initialize handshake with the SDK client', true);
	check('serverInfo.name is agentjail', client.getServerVersion()?.name === 'agentjail',
		JSON.stringify(client.getServerVersion()));
	check('capabilities: tools', client.getServerCapabilities()?.tools !== undefined);
	const { tools } = await client.listTools();
	const names = tools.map((t) => t.name).sort().join(',');
	check('tools/list: the seven tools', names === 'edit_file,list_dir,read_file,restore,shell,snapshot,write_file', names);
	check('tools/list: every tool has an object inputSchema and a description',
		tools.every((t) => t.inputSchema?.type === 'object' && t.description?.length > 40));
	const sh = tools.find((t) => t.name === 'shell');
	check('shell: command is required, timeout_seconds bounded',
		sh?.inputSchema.required?.includes('command') && sh?.inputSchema.properties.timeout_seconds?.maximum > 0);
	try {
		await call('no_such_tool', {});
		check('unknown tool: a JSON-RPC error', false, 'no error');
	} catch (e) {
		check('unknown tool: JSON-RPC error -32602', e.code === -32602, `${e.code} ${e.message}`);
	}
	check('ping', JSON.stringify(await client.ping()) === '{}');
}

async function shellTool() {
	let r = await shell('echo out; echo err >&2; exit 7');
	check('shell: exit code 7 (structured)', r.structuredContent?.exit_code === 7, JSON.stringify(r));
	check('shell: stdout and stderr apart', r.structuredContent?.stdout === 'out\n' && r.structuredContent?.stderr === 'err\n');
	check('shell: not a tool error (the command ran)', r.isError === false);
	check('shell: the text says the exit code', text(r).includes('[exit code 7]'), text(r));
	r = await shell('pwd; id -u', { cwd: '/tmp' });
	check('shell: cwd', r.structuredContent?.stdout.startsWith('/tmp\n'), text(r));
	r = await shell('pwd');
	check('shell: default cwd is the workspace', r.structuredContent?.stdout === '/home/user\n', text(r));
	r = await shell('true', { cwd: '/no/such/dir' });
	check('shell: a missing cwd is a tool error naming it', r.isError === true && text(r).includes('cwd'), text(r));
	const t0 = Date.now();
	r = await shell('sleep 30; echo not reached', { timeout_seconds: 1 });
	const dt = Date.now() - t0;
	check('shell: timeout gives exit 124', r.structuredContent?.exit_code === 124, JSON.stringify(r.structuredContent));
	check('shell: timeout names the limit', r.structuredContent?.limit === 'timeout' && text(r).includes('timeout'), text(r));
	check('shell: timeout returned within 10 s', dt < 10000, dt);
	r = await shell('head -c 400000 /dev/zero | tr "\\0" x');
	check('shell: output beyond 256 KiB is cut and said so',
		r.structuredContent?.stdout_truncated === true && r.structuredContent?.stdout.length === 262144 &&
		text(r).includes('stdout truncated'), JSON.stringify({ len: r.structuredContent?.stdout.length, t: r.structuredContent?.stdout_truncated }));
	r = await shell('printf "\\377\\376ok"');
	check('shell: bytes that are not UTF-8 arrive as U+FFFD', r.structuredContent?.stdout === '\ufffd\ufffdok', JSON.stringify(r.structuredContent?.stdout));
	r = await shell('kill -KILL $$');
	check('shell: killed by a signal: 128+9', r.structuredContent?.exit_code === 137 && r.structuredContent?.signal === 9, JSON.stringify(r.structuredContent));
	r = await call('shell', { command: 'true', timeout_seconds: 'soon' });
	check('shell: a wrong argument type is a tool error naming it', r.isError === true && text(r).includes('arguments.timeout_seconds'), text(r));
	r = await call('shell', {});
	check('shell: a missing command is a tool error naming it', r.isError === true && text(r).includes('arguments.command'), text(r));
	r = await call('shell', { command: 'true', colour: 'red' });
	check('shell: an unknown argument is a tool error naming it', r.isError === true && text(r).includes('arguments.colour'), text(r));
}

async function cancellation() {
	const ac = new AbortController();
	setTimeout(() => ac.abort('test'), 1000);
	const t0 = Date.now();
	let aborted = false;
	try {
		await call('shell', { command: 'sleep 38' }, { signal: ac.signal });
	} catch {
		aborted = true;
	}
	check('cancel: the client aborts a long call', aborted && Date.now() - t0 < 45000);
	const r = await shell('sleep 0.5; ps -eo args | grep -c "^sleep 38$"');
	check('cancel: the server killed the cancelled command, then serves the next call',
		r.structuredContent?.stdout === '0\n', text(r));
}

async function fileTools() {
	const content = 'line one\nzwei — два\n\ttabbed\n';
	let r = await call('write_file', { path: 'proj/src/a.txt', content });
	check('write_file: creates parent directories', r.isError === false, text(r));
	r = await call('read_file', { path: 'proj/src/a.txt' });
	check('read_file: exactly what was written', first(r) === content, JSON.stringify(first(r)));
	r = await shell('cat /home/user/proj/src/a.txt');
	check('write_file: the shell sees the same file', r.structuredContent?.stdout === content);
	r = await call('edit_file', { path: '/home/user/proj/src/a.txt', old_string: 'zwei', new_string: 'two' });
	check('edit_file: unique old_string replaced', r.isError === false, text(r));
	r = await call('read_file', { path: 'proj/src/a.txt' });
	check('edit_file: read back', first(r) === 'line one\ntwo — два\n\ttabbed\n', JSON.stringify(first(r)));
	await call('write_file', { path: 'dup.txt', content: 'x = 1\nx = 1\n' });
	r = await call('edit_file', { path: 'dup.txt', old_string: 'x = 1', new_string: 'x = 2' });
	check('edit_file: non-unique old_string is a tool error', r.isError === true && text(r).includes('2 times'), text(r));
	r = await call('read_file', { path: 'dup.txt' });
	check('edit_file: a refused edit changes nothing', first(r) === 'x = 1\nx = 1\n');
	r = await call('edit_file', { path: 'dup.txt', old_string: 'x = 1', new_string: 'x = 2', replace_all: true });
	check('edit_file: replace_all', r.isError === false && text(r).includes('2 occurrences'), text(r));
	r = await call('read_file', { path: 'dup.txt' });
	check('edit_file: replace_all read back', first(r) === 'x = 2\nx = 2\n');
	r = await call('edit_file', { path: 'dup.txt', old_string: 'absent', new_string: 'y' });
	check('edit_file: missing old_string is a tool error', r.isError === true && text(r).includes('not found'), text(r));
	r = await call('edit_file', { path: 'nofile.txt', old_string: 'a', new_string: 'b' });
	check('edit_file: missing file is a tool error', r.isError === true && text(r).includes('no such file'), text(r));
	await shell('seq 1 5 > five.txt; printf "a\\000b" > bin.dat; ln -s five.txt link5; mkfifo pipe');
	r = await call('read_file', { path: 'five.txt', offset: 2, limit: 2 });
	check('read_file: offset and limit in lines', first(r) === '2\n3\n', JSON.stringify(first(r)));
	check('read_file: says more lines follow', text(r).includes('offset=4'), text(r));
	r = await call('read_file', { path: 'bin.dat' });
	check('read_file: a binary file is refused', r.isError === true && text(r).includes('binary'), text(r));
	r = await call('read_file', { path: 'proj' });
	check('read_file: a directory is refused', r.isError === true && text(r).includes('directory'), text(r));
	r = await call('read_file', { path: 'pipe' });
	check('read_file: a fifo is refused without blocking', r.isError === true, text(r));
	r = await call('list_dir', { path: '.' });
	const ents = Object.fromEntries((r.structuredContent?.entries || []).map((e) => [e.name, e]));
	check('list_dir: types', ents['proj']?.type === 'dir' && ents['five.txt']?.type === 'file' && ents['link5']?.type === 'symlink',
		JSON.stringify(r.structuredContent));
	check('list_dir: sizes and link targets', ents['five.txt']?.size === 10 && ents['link5']?.target === 'five.txt');
	check('list_dir: text lists names', text(r).includes('proj/') && text(r).includes('link5 -> five.txt'), text(r));
	r = await call('list_dir', { path: 'no/such' });
	check('list_dir: a missing directory is a tool error', r.isError === true, text(r));
}

async function snapshots() {
	await call('write_file', { path: 'state.txt', content: 'before\n' });
	let r = await call('snapshot', { name: `${sbName}-s1` });
	check('snapshot: taken', r.isError === false && r.structuredContent?.name === `${sbName}-s1`, text(r));
	await call('write_file', { path: 'state.txt', content: 'after\n' });
	await call('write_file', { path: 'later.txt', content: 'made after the snapshot\n' });
	await shell('sleep 300 </dev/null >/dev/null 2>&1 &');
	r = await call('restore', { snapshot: `${sbName}-s1` });
	check('restore: done', r.isError === false, text(r));
	r = await call('read_file', { path: 'state.txt' });
	check('restore: the old content is back', first(r) === 'before\n', JSON.stringify(first(r)));
	r = await call('read_file', { path: 'later.txt' });
	check('restore: a file made after the snapshot is gone', r.isError === true, text(r));
	r = await shell('ps -eo args | grep -c "^sleep 300$"');
	check('restore: the sandbox restarted (background processes gone)', r.structuredContent?.stdout === '0\n', text(r));
	r = await call('restore', { snapshot: 'no-such-snapshot' });
	check('restore: an unknown snapshot is a tool error', r.isError === true && text(r).includes('no-such-snapshot'), text(r));
	r = await call('snapshot', { name: 'bad/name' });
	check('snapshot: a bad name is a tool error', r.isError === true && text(r).includes('arguments.name'), text(r));
}

// The file tools act inside the same boundary as the shell: links made inside resolve to the
// sandbox's own view of those paths, never to the host's.
async function escapes() {
	const hostShadow = sha('/etc/shadow'), hostPasswd = sha('/etc/passwd');
	await shell('ln -s /etc/shadow shadow; ln -s /root rootdir; ln -s /etc/passwd passwd; ln -s ../../../../../etc/shadow deep');
	let r = await call('read_file', { path: 'shadow' });
	check('escape: read_file through a link to /etc/shadow finds nothing', r.isError === true && text(r).includes('no such file'), text(r));
	r = await call('read_file', { path: 'deep' });
	check('escape: a relative ../ link to /etc/shadow finds nothing', r.isError === true, text(r));
	r = await call('read_file', { path: '../../../../etc/shadow' });
	check('escape: ../ in the path finds nothing', r.isError === true, text(r));
	r = await call('write_file', { path: 'shadow', content: 'pwned\n' });
	check('escape: write_file through the /etc/shadow link is refused', r.isError === true, text(r));
	r = await call('write_file', { path: 'rootdir/pwned', content: 'pwned\n' });
	check('escape: write_file into a link to /root is refused', r.isError === true, text(r));
	r = await call('list_dir', { path: 'rootdir' });
	check('escape: list_dir of a link to /root is refused', r.isError === true, text(r));
	r = await call('write_file', { path: 'passwd', content: 'pwned::0:0::/:/bin/sh\n' });
	check('escape: write_file through a link to /etc/passwd is refused (read-only inside)', r.isError === true, text(r));
	r = await call('read_file', { path: 'passwd' });
	check('escape: the sandbox reads its own /etc/passwd, not the host\'s',
		r.isError === false && first(r) !== readFileSync('/etc/passwd', 'utf8'), text(r).slice(0, 200));
	check('escape: the host /etc/shadow is unchanged', sha('/etc/shadow') === hostShadow);
	check('escape: the host /etc/passwd is unchanged', sha('/etc/passwd') === hostPasswd);
	check('escape: nothing was written to the host /root', !existsSync('/root/pwned'));
}

try {
	await protocol();
	await shellTool();
	await cancellation();
	await fileTools();
	await snapshots();
	await escapes();
} catch (e) {
	check(`the session went on without an exception`, false, `${e.stack}\nserver stderr: ${serverErr.slice(-1500)}`);
}
const t0 = Date.now();
await client.close();
check('close: the server exited within 4 s (before SIGKILL)', Date.now() - t0 < 4000, Date.now() - t0);
if (failed) console.error(`server stderr:\n${serverErr.slice(-3000)}`);
process.exit(0);
