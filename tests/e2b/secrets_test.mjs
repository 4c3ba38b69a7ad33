// The REAL E2B JS SDK's secrets (Secret.create, update, getInfo, list, exists, destroy) and
// Sandbox.create's network rules with a ${e2b.secrets.NAME} header transform against an
// E2B-compatible server (docs/e2b.md "Secrets"): the proxy adds the stored value on the way
// out, the sandbox never sees it. Prints TAP lines; exits 0 when nothing failed.
//
//   E2B_API_URL=... E2B_SANDBOX_URL=... E2B_API_KEY=... E2B_OTHER_KEY=... \
//   E2B_TEST_TEMPLATE=<a template whose proxy allows E2B_TEST_HOST> E2B_TEST_HOST=svc.test:PORT \
//   E2B_TEST_VALUE=<the secret's value> node secrets_test.mjs
import { assert, done, eq, rejects, sdk, test } from './tap.mjs';

const env = process.env;
const { Sandbox, Secret } = await sdk('e2b secrets');
const [host, port] = env.E2B_TEST_HOST.split(':');
const other = { apiKey: env.E2B_OTHER_KEY };

let info;
await test('Secret.create: metadata back (lower-cased name, version 1), never the value', async () => {
	info = await Secret.create('Upstream-Token', env.E2B_TEST_VALUE, { metadata: { purpose: 'test' } });
	eq(info.name, 'upstream-token', 'name');
	eq(info.version, 1, 'version');
	eq(info.metadata.purpose, 'test', 'metadata');
	assert(info.secretId.startsWith('sec_'), `secretId ${info.secretId}`);
	assert(!JSON.stringify(info).includes(env.E2B_TEST_VALUE), 'the value came back');
});
await test('Secret.getInfo by name and by id; Secret.exists', async () => {
	eq((await Secret.getInfo('upstream-token')).secretId, info.secretId, 'by name');
	eq((await Secret.getInfo(info.secretId)).name, 'upstream-token', 'by id');
	eq(await Secret.exists('upstream-token'), true, 'exists');
	eq(await Secret.exists('no-such-secret'), false, 'exists (none)');
});
await test('Secret.create of a taken name: refused', async () => {
	await rejects(Secret.create('upstream-token', 'x'), /exists/, 'create twice');
});
await test('Secret.update: the next version, the value kept', async () => {
	eq((await Secret.update('upstream-token', env.E2B_TEST_VALUE)).version, 2, 'version');
});
await test('Secret.list: the key owner\'s secrets, paged', async () => {
	await Secret.create('second-one', 'v2');
	const p = Secret.list({ limit: 1 });
	const names = [];
	while (p.hasNext) names.push(...(await p.nextItems()).map((s) => s.name));
	eq(names.join(','), 'second-one,upstream-token', 'names');
});
await test('another key\'s owner sees none of them', async () => {
	eq(await Secret.exists('upstream-token', other), false, 'exists for the other key');
	eq(await Secret.destroy('upstream-token', other), false, 'destroy by the other key');
});

await test('Sandbox.create with a rule: the proxy adds the secret, the sandbox never holds it', async () => {
	const sbx = await Sandbox.create(env.E2B_TEST_TEMPLATE, {
		network: {
			allowOut: [env.E2B_TEST_HOST],
			denyOut: ['0.0.0.0/0'],
			rules: { [host]: [{ transform: { headers: { Authorization: `Bearer ${Secret.fill('upstream-token')}` } } }] },
		},
	});
	try {
		const r = await sbx.commands.run(`curl --noproxy '' -sS -m 10 -o /dev/null -w '%{http_code}' https://${host}:${port}/e2b; echo; env | grep -c -F '${env.E2B_TEST_VALUE.slice(0, 8)}' || true`);
		eq(r.stdout.trim().split('\n')[0], '200', 'status through the interception');
		eq(r.stdout.trim().split('\n')[1], '0', 'the value (its start) in the sandbox\'s environment');
	} finally {
		await sbx.kill();
	}
});
await test('a rule naming no secret of the owner: refused at create', async () => {
	await rejects(Sandbox.create(env.E2B_TEST_TEMPLATE, {
		network: { rules: { [host]: [{ transform: { headers: { Authorization: `Bearer ${Secret.fill('nope')}` } } }] } },
	}), /no secret "nope"/, 'create');
});
await test('a fixed header (no secret): refused, naming it', async () => {
	await rejects(Sandbox.create(env.E2B_TEST_TEMPLATE, {
		network: { rules: { [host]: [{ transform: { headers: { 'X-Fixed': 'v' } } }] } },
	}), /headers\.X-Fixed/, 'create');
});
await test('Secret.destroy: true, then false', async () => {
	eq(await Secret.destroy('upstream-token'), true, 'destroy');
	eq(await Secret.destroy('upstream-token'), false, 'destroy again');
});
// second-one is kept: the caller checks that the local owner does not see it.
done();
