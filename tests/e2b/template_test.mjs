// The REAL E2B JS SDK's Template builder against an E2B-compatible server (docs/e2b.md,
// "Building templates"): Template.build() with files uploaded by hash, every step kind the
// SDK makes, build logs, a failing step's BuildError, the cache on a second build, names and
// tags, fromTemplate, then Sandbox.create() on the result with its start command up (the
// ready command waited on). Prints TAP lines; exits 0 when nothing failed.
//
//   E2B_API_URL=... E2B_SANDBOX_URL=... E2B_API_KEY=... E2B_API_KEY2=<another owner's key> \
//   E2B_TEST_BASE=<an image of the store with bash> node tests/e2b/template_test.mjs
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, done, eq, sdk, test } from './tap.mjs';

const env = process.env;
const { Sandbox, Template, waitForFile, BuildError } = await sdk('e2b Template');

const key2 = { apiKey: env.E2B_API_KEY2 };
const base = env.E2B_TEST_BASE;
const ctx = mkdtempSync(join(tmpdir(), 'aj-e2b-tpl-'));
mkdirSync(join(ctx, 'app', 'lib'), { recursive: true });
writeFileSync(join(ctx, 'app', 'hello.txt'), 'hello from the context\n');
writeFileSync(join(ctx, 'app', 'lib', 'tool.sh'), '#!/bin/sh\necho tool ran\n', { mode: 0o755 });
writeFileSync(join(ctx, 'notes.txt'), 'notes v1\n');
const NAME = `tpl-${Date.now().toString(36)}`;
const logs = [];
const onBuildLogs = (l) => logs.push(String(l.message ?? l));

const template = () => Template({ fileContextPath: ctx })
	.fromImage(base)
	.copy('app', '/app/', { user: 'user' })
	.copy('notes.txt', '/opt/notes.txt', { mode: 0o640 })
	.runCmd('cat /app/hello.txt > /home/user/copied && id -un > /home/user/whoami')
	.runCmd('id -un > /opt/rootwho', { user: 'root' })
	.runCmd('echo "a RUN step\'s output: $((6 * 7))"; echo "and its stderr" >&2')
	.setEnvs({ GREETING: 'hi there', EMPTY: '' })
	.makeDir('/home/user/work')
	.setWorkdir('/home/user/work')
	.setStartCmd('sh -c "sleep 1; echo up > /tmp/ready; exec sleep 100000"', waitForFile('/tmp/ready'));

let info;
await test('Template.build: a template with COPY, RUN (as the user and as root), ENV, WORKDIR, a start and a ready command', async () => {
	info = await Template.build(template(), `${NAME}:v1`, { onBuildLogs });
	assert(info.templateId === NAME, `templateId ${info.templateId}`);
	assert(/^[0-9a-f-]{36}$/.test(info.buildId), `buildId ${info.buildId}`);
});
await test('Template.build: the build log streams every step', async () => {
	const all = logs.join('\n');
	assert(/Uploaded 'app'/.test(all) && /Uploaded 'notes.txt'/.test(all), `uploads: ${all.slice(0, 300)}`);
	assert(/STEP \d+\/\d+: COPY/.test(all) && /STEP \d+\/\d+: RUN --user=root id -un/.test(all), `steps: ${all.slice(0, 800)}`);
	assert(logs.includes("a RUN step's output: 42") && logs.includes('and its stderr'), `a RUN's output: ${all.slice(0, 1500)}`);
});

let sbx;
await test('Sandbox.create(name:tag): the start command is up when create returns (ready waited on)', async () => {
	sbx = await Sandbox.create(`${NAME}:v1`);
	const r = await sbx.commands.run('cat /tmp/ready');
	eq(r.stdout, 'up\n', '/tmp/ready');
});
await test('the template\'s files, owners, modes, users and environment are there', async () => {
	eq((await sbx.commands.run('cat /home/user/copied')).stdout, 'hello from the context\n', 'copied by RUN');
	eq((await sbx.commands.run('cat /home/user/whoami')).stdout, 'user\n', 'RUN\'s default user');
	eq((await sbx.commands.run('cat /opt/rootwho')).stdout, 'root\n', 'RUN as root');
	// One id mapped (rootless without subordinate ids): every file is the sandbox user's.
	eq((await sbx.commands.run('stat -c %U:%a /app/hello.txt /app/lib/tool.sh /opt/notes.txt')).stdout,
		`user:644\nuser:755\n${env.E2B_TEST_SINGLE_ID === '1' ? 'user' : 'root'}:640\n`, 'COPY owners and modes');
	eq((await sbx.commands.run('echo "$GREETING"')).stdout, 'hi there\n', 'ENV');
	eq((await sbx.commands.run('test -d /home/user/work && echo yes')).stdout, 'yes\n', 'makeDir');
	eq((await sbx.commands.run('sh /app/lib/tool.sh')).stdout, 'tool ran\n', 'a copied script');
});
if (sbx) await sbx.kill().catch(() => {});

