// One sandbox: its state (polled every two seconds), the actions on it, each confirmed first
// and each an API call the daemon checks like any other, and its tabs.
'use strict';

AJ.sb = {
  ref: null,     // as in the address: a name or an id
  rec: null,     // the last GET /v1/sandboxes/{ref}
  tab: null,
  timer: null,
};

// Which actions each state allows (the API answers 409 to the others anyway).
AJ.sb.allowed = {
  running: ['pause', 'stop', 'snapshot', 'fork', 'delete'],
  paused: ['resume', 'stop', 'snapshot', 'fork', 'delete'],
  stopped: ['start', 'snapshot', 'fork', 'delete'],
  creating: [],
};

AJ.sb.show = async function (ref, tab) {
  if (AJ.sb.ref !== ref) {
    AJ.sb.leave();
    AJ.sb.ref = ref;
    AJ.sb.rec = null;
    AJ.$('#sb-name').textContent = ref;
    AJ.$('#sb-state').replaceChildren();
    AJ.$('#sb-error').textContent = '';
    AJ.events.reset();
    AJ.files.reset();
    AJ.sb.timer = setInterval(AJ.sb.refresh, 2000);
    await AJ.sb.refresh();
  }
  AJ.sb.selectTab(tab || 'overview');
};

AJ.sb.leave = function () {
  clearInterval(AJ.sb.timer);
  AJ.sb.timer = null;
  if (AJ.sb.tab) AJ.sb.tabLeave(AJ.sb.tab);
  AJ.sb.tab = null;
  AJ.events.stop();
  AJ.terminal.close();
  AJ.sb.ref = null;
};

AJ.sb.refresh = async function () {
  const ref = AJ.sb.ref;
  if (!ref || document.hidden) return;
  try {
    const rec = await AJ.api('GET', AJ.sbPath(ref), undefined, {timeout: AJ.POLL_TIMEOUT});
    if (ref !== AJ.sb.ref) return;
    const changed = !AJ.sb.rec || AJ.sb.rec.state !== rec.state;
    AJ.sb.rec = rec;
    AJ.sb.render(rec);
    if (changed && AJ.sb.tab) AJ.sb.tabStateChanged(AJ.sb.tab);
  } catch (e) {
    if (ref !== AJ.sb.ref) return;
    AJ.$('#sb-error').textContent = e.status === 404 ? 'No sandbox "' + ref + '" (it was deleted, or it is not yours).' : e.message;
    AJ.$('#sb-state').replaceChildren();
    AJ.sb.rec = null;
    AJ.sb.render(null);
  }
};

AJ.sb.render = function (rec) {
  const ok = rec ? AJ.sb.allowed[rec.state] || [] : [];
  for (const b of document.querySelectorAll('#sb-actions button')) b.disabled = !ok.includes(b.dataset.action);
  if (!rec) return;
  AJ.$('#sb-error').textContent = rec.error ? 'Last error: ' + rec.error : '';
  AJ.$('#sb-state').replaceChildren(AJ.stateBadge(rec.state));
  AJ.$('#sb-details').replaceChildren(...AJ.sb.details(rec));
};

AJ.sb.details = function (rec) {
  const p = rec.policy || {};
  const limits = p.limits || {};
  const net = p.network || {};
  const rows = [
    ['Id', rec.id], ['Owner', rec.owner || '(local owner)'], ['State', rec.state],
    ['Root', AJ.describePolicy(rec)], ['Created', rec.created], ['Started', rec.started],
    ['Stopped', rec.stopped], ['Last active', rec.last_active], ['Generation', rec.generation],
    ['Base snapshot', rec.base_snapshot],
    ['Memory limit', limits.memory ? AJ.bytes(limits.memory) : 'none'],
    ['CPUs', limits.cpus || 'no limit'], ['Processes', limits.pids || 'no limit'],
    ['Network', net.mode + (net.allow && net.allow.length ? ': allow ' + net.allow.join(', ') : '') +
      (net.deny && net.deny.length ? '; deny ' + net.deny.join(', ') : '')],
  ];
  const out = [];
  for (const [k, v] of rows) {
    if (v === null || v === undefined || v === '') continue;
    out.push(AJ.el('dt', {}, k), AJ.el('dd', {}, String(v)));
  }
  const labels = Object.entries(rec.labels || {});
  if (labels.length) out.push(AJ.el('dt', {}, 'Labels'), AJ.el('dd', {}, ...labels.map(([k, v]) => AJ.el('span', {class: 'label'}, k + '=' + v))));
  const ports = AJ.ports(rec);
  if (ports.length) {
    const dd = AJ.el('dd', {});
    for (const {port, how} of ports) {
      const url = AJ.list.previews.get(rec.id + ':' + port);
      dd.append(url ? AJ.el('a', {href: url, target: '_blank', rel: 'noopener noreferrer'}, port + ' (' + how + ')')
        : AJ.el('span', {}, port + ' (' + how + ')'), ' ');
    }
    out.push(AJ.el('dt', {}, 'Ports'), dd);
  }
  return out;
};

