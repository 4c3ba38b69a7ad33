// The web console in a real browser: Debian's chromium, headless, driven by puppeteer-core,
// against a daemon on loopback that tests/integration/console_browser.sh started. Prints TAP
// lines; screenshots of the main views go to $SHOTS.
//
// Environment: CONSOLE_NODE_MODULES (puppeteer-core), CHROMIUM, API (http://127.0.0.1:PORT),
// TOKEN_A and TOKEN_B (owners alice and bob), LOCAL_LOGIN (the console listener's login URL),
// LOCAL_TOKEN (the console listener's token), LOCAL_SANDBOX (a sandbox of the local owner),
// ATTACKER (a page of another origin), SHOTS, PROFILE (a fresh user data directory).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { mkdirSync, writeFileSync } from 'node:fs';

const env = process.env;
const puppeteer = (await import(pathToFileURL(join(env.CONSOLE_NODE_MODULES, 'puppeteer-core', 'lib', 'esm', 'puppeteer', 'puppeteer-core.js')).href)).default;

let failed = 0, planned = 0;
const tap = line => { planned++; console.log(line); };
class Fail extends Error {}
const assert = (c, m) => { if (!c) throw new Fail(m); };
async function test(name, fn) {
  try {
    await fn();
    tap(`ok - ${name}`);
  } catch (e) {
    failed++;
    const waiting = pendingText();
    tap(`not ok - ${name} (${String(e && e.message ? e.message : e).replace(/\n/g, ' ').slice(0, 500)}` +
      (waiting ? `; requests unanswered: ${waiting.slice(0, 600)}` : '') + ')');
  }
}

const api = async (token, method, path, body) => {
  const res = await fetch(env.API + path, {method, headers: Object.assign({Authorization: 'Bearer ' + token},
    body === undefined ? {} : {'Content-Type': 'application/json'}), body: body === undefined ? undefined : JSON.stringify(body)});
  const text = await res.text();
  return {status: res.status, body: text && /^application\/json/.test(res.headers.get('content-type') || '') ? JSON.parse(text) : text};
};

mkdirSync(env.SHOTS, {recursive: true});
const shot = (page, name) => page.screenshot({path: join(env.SHOTS, name + '.png')});
const uniq = Date.now().toString(36);
const NAME = 'console-b-' + uniq;  // created through the API while the page is open

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM,
  headless: true,
  userDataDir: env.PROFILE,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  defaultViewport: {width: 1280, height: 800},
});
const pageErrors = [];
const cspViolations = [];
// Requests the pages sent and have no answer to yet, for the failures' messages.
const pending = new Map();
const pendingText = () => [...pending.entries()].map(([r, t]) =>
  r.method() + ' ' + r.url().replace(env.API, '') + ' for ' + ((Date.now() - t) / 1000).toFixed(1) + ' s').join('; ');
const watch = page => {
  page.on('request', r => pending.set(r, Date.now()));
  page.on('requestfinished', r => pending.delete(r));
  page.on('requestfailed', r => pending.delete(r));
  page.on('pageerror', e => pageErrors.push(String(e.message || e)));
  page.on('console', m => { if (/Content Security Policy|Refused to/.test(m.text())) cspViolations.push(m.text()); });
};

