// The console's core: the API client (the bearer token from sessionStorage in the
// Authorization header of every call, never a cookie), the login, and small DOM helpers.
// Plain scripts sharing one namespace, AJ; main.js starts the page.
'use strict';

const AJ = {};

// xterm.js makes <style> elements of its own; the page's Content-Security-Policy admits those
// that carry this page's nonce (a fresh one per load), which this script tag carries.
(function () {
  const nonce = document.currentScript && document.currentScript.nonce;
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function (tag, options) {
    const el = create.call(this, tag, options);
    if (nonce && String(tag).toLowerCase() === 'style') el.nonce = nonce;
    return el;
  };
})();

AJ.TOKEN_KEY = 'agentjail-token';

AJ.token = function () {
  return sessionStorage.getItem(AJ.TOKEN_KEY);
};

class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}
AJ.ApiError = ApiError;

// fetch with the token; the API's JSON errors become ApiError. 401 logs out.
AJ.fetch = async function (method, path, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  const token = AJ.token();
  if (token) headers.Authorization = 'Bearer ' + token;
  let body = opts.body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  // A poll that gets no answer is given up after opts.timeout ms, so that the next one can go
  // (on another connection) instead of the view freezing.
  let signal = opts.signal;
  if (opts.timeout) signal = signal ? AbortSignal.any([signal, AbortSignal.timeout(opts.timeout)]) : AbortSignal.timeout(opts.timeout);
  const res = await fetch(path, {method, headers, body, signal,
    cache: 'no-store', credentials: 'omit', redirect: 'error'});
  if (res.ok) return res;
  let err = {code: 'http_' + res.status, message: res.statusText, field: null};
  try {
    const j = await res.json();
    if (j && j.error) err = j.error;
  } catch (e) { /* not JSON */ }
  if (res.status === 401 && !opts.noLogout) AJ.logout('The token is no longer accepted: ' + err.message);
  throw new ApiError(res.status, err.code, err.message, err.field);
};

AJ.api = async function (method, path, json, opts) {
  const res = await AJ.fetch(method, path, Object.assign(json === undefined ? {} : {json}, opts || {}));
  if (res.status === 204) return null;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
};

AJ.POLL_TIMEOUT = 8000;

AJ.sbPath = function (ref, rest) {
  return '/v1/sandboxes/' + encodeURIComponent(ref) + (rest || '');
};

// Reads an NDJSON stream, one parsed value per call of onLine, until it ends or is aborted.
AJ.ndjson = async function (path, onLine, signal) {
  const res = await AJ.fetch('GET', path, {signal});
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += dec.decode(value, {stream: true});
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) onLine(JSON.parse(line));
    }
  }
};

// ---- login ---------------------------------------------------------------------------------

AJ.login = async function (token) {
  sessionStorage.setItem(AJ.TOKEN_KEY, token);
  try {
    await AJ.fetch('GET', '/v1/sandboxes', {noLogout: true});
  } catch (e) {
    sessionStorage.removeItem(AJ.TOKEN_KEY);
    throw e;
  }
};

AJ.SESSION_KEY = 'agentjail-session';

AJ.logout = function (why) {
  const token = AJ.token();
  // A session of the console listener's login URL ends on the daemon too.
  if (token && sessionStorage.getItem(AJ.SESSION_KEY))
    fetch('/v1/console/session', {method: 'DELETE', headers: {Authorization: 'Bearer ' + token},
      cache: 'no-store', credentials: 'omit', redirect: 'error'}).catch(() => {});
  sessionStorage.removeItem(AJ.TOKEN_KEY);
  sessionStorage.removeItem(AJ.SESSION_KEY);
  AJ.who = null;
  AJ.loginMessage = why || '';
  if (location.hash !== '#/') location.hash = '#/';
  else AJ.route();
};

