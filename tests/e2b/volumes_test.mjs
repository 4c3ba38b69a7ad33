// The REAL E2B JS SDK's Volume class (create, list, getInfo, connect, destroy; the volume
// content calls: writeFile, readFile, makeDir, list, getInfo, exists, updateMetadata, remove)
// and Sandbox.create's volumeMounts against an E2B-compatible server (docs/e2b.md "Volumes"):
// a sandbox sees what the SDK wrote and the SDK what the sandbox wrote; a link the sandbox
// planted is never followed; another key's owner does not see the volume. Prints TAP lines;
// exits 0 when nothing failed.
//
//   E2B_API_URL=... E2B_SANDBOX_URL=... E2B_VOLUME_API_URL=... E2B_API_KEY=... \
//   E2B_OTHER_KEY=... node volumes_test.mjs
import { assert, done, eq, rejects, sdk, test } from './tap.mjs';

const env = process.env;
const { Sandbox, Volume } = await sdk('e2b volumes');
const other = { apiKey: env.E2B_OTHER_KEY };

let vol;
await test('Volume.create: an id, the name, a token for its content', async () => {
	vol = await Volume.create('e2b-data');
	eq(vol.name, 'e2b-data', 'name');
	assert(vol.volumeId.startsWith('vol_'), `volumeId ${vol.volumeId}`);
	assert(vol.token && vol.token.length > 32, 'a token');
});
await test('Volume.create of a taken name: refused', async () => {
	await rejects(Volume.create('e2b-data'), /exists/, 'create twice');
});
await test('Volume.list and Volume.getInfo: the key owner\'s', async () => {
	const list = await Volume.list();
	assert(list.some((v) => v.volumeId === vol.volumeId && v.name === 'e2b-data'), JSON.stringify(list));
	eq((await Volume.getInfo(vol.volumeId)).name, 'e2b-data', 'getInfo');
});
await test('another key\'s owner: not found, not listed', async () => {
	await rejects(Volume.getInfo(vol.volumeId, other), /not found/i, 'getInfo');
	assert(!(await Volume.list(other)).some((v) => v.volumeId === vol.volumeId), 'listed');
	eq(await Volume.destroy(vol.volumeId, other), false, 'destroy by another owner');
});
await test('writeFile, readFile, getInfo: the bytes, a file entry', async () => {
	const c = await Volume.connect(vol.volumeId);
	const e = await c.writeFile('/notes/hello.txt', 'hello volume', { force: true });
	eq(e.type, 'file', 'type');
	eq(e.size, 12, 'size');
	eq(await c.readFile('/notes/hello.txt'), 'hello volume', 'readFile');
	eq((await c.getInfo('/notes')).type, 'directory', 'parent made by force');
});
await test('makeDir, list, exists, updateMetadata, remove', async () => {
	const c = await Volume.connect(vol.volumeId);
	eq((await c.makeDir('/made')).name, 'made', 'makeDir');
	const names = (await c.list('/')).map((e) => e.name).sort();
	eq(JSON.stringify(names), JSON.stringify(['made', 'notes']), 'list /');
	eq((await c.list('/', { depth: 2 })).some((e) => e.path === '/notes/hello.txt'), true, 'depth 2');
	eq(await c.exists('/made'), true, 'exists');
	eq(await c.exists('/nope'), false, 'exists (none)');
	eq((await c.updateMetadata('/notes/hello.txt', { mode: 0o600 })).mode, 0o600, 'mode');
	await c.remove('/made');
	eq(await c.exists('/made'), false, 'removed');
	await rejects(c.readFile('/nope'), /not found/i, 'readFile of nothing');
});
await test('paths out of the volume are refused', async () => {
	const c = await Volume.connect(vol.volumeId);
	await rejects(c.readFile('/../../../etc/passwd'), /./, 'readFile ../');
	await rejects(c.writeFile('/../escape', 'x'), /./, 'writeFile ../');
});
await test('a wrong token, or another volume\'s: refused', async () => {
	const c = new Volume(vol.volumeId, vol.name, 'x'.repeat(40), vol.domain, vol.debug, vol.proxy);
	await rejects(c.readFile('/notes/hello.txt'), /token/i, 'readFile with a made-up token');
	const b = await Volume.create('e2b-other');
	const cross = new Volume(vol.volumeId, vol.name, b.token, vol.domain, vol.debug, vol.proxy);
	await rejects(cross.readFile('/notes/hello.txt'), /token/i, 'another volume\'s token');
	eq(await Volume.destroy(b.volumeId), true, 'destroy the other');
});
let sbx;
await test('Sandbox.create with volumeMounts: the sandbox reads and writes the volume', async () => {
	sbx = await Sandbox.create({ volumeMounts: { '/mnt/data': vol } });
	const r = await sbx.commands.run('cat /mnt/data/notes/hello.txt && echo from-sandbox >/mnt/data/s.txt && ln -s /etc /mnt/data/etc-link');
	eq(r.stdout, 'hello volume', 'the sandbox read what the SDK wrote');
	const c = await Volume.connect(vol.volumeId);
	eq(await c.readFile('/s.txt'), 'from-sandbox\n', 'the SDK reads what the sandbox wrote');
	eq((await c.getInfo('/etc-link')).type, 'symlink', 'a link is a link');
	await rejects(c.readFile('/etc-link/passwd'), /./, 'reading through the sandbox\'s link');
	await rejects(c.writeFile('/etc-link/x', 'x'), /(link|out of the volume)/, 'writing through the sandbox\'s link');
	await rejects(c.updateMetadata('/etc-link', { mode: 0o777 }), /link has no mode/, 'chmod of the sandbox\'s link');
	await rejects(c.writeFile('/etc-link', 'x'), /./, 'writing onto the sandbox\'s link');
	await sbx.commands.run('mkfifo /mnt/data/pipe');
	await rejects(c.writeFile('/pipe', 'x'), /write "\/pipe"/, 'writing onto a FIFO the sandbox made');
	const info = await Sandbox.getInfo(sbx.sandboxId);
	eq(JSON.stringify(info.volumeMounts), JSON.stringify([{ name: 'e2b-data', path: '/mnt/data' }]), 'getInfo\'s volumeMounts');
});
await test('Volume.destroy while a sandbox mounts it: refused; after: true, then false', async () => {
	await rejects(Volume.destroy(vol.volumeId), /mounted|running/i, 'destroy in use');
	await sbx.kill();
	eq(await Volume.destroy(vol.volumeId), true, 'destroy');
	eq(await Volume.destroy(vol.volumeId), false, 'destroy again');
});
await test('Sandbox.create with an unknown volume: refused', async () => {
	await rejects(Sandbox.create({ volumeMounts: { '/mnt/x': 'no-such-volume' } }), /no volume/, 'create');
});
done();