await test('Template.build again: uploads and steps come from the cache', async () => {
	logs.length = 0;
	await Template.build(template(), `${NAME}:v2`, { onBuildLogs });
	const all = logs.join('\n');
	assert(/Skipping upload of 'app', already cached/.test(all), `uploads: ${all.slice(0, 300)}`);
	const cached = (all.match(/--> cached/g) || []).length;
	assert(cached >= 4, `cached steps: ${cached} in ${all.slice(0, 1200)}`);
});
await test('a changed file is uploaded again and its COPY rebuilt', async () => {
	writeFileSync(join(ctx, 'notes.txt'), 'notes, second version\n');
	logs.length = 0;
	await Template.build(template(), `${NAME}:v3`, { onBuildLogs });
	const all = logs.join('\n');
	assert(/Uploaded 'notes.txt'/.test(all) && /Skipping upload of 'app'/.test(all), all.slice(0, 400));
	const s = await Sandbox.create(`${NAME}:v3`);
	try { eq((await s.commands.run('stat -c %s /opt/notes.txt')).stdout, '22\n', 'the new file (root\'s, 0640)'); } finally { await s.kill().catch(() => {}); }
});

await test('Template.exists, assignTags, getTags, removeTags', async () => {
	eq(await Template.exists(NAME), true, 'exists');
	eq(await Template.exists(`${NAME}-nope`), false, 'a name nobody built');
	const t = await Template.assignTags(`${NAME}:v1`, ['stable', 'prod']);
	eq(t.buildId, info.buildId, 'the tagged build');
	const tags = (await Template.getTags(NAME)).map((x) => `${x.tag}=${x.buildId === info.buildId}`).sort();
	for (const want of ['prod=true', 'stable=true', 'v1=true', 'v2=false'])
		assert(tags.includes(want), `tags ${JSON.stringify(tags)} lack ${want}`);
	const s = await Sandbox.create(`${NAME}:stable`);
	await s.kill().catch(() => {});
	await Template.removeTags(NAME, 'prod');
	assert(!(await Template.getTags(NAME)).some((x) => x.tag === 'prod'), 'prod removed');
});

await test('another owner\'s key sees none of it', async () => {
	eq(await Template.exists(NAME, key2), false, 'exists for the other key');
	let err;
	try { await Sandbox.create(`${NAME}:v1`, key2); } catch (e) { err = e; }
	assert(err && /not available|not found/i.test(String(err.message)), `create: ${err}`);
	err = undefined;
	try { await Template.getTags(NAME, key2); } catch (e) { err = e; }
	assert(err, 'getTags for the other key');
});

await test('fromTemplate: a template on a template', async () => {
	const t = Template({ fileContextPath: ctx }).fromTemplate(`${NAME}:v1`).runCmd('echo more > /home/user/more');
	await Template.build(t, `${NAME}-child`);
	const s = await Sandbox.create(`${NAME}-child`);
	try {
		eq((await s.commands.run('cat /home/user/copied /home/user/more')).stdout, 'hello from the context\nmore\n', 'both layers');
		eq((await s.commands.run('cat /tmp/ready')).stdout, 'up\n', 'the base\'s start command');
	} finally { await s.kill().catch(() => {}); }
});

await test('a failing step: BuildError with the exit code, the step\'s stack, nothing named', async () => {
	let err;
	try {
		await Template.build(Template({ fileContextPath: ctx }).fromImage(base).runCmd('echo about to fail; exit 3'), `${NAME}-bad`);
	} catch (e) { err = e; }
	assert(err instanceof BuildError, `expected BuildError, got ${err}`);
	assert(/exited with 3/.test(err.message), err.message);
	assert(/template_test\.mjs/.test(String(err.stack)), `the stack names the caller: ${err.stack}`);
	eq(await Template.exists(`${NAME}-bad`), false, 'the failed template exists');
});

await test('a RUN has no network by default (the build policy is the base template\'s)', async () => {
	let err;
	try {
		await Template.build(Template().fromImage(base).runCmd(`nc -w 3 127.0.0.1 ${env.E2B_TEST_PORT || 9} </dev/null || exit 7`), `${NAME}-net`);
	} catch (e) { err = e; }
	assert(err instanceof BuildError && /exited with 7/.test(err.message), `${err}`);
});

rmSync(ctx, { recursive: true, force: true });
done();