// The console listener's login URL (console.json's login_url) carries a login code in the
// fragment, which never reaches a server: it is taken out of the address bar at once, and
// exchanged for a session token (POST /v1/console/session). The code works once, for a few
// minutes, on the console listener only (--listen has no such route, so no page can log a
// browser in there with a link); a copy left in the browser's history is worthless.
AJ.loginFromFragment = async function () {
  // A token in a link (the old login URL, or a page that wants this browser logged in as
  // someone else) is never taken, and does not stay in the address bar.
  if (/^#token=/.test(location.hash)) history.replaceState(null, '', location.pathname + '#/');
  const m = /^#login=([0-9a-f]{64})$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, '', location.pathname + '#/');
  try {
    const res = await fetch('/v1/console/session', {method: 'POST',
      headers: {'Content-Type': 'application/json'}, body: JSON.stringify({code: m[1]}),
      cache: 'no-store', credentials: 'omit', redirect: 'error'});
    if (!res.ok) throw new Error('status ' + res.status);
    const j = await res.json();
    sessionStorage.setItem(AJ.TOKEN_KEY, j.token);
    sessionStorage.setItem(AJ.SESSION_KEY, '1');
  } catch (e) {
    AJ.loginMessage = 'This login link was used already, has expired, or is not for this ' +
      'listener: the state directory\'s console.json has a new one.';
  }
};

// Whom the page acts for, in the header: a token's owner, or the local owner.
AJ.showWho = async function () {
  if (AJ.who) return;
  AJ.who = 'asking';
  try {
    const w = await AJ.api('GET', '/v1/whoami');
    AJ.who = w.owner === null ? 'the local owner' : 'owner ' + w.owner;
  } catch (e) {
    AJ.who = null;
    return;
  }
  AJ.$('#who').textContent = AJ.who;
};

// ---- DOM helpers ---------------------------------------------------------------------------

AJ.$ = (sel, root) => (root || document).querySelector(sel);

// el('td', {class: 'x', dataset: {k: 'v'}}, 'text', childNode...): text is never parsed as HTML.
AJ.el = function (tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
};

AJ.bytes = function (n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(n < 10 ? 1 : 0) : Math.round(n)) + ' ' + units[i];
};

AJ.age = function (iso) {
  if (!iso) return '–';
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return Math.floor(s) + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h' + String(Math.floor(s % 3600 / 60)).padStart(2, '0') + 'm';
  return Math.floor(s / 86400) + 'd' + Math.floor(s % 86400 / 3600) + 'h';
};

AJ.time = function (iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return d.toLocaleTimeString(undefined, {hour12: false}) + '.' + String(d.getMilliseconds()).padStart(3, '0');
};

// The page's one modal: resolves true on OK, false on Cancel or Escape. extra: a node shown
// under the text (an input whose value the caller reads).
AJ.confirm = function (text, extra) {
  const dlg = AJ.$('#confirm');
  AJ.$('#confirm-text').textContent = text;
  AJ.$('#confirm-extra').replaceChildren(...(extra ? [extra] : []));
  return new Promise(resolve => {
    const done = ok => {
      AJ.$('#confirm-ok').onclick = AJ.$('#confirm-cancel').onclick = dlg.oncancel = null;
      if (dlg.open) dlg.close();
      resolve(ok);
    };
    AJ.$('#confirm-ok').onclick = () => done(true);
    AJ.$('#confirm-cancel').onclick = () => done(false);
    dlg.oncancel = () => done(false);
    dlg.showModal();
    (extra && extra.querySelector ? extra.querySelector('input') || AJ.$('#confirm-ok') : AJ.$('#confirm-ok')).focus();
  });
};

AJ.stateBadge = function (state) {
  return AJ.el('span', {class: 'state state-' + state}, state);
};

// What a sandbox runs on: its image, or the host's root, and its network mode.
AJ.describePolicy = function (sb) {
  const p = sb.policy || {};
  const root = p.rootfs && p.rootfs.image ? p.rootfs.image : 'host root';
  const net = p.network && p.network.mode ? 'network ' + p.network.mode : '';
  return [root, p.tier && p.tier !== 'namespaces' ? p.tier + ' tier' : '', net].filter(Boolean).join(' · ');
};

// Ports a sandbox serves on purpose: its published ports and its public ones.
AJ.ports = function (sb) {
  const net = (sb.policy || {}).network || {};
  const out = new Map();
  for (const spec of net.publish || []) {
    const inside = Number(String(spec).split(':').pop());
    if (inside) out.set(inside, 'published ' + spec);
  }
  for (const p of net.public_ports || []) if (!out.has(p)) out.set(p, 'public');
  return [...out.entries()].map(([port, how]) => ({port, how}));
};

window.AJ = AJ;