try {
  const page = await browser.newPage();
  watch(page);
  let resp;

  await test('the console page loads with a strict Content-Security-Policy', async () => {
    resp = await page.goto(env.API + '/console/', {waitUntil: 'load'});
    const csp = resp.headers()['content-security-policy'] || '';
    assert(resp.status() === 200, 'status ' + resp.status());
    assert(/script-src 'self'(;|$)/.test(csp) && !/unsafe-inline'[^;]*script|script-src[^;]*unsafe/.test(csp), 'script-src: ' + csp);
    assert(/frame-ancestors 'none'/.test(csp), 'frame-ancestors: ' + csp);
    assert(resp.headers()['x-frame-options'] === 'DENY', 'X-Frame-Options');
    await page.waitForSelector('#login-token', {visible: true});
    await shot(page, '1-login');
  });

  await test('a wrong token is refused on the login form', async () => {
    await page.type('#login-token', 'not-a-token-0123456789');
    await page.click('#login-submit');
    await page.waitForFunction(() => document.querySelector('#login-error').textContent.includes('not valid'), {timeout: 10000});
    assert(await page.$eval('#list-view', e => e.hidden), 'the list is hidden');
  });

  await test('logging in with alice\'s token shows her sandboxes, and the token stays in sessionStorage', async () => {
    await page.$eval('#login-token', e => { e.value = ''; });
    await page.type('#login-token', env.TOKEN_A);
    await page.click('#login-submit');
    await page.waitForSelector('#list-view:not([hidden])', {timeout: 10000});
    await page.waitForSelector('tr[data-sandbox="console-a"]', {timeout: 10000});
    const stored = await page.evaluate(() => ({session: sessionStorage.getItem('agentjail-token'), cookie: document.cookie, local: localStorage.length}));
    assert(stored.session === env.TOKEN_A && stored.cookie === '' && stored.local === 0, JSON.stringify(stored));
    await page.waitForFunction(() => document.querySelector('#who').textContent === 'owner alice', {timeout: 10000})
      .catch(async () => { throw new Fail('the header says ' + await page.$eval('#top', e => e.textContent)); });
  });

  await test('a sandbox created through the API appears in the list, live', async () => {
    const r = await api(env.TOKEN_A, 'POST', '/v1/sandboxes', {name: NAME, labels: {team: 'console'},
      public_ports: [8000], policy: {network: {mode: 'proxy', allow: ['allowed.test']}}});
    assert(r.status === 201, 'create: ' + r.status + ' ' + JSON.stringify(r.body));
    await page.waitForSelector(`tr[data-sandbox="${NAME}"]`, {timeout: 10000});
    await page.waitForFunction(n => {
      const row = document.querySelector(`tr[data-sandbox="${n}"]`);
      return row && row.textContent.includes('running') && row.textContent.includes('team=console') &&
        row.textContent.includes('network proxy') && /MiB|KiB/.test(row.cells[6].textContent);
    }, {timeout: 30000}, NAME).catch(async () => {
      throw new Fail('the row reads ' + await page.$eval(`tr[data-sandbox="${NAME}"]`, r => r.textContent) +
        '; the page: ' + await page.evaluate(() => JSON.stringify({busy: AJ.list.busy, hidden: document.hidden,
          timer: AJ.list.timer, status: document.querySelector('#list-status').textContent, hash: location.hash})));
    });
    // Its public port, with the preview URL the daemon gives for it.
    const href = await page.waitForSelector(`tr[data-sandbox="${NAME}"] td.ports a`, {timeout: 10000})
      .then(a => a.evaluate(e => e.href));
    assert(/^http:\/\/8000-[0-9a-f]+\.localhost:\d+\//.test(href), 'preview link ' + href);
    await shot(page, '2-list');
  });

  await test('the sandbox\'s page shows its details', async () => {
    await page.click(`tr[data-sandbox="${NAME}"] a`);
    await page.waitForFunction(n => document.querySelector('#sb-name').textContent === n &&
      document.querySelector('#sb-details').textContent.includes('allowed.test'), {timeout: 10000}, NAME);
    assert(!await page.$eval('button[data-action="pause"]', b => b.disabled), 'pause is enabled');
    assert(await page.$eval('button[data-action="resume"]', b => b.disabled), 'resume is disabled');
    await shot(page, '3-overview');
  });

  // The terminal's rendered screen, one string per row (xterm.js's DOM renderer).
  const screen = () => page.$$eval('.xterm-rows > div', rows => rows.map(r => r.textContent.replace(/\u00a0/g, ' ').replace(/\s+$/, '')));
  const waitLine = async (re, what, timeout = 15000) => {
    try {
      await page.waitForFunction(src => [...document.querySelectorAll('.xterm-rows > div')].some(r =>
        new RegExp(src).test(r.textContent.replace(/\u00a0/g, ' ').replace(/\s+$/, ''))), {timeout}, re.source);
    } catch (e) {
      throw new Fail(what + ': the screen ends ' + JSON.stringify((await screen()).filter(Boolean).slice(-6)));
    }
  };

  await test('the terminal runs `echo hi` and the screen shows hi', async () => {
    await page.click('#tabs a[data-tab="terminal"]');
    await page.waitForFunction(() => /connected to/.test(document.querySelector('#term-status').textContent), {timeout: 15000});
    await waitLine(/\$ ?$/, 'a prompt');
    await page.focus('.xterm-helper-textarea');
    await page.keyboard.type('echo hi');
    await page.keyboard.press('Enter');
    await waitLine(/^hi$/, 'a line "hi"');
    await shot(page, '4-terminal');
  });

  await test('resizing the page resizes the terminal inside the sandbox', async () => {
    const before = await page.evaluate(() => [AJ.terminal.term.rows, AJ.terminal.term.cols]);
    await page.setViewport({width: 1000, height: 620});
    await page.waitForFunction(b => AJ.terminal.term.cols !== b[1] && AJ.terminal.term.rows !== b[0], {timeout: 10000}, before);
    const after = await page.evaluate(() => [AJ.terminal.term.rows, AJ.terminal.term.cols]);
    await page.focus('.xterm-helper-textarea');
    await page.keyboard.type('stty size');
    await page.keyboard.press('Enter');
    await waitLine(new RegExp(`^${after[0]} ${after[1]}$`), `stty size = ${after}`);
    await page.setViewport({width: 1280, height: 800});
  });

  await test('a file uploaded from the page is in the sandbox', async () => {
    const file = join(env.PROFILE, '..', 'upload-' + uniq + '.txt');
    writeFileSync(file, 'uploaded from the console ' + uniq + '\n');
    await page.click('#tabs a[data-tab="files"]');
    await page.waitForFunction(() => /entries/.test(document.querySelector('#files-status').textContent), {timeout: 10000});
    const input = await page.$('#file-upload');
    await input.uploadFile(file);
    await page.waitForFunction(n => document.querySelector(`#files tr[data-name="${n}"]`), {timeout: 10000}, 'upload-' + uniq + '.txt');
    const dir = await page.$eval('#files-path', e => e.value);
    const r = await api(env.TOKEN_A, 'GET', `/v1/sandboxes/${NAME}/files?path=${encodeURIComponent(dir + '/upload-' + uniq + '.txt')}`);
    assert(r.status === 200 && r.body === 'uploaded from the console ' + uniq + '\n', 'read back: ' + r.status + ' ' + JSON.stringify(r.body));
    await page.click(`#files tr[data-name="upload-${uniq}.txt"] a`);
    await page.waitForFunction(u => document.querySelector('#file-view-text').textContent.includes(u), {timeout: 10000}, uniq);
    await shot(page, '5-files');
  });

  await test('a denied egress request appears in the events view, highlighted with host, port and rule', async () => {
    await page.click('#tabs a[data-tab="events"]');
    await page.waitForSelector('#events tbody tr', {timeout: 10000});
    const r = await api(env.TOKEN_A, 'POST', `/v1/sandboxes/${NAME}/exec`,
      {command: 'curl -s -o /dev/null -w "%{http_code}" --max-time 10 http://blocked.test:8081/secret', timeout: 20});
    assert(r.status === 200 && /"type":"exit"/.test(r.body), 'exec: ' + r.status + ' ' + String(r.body).slice(0, 200));
    await page.waitForSelector('#events tr.egress-denied', {timeout: 15000});
    const row = await page.$eval('#events tr.egress-denied', tr => [...tr.cells].map(c => c.textContent));
    assert(row[3] === 'denied' && row[4] === 'blocked.test' && row[5] === '8081' && row[6].length > 0, JSON.stringify(row));
    const bg = await page.$eval('#events tr.egress-denied', tr => getComputedStyle(tr).backgroundColor);
    assert(bg !== 'rgba(0, 0, 0, 0)', 'highlighted: ' + bg);
    await shot(page, '6-events');
  });

  await test('the metrics tab charts the sandbox\'s samples', async () => {
    await page.click('#tabs a[data-tab="metrics"]');
    await page.waitForFunction(() => /samples/.test(document.querySelector('#metrics-status').textContent), {timeout: 15000});
    const drawn = await page.$eval('#chart-memory', c => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
      return n;
    });
    assert(drawn > 500, 'pixels drawn: ' + drawn);
    await shot(page, '7-metrics');
  });

  const act = async (action, want) => {
    await page.waitForFunction(a => !document.querySelector(`button[data-action="${a}"]`).disabled, {timeout: 10000}, action);
    await page.click(`button[data-action="${action}"]`);
    await page.waitForSelector('#confirm[open]', {timeout: 5000});
    await page.click('#confirm-ok');
    await page.waitForFunction(s => document.querySelector('#sb-state').textContent === s, {timeout: 20000}, want);
    const r = await api(env.TOKEN_A, 'GET', `/v1/sandboxes/${NAME}`);
    assert(r.body.state === want, 'the API says ' + r.body.state);
  };

  await test('pause from the page (after confirming) pauses the sandbox', async () => {
    await page.click('#tabs a[data-tab="overview"]');
    await page.click('button[data-action="pause"]');
    await page.waitForSelector('#confirm[open]', {timeout: 5000});
    await page.click('#confirm-cancel');
    await new Promise(r => setTimeout(r, 500));
    assert((await api(env.TOKEN_A, 'GET', `/v1/sandboxes/${NAME}`)).body.state === 'running', 'cancel changes nothing');
    await act('pause', 'paused');
    await shot(page, '8-paused');
  });

  await test('resume from the page resumes it', async () => {
    await act('resume', 'running');
  });

  await test('a second owner\'s page lists none of the first owner\'s sandboxes', async () => {
    const ctx = await browser.createBrowserContext();
    const bob = await ctx.newPage();
    watch(bob);
    await bob.goto(env.API + '/console/', {waitUntil: 'load'});
    await bob.type('#login-token', env.TOKEN_B);
    await bob.click('#login-submit');
    await bob.waitForSelector('tr[data-sandbox="console-bob"]', {timeout: 10000});
    const names = await bob.$$eval('#sandboxes tbody tr', rows => rows.map(r => r.dataset.sandbox));
    assert(JSON.stringify(names) === '["console-bob"]', 'bob sees ' + JSON.stringify(names));
    await bob.goto(env.API + '/console/#/sandboxes/' + NAME, {waitUntil: 'load'});
    await bob.waitForFunction(() => /No sandbox/.test(document.querySelector('#sb-error').textContent), {timeout: 10000});
    const ticket = await bob.evaluate(n => AJ.api('POST', AJ.sbPath(n, '/terminal/tickets'), {}).then(() => 'given', e => e.status), NAME);
    assert(ticket === 404, 'a ticket for alice\'s sandbox: ' + ticket);
    await shot(bob, '9-bob');
    await ctx.close();
  });

  await test('a page of another origin can neither get a ticket nor open a terminal with one', async () => {
    const ctx = await browser.createBrowserContext();
    const evil = await ctx.newPage();
    await evil.goto(env.ATTACKER, {waitUntil: 'load'});
    const t = await api(env.TOKEN_A, 'POST', `/v1/sandboxes/${NAME}/terminal/tickets`, {});
    assert(t.status === 200, 'ticket: ' + t.status);
    const out = await evil.evaluate(async (apiUrl, name, token, ticket) => {
      const res = {};
      try {
        await fetch(apiUrl + `/v1/sandboxes/${name}/terminal/tickets`, {method: 'POST',
          headers: {Authorization: 'Bearer ' + token, 'Content-Type': 'application/json'}, body: '{}'});
        res.fetch = 'answered';
      } catch (e) { res.fetch = 'blocked'; }
      try {
        await fetch(apiUrl + `/v1/sandboxes/${name}/pause`, {method: 'POST', mode: 'no-cors'});
      } catch (e) { /* opaque either way */ }
      res.ws = await new Promise(resolve => {
        const ws = new WebSocket(apiUrl.replace('http', 'ws') + `/v1/sandboxes/${name}/terminal`, ['agentjail.terminal.v1', 'ticket.' + ticket]);
        ws.onopen = () => { resolve('opened'); ws.close(); };
        ws.onerror = () => resolve('refused');
        setTimeout(() => resolve('timeout'), 8000);
      });
      return res;
    }, env.API, NAME, env.TOKEN_A, t.body.ticket);
    assert(out.fetch === 'blocked', 'a cross-origin fetch with the token: ' + out.fetch);
    assert(out.ws === 'refused', 'a cross-origin WebSocket with a valid ticket: ' + out.ws);
    const st = await api(env.TOKEN_A, 'GET', `/v1/sandboxes/${NAME}`);
    assert(st.body.state === 'running', 'a no-cors POST without the token changed nothing: ' + st.body.state);
    await ctx.close();
  });

  await test('a page of another origin cannot log a browser in with a link (#token= or #login= on --listen)', async () => {
    const ctx = await browser.createBrowserContext();
    const evil = await ctx.newPage();
    await evil.goto(env.ATTACKER, {waitUntil: 'load'});
    for (const frag of ['#token=' + env.TOKEN_B, '#login=' + '0'.repeat(64)]) {
      const opened = new Promise(resolve => ctx.once('targetcreated', t => resolve(t.page())));
      await evil.evaluate(u => { window.open(u); }, env.API + '/console/' + frag);
      const victim = await opened;
      watch(victim);
      await victim.bringToFront();
      await victim.waitForSelector('#login-view:not([hidden])', {timeout: 10000});
      const state = await victim.evaluate(() => ({token: sessionStorage.getItem('agentjail-token'),
        rows: document.querySelectorAll('#sandboxes tbody tr').length, hash: location.hash}));
      assert(state.token === null && state.rows === 0 && !state.hash.includes(frag.slice(1, 6)),
        frag.slice(0, 7) + ': ' + JSON.stringify(state));
      await victim.close();
    }
    await ctx.close();
  });

  await test('the console listener logs the local owner in from its login URL, once, without its token', async () => {
    const ctx = await browser.createBrowserContext();
    const local = await ctx.newPage();
    watch(local);
    await local.goto(env.LOCAL_LOGIN, {waitUntil: 'load'});
    await local.waitForSelector(`tr[data-sandbox="${env.LOCAL_SANDBOX}"]`, {timeout: 10000});
    assert(!local.url().includes('login='), 'the code left the address bar: ' + local.url());
    const names = await local.$$eval('#sandboxes tbody tr', rows => rows.map(r => r.dataset.sandbox));
    assert(!names.includes(NAME) && !names.includes('console-bob'), 'the local owner sees ' + JSON.stringify(names));
    const token = await local.evaluate(() => sessionStorage.getItem('agentjail-token'));
    assert(/^[0-9a-f]{64}$/.test(token) && token !== env.LOCAL_TOKEN, 'the page holds a session, not the console\'s token');
    await local.waitForFunction(() => document.querySelector('#who').textContent === 'the local owner', {timeout: 10000});
    await shot(local, '10-local');
    // The same URL again (from the history, or taken by someone): it logs nobody in.
    const again = await ctx.newPage();
    watch(again);
    await again.bringToFront();
    await again.goto(env.LOCAL_LOGIN, {waitUntil: 'load'});
    await again.waitForFunction(() => /used already/.test(document.querySelector('#login-error').textContent), {timeout: 10000});
    assert(await again.evaluate(() => sessionStorage.getItem('agentjail-token')) === null, 'a used code logged in');
    await again.close();
    // Log out ends the session on the daemon too.
    await local.bringToFront();
    await local.click('#logout');
    await local.waitForSelector('#login-view:not([hidden])', {timeout: 10000});
    const origin = new URL(env.LOCAL_LOGIN).origin;
    let status = 0;
    for (let i = 0; i < 50 && status !== 401; i++) {
      status = (await fetch(origin + '/v1/sandboxes', {headers: {Authorization: 'Bearer ' + token}})).status;
      if (status !== 401) await new Promise(r => setTimeout(r, 100));
    }
    assert(status === 401, 'the session after Log out: ' + status);
    await ctx.close();
  });

  await test('deleting from the page (after confirming) removes the sandbox', async () => {
    await page.bringToFront();
    await page.click('button[data-action="delete"]');
    await page.waitForSelector('#confirm[open]', {timeout: 5000});
    await page.click('#confirm-ok');
    await page.waitForSelector('#list-view:not([hidden])', {timeout: 20000});
    const r = await api(env.TOKEN_A, 'GET', `/v1/sandboxes/${NAME}`);
    assert(r.status === 404, 'the API: ' + r.status);
  });

  await test('no script error and no Content-Security-Policy violation on any page', async () => {
    assert(pageErrors.length === 0, 'errors: ' + pageErrors.join(' | '));
    assert(cspViolations.length === 0, 'violations: ' + cspViolations.join(' | '));
  });
} finally {
  await browser.close();
}
console.log(`1..${planned}`);
process.exit(failed ? 1 : 0);
