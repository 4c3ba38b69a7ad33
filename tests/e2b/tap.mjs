// What the SDK test files of tests/e2b share (not e2b_sdk_test.mjs, which has its own knobs):
// the real SDK loaded from E2B_SDK_DIR (or the file skipped with the reason when it is not
// installed), TAP lines, and the checks. Each file ends with done().
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';

const here = dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.E2B_SDK_DIR || join(here, '..', '..', 'build', 'npm-e2b', 'node_modules');
let planned = 0;
let failed = 0;
const tap = (line) => { planned++; console.log(line); };

export class Fail extends Error {}
export const assert = (c, m) => { if (!c) throw new Fail(m); };
export const eq = (a, e, what) => {
	if (a !== e) throw new Fail(`${what}: expected ${JSON.stringify(e)}, got ${JSON.stringify(a)}`);
};
export async function test(name, fn) {
	try {
		await fn();
		tap(`ok - ${name}`);
	} catch (e) {
		failed++;
		tap(`not ok - ${name} (${String(e && e.message ? e.message : e).replace(/\n/g, ' ').slice(0, 600)})`);
	}
}
// The promise must fail with a message matching re.
export async function rejects(p, re, what) {
	let err;
	try { await p; } catch (e) { err = e; }
	if (!err) throw new Fail(`${what}: it succeeded`);
	if (!re.test(String(err.message))) throw new Fail(`${what}: ${err.message}`);
	return err;
}
export function done() {
	console.log(`1..${planned}`);
	process.exit(failed ? 1 : 0);
}
// The e2b module, or the whole file skipped (what names it in the skip line).
export async function sdk(what) {
	if (!existsSync(join(sdkDir, 'e2b', 'package.json'))) {
		tap(`ok - ${what} # SKIP the e2b SDK is not installed in ${sdkDir}`);
		done();
	}
	return import(pathToFileURL(join(sdkDir, 'e2b', 'dist', 'index.mjs')).href);
}