// ---- actions -------------------------------------------------------------------------------

AJ.sb.act = async function (action) {
  const rec = AJ.sb.rec;
  if (!rec) return;
  const name = rec.name;
  let extra = null, input = null;
  const texts = {
    pause: 'Pause "' + name + '"? Its processes are frozen until it is resumed.',
    resume: 'Resume "' + name + '"?',
    stop: 'Stop "' + name + '"? Its processes end; its workspace stays.',
    start: 'Start "' + name + '"?',
    snapshot: 'Take a snapshot of "' + name + '"?',
    fork: 'Fork "' + name + '" into a new sandbox?',
    delete: 'Delete "' + name + '" and its workspace? This cannot be undone.',
  };
  if (action === 'snapshot' || action === 'fork') {
    input = AJ.el('input', {type: 'text', id: 'confirm-input', spellcheck: 'false',
      placeholder: action === 'snapshot' ? 'snapshot name (optional)' : 'name prefix (optional)'});
    extra = AJ.el('label', {}, action === 'snapshot' ? 'Name ' : 'Prefix ', input);
  }
  if (!await AJ.confirm(texts[action], extra)) return;
  const v = input && input.value.trim();
  const calls = {
    pause: () => AJ.api('POST', AJ.sbPath(rec.id, '/pause'), {}),
    resume: () => AJ.api('POST', AJ.sbPath(rec.id, '/resume'), {}),
    stop: () => AJ.api('POST', AJ.sbPath(rec.id, '/stop'), {}),
    start: () => AJ.api('POST', AJ.sbPath(rec.id, '/start'), {}),
    snapshot: () => AJ.api('POST', AJ.sbPath(rec.id, '/snapshots'), v ? {name: v} : {}),
    fork: () => AJ.api('POST', AJ.sbPath(rec.id, '/fork'), v ? {prefix: v} : {}),
    delete: () => AJ.api('DELETE', AJ.sbPath(rec.id, '?force=true')),
  };
  const buttons = document.querySelectorAll('#sb-actions button');
  buttons.forEach(b => { b.disabled = true; });
  AJ.$('#sb-error').textContent = '';
  try {
    const out = await calls[action]();
    if (action === 'delete') { location.hash = '#/'; return; }
    if (action === 'snapshot') AJ.$('#sb-error').textContent = 'Snapshot "' + out.name + '" taken.';
    if (action === 'fork') AJ.$('#sb-error').textContent = 'Forked: ' + out.names.join(', ') + '.';
  } catch (e) {
    AJ.$('#sb-error').textContent = action + ': ' + e.message;
  }
  await AJ.sb.refresh();
};

// ---- tabs ----------------------------------------------------------------------------------

AJ.sb.tabs = {
  overview: {enter() {}, leave() {}, state() {}},
  events: {enter: () => AJ.events.start(), leave() {}, state() {}},
  metrics: {enter: () => AJ.metrics.start(), leave: () => AJ.metrics.stop(), state: () => AJ.metrics.refresh()},
  files: {enter: () => AJ.files.enter(), leave() {}, state: () => AJ.files.enter()},
  terminal: {enter: () => AJ.terminal.enter(), leave() {}, state: () => AJ.terminal.stateChanged()},
};

AJ.sb.selectTab = function (tab) {
  if (!AJ.sb.tabs[tab]) tab = 'overview';
  if (AJ.sb.tab === tab) return;
  if (AJ.sb.tab) AJ.sb.tabLeave(AJ.sb.tab);
  AJ.sb.tab = tab;
  for (const a of document.querySelectorAll('#tabs a')) {
    a.classList.toggle('active', a.dataset.tab === tab);
    a.href = '#/sandboxes/' + encodeURIComponent(AJ.sb.ref) + '/' + a.dataset.tab;
  }
  for (const s of document.querySelectorAll('#sandbox-view .tab')) s.hidden = s.id !== 'tab-' + tab;
  AJ.sb.tabs[tab].enter();
};

AJ.sb.tabLeave = tab => AJ.sb.tabs[tab].leave();
AJ.sb.tabStateChanged = tab => AJ.sb.tabs[tab].state();

AJ.sb.init = function () {
  for (const b of document.querySelectorAll('#sb-actions button'))
    b.addEventListener('click', () => AJ.sb.act(b.dataset.action));
};
