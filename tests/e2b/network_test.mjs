// The REAL E2B JS SDK's updateNetwork() against an E2B-compatible server (docs/e2b.md,
// "Changing a sandbox's network"): a sandbox of a template whose proxy allows two loopback
// servers narrowed and restored live, never widened past its template. Prints TAP lines;
// exits 0 when nothing failed.
//
//   E2B_API_URL=... E2B_SANDBOX_URL=... E2B_API_KEY=... E2B_TEST_PORTS=P1,P2 \
//   E2B_TEST_TEMPLATE=<a template with a proxy allowing 127.0.0.1:P1 and :P2> node network_test.mjs
import { done, eq, rejects, sdk, test } from './tap.mjs';

const env = process.env;
const { Sandbox } = await sdk('e2b updateNetwork');

const [P1, P2] = env.E2B_TEST_PORTS.split(',');
const sbx = await Sandbox.create(env.E2B_TEST_TEMPLATE);
const codes = async () => {
	const one = async (p) => (await sbx.commands.run(`curl --noproxy '' -s -m 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:${p}/`)).stdout;
	return `${await one(P1)} ${await one(P2)}`;
};

await test('a sandbox of the template reaches both allowed servers', async () => eq(await codes(), '200 200', 'codes'));
await test('updateNetwork({denyOut: [the address]}): both denied at once (403)', async () => {
	await sbx.updateNetwork({ denyOut: ['127.0.0.1'] });
	eq(await codes(), '403 403', 'codes');
});
await test('updateNetwork({}): the template\'s network again', async () => {
	await sbx.updateNetwork({});
	eq(await codes(), '200 200', 'codes');
});
await test('updateNetwork({denyOut: [0.0.0.0/0], allowOut: [one]}): only that one', async () => {
	await sbx.updateNetwork({ denyOut: ['0.0.0.0/0'], allowOut: [`127.0.0.1:${P2}`] });
	eq(await codes(), '403 200', 'codes');
});
await test('Sandbox.updateNetwork(id, {allowInternetAccess: false}): nothing allowed', async () => {
	await Sandbox.updateNetwork(sbx.sandboxId, { allowInternetAccess: false });
	eq(await codes(), '403 403', 'codes');
});
await test('allowOut beyond the template: refused, nothing changed', async () => {
	await rejects(sbx.updateNetwork({ denyOut: ['0.0.0.0/0'], allowOut: ['example.com'] }), /does not widen/, 'allowOut example.com');
	eq(await codes(), '403 403', 'codes');
});
await test('rules with header transforms: refused naming rules', async () => {
	await rejects(sbx.updateNetwork({ rules: { 'example.com': [{ transform: { headers: { 'X-A': 'b' } } }] } }), /rules/, 'rules');
});
await test('address ranges other than everything: refused', async () => {
	await rejects(sbx.updateNetwork({ denyOut: ['10.0.0.0/8'] }), /address ranges/, '10.0.0.0/8');
});
await sbx.kill();
await test('an unknown sandbox: SandboxNotFoundError', async () => {
	await rejects(Sandbox.updateNetwork('0000000000000000', {}), /not found|doesn't exist/i, 'unknown');
});
done();
