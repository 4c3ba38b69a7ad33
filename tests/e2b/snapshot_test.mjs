// The REAL E2B JS SDK's snapshots and forks against an E2B-compatible server (docs/e2b.md,
// "Snapshots and forks"): createSnapshot, listSnapshots, Sandbox.create(snapshotId),
// deleteSnapshot, fork and Sandbox.fork({count}); and getMetrics (the same hosts: those with a
// cgroup of their own for each sandbox). Prints TAP lines; exits 0 when nothing failed.
// Environment as tests/e2b/e2b_sdk_test.mjs (E2B_TEST_TEMPLATE optional).
import { assert, done, eq, rejects, sdk, test } from './tap.mjs';

const env = process.env;
const { Sandbox } = await sdk('e2b snapshots');

const tmpl = env.E2B_TEST_TEMPLATE ? [env.E2B_TEST_TEMPLATE] : [];
const sbx = await Sandbox.create(...tmpl);
const made = [sbx];
let snap;
await test('createSnapshot(): an id and its name', async () => {
	await sbx.files.write('/home/user/state.txt', 'v1');
	snap = await sbx.createSnapshot({ name: 'before-change' });
	assert(typeof snap.snapshotId === 'string' && snap.snapshotId.length > 0, `id ${snap.snapshotId}`);
	eq(snap.names[0], 'before-change', 'name');
	await sbx.files.write('/home/user/state.txt', 'v2');
});
await test('listSnapshots({sandboxId}): the snapshot', async () => {
	const items = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems();
	assert(items.some((s) => s.snapshotId === snap.snapshotId), JSON.stringify(items));
});
await test('Sandbox.create(snapshotId): the files as they were', async () => {
	const s = await Sandbox.create(snap.snapshotId);
	made.push(s);
	eq(await s.files.read('/home/user/state.txt'), 'v1', 'state.txt');
	eq((await s.commands.run('echo ok')).stdout, 'ok\n', 'a command');
});
await test('sandbox.fork(): a running copy of the files now', async () => {
	const forks = await sbx.fork();
	eq(forks.length, 1, 'forks');
	assert(!(forks[0] instanceof Error), String(forks[0]));
	made.push(forks[0]);
	eq(await forks[0].files.read('/home/user/state.txt'), 'v2', 'the fork\'s file');
	await forks[0].files.write('/home/user/state.txt', 'fork');
	eq(await sbx.files.read('/home/user/state.txt'), 'v2', 'the source is apart');
});
await test('Sandbox.fork(id, {count: 2, timeoutMs}): two, with their own timeout', async () => {
	const forks = await Sandbox.fork(sbx.sandboxId, { count: 2, timeoutMs: 120000 });
	eq(forks.length, 2, 'forks');
	for (const f of forks) {
		assert(!(f instanceof Error), String(f));
		made.push(f);
		const info = await f.getInfo();
		const left = info.endAt.getTime() - Date.now();
		assert(left > 60000 && left <= 121000, `endAt in ${left} ms`);
	}
});
await test('deleteSnapshot: refused while a sandbox is made from it, then true, then false', async () => {
	await rejects(Sandbox.deleteSnapshot(snap.snapshotId), /in use/, 'in use');
	await made[1].kill();
	eq(await Sandbox.deleteSnapshot(snap.snapshotId), true, 'deleted');
	eq(await Sandbox.deleteSnapshot(snap.snapshotId), false, 'again');
});
await test('an unknown sandbox: createSnapshot and fork are not found', async () => {
	await rejects(Sandbox.createSnapshot('0000000000000000'), /not found/i, 'createSnapshot');
	await rejects(Sandbox.fork('0000000000000000'), /not found|doesn't exist/i, 'fork');
});
await test('getMetrics(): samples of the sandbox\'s own memory and CPU', async () => {
	await sbx.commands.run('python3 -c "b = bytearray(64 << 20); b[::4096] = b\'x\' * len(b[::4096]); import time; time.sleep(7)"');
	const ms = await sbx.getMetrics();
	assert(ms.length >= 1, `samples: ${JSON.stringify(ms)}`);
	const top = Math.max(...ms.map((x) => x.memUsed));
	assert(top > 60 << 20 && top < 1 << 30, `memUsed at most ${top}`);
	assert(ms.every((x) => x.timestamp instanceof Date && x.cpuCount >= 1 && x.memTotal > top), JSON.stringify(ms[0]));
	const later = await sbx.getMetrics({ start: new Date(Date.now() + 3600e3) });
	eq(later.length, 0, 'samples from an hour ahead');
});
for (const s of made) await s.kill().catch(() => {});
done();
