// The list of the owner's sandboxes, polled every two seconds (and CPU and memory of the
// running ones every five, from their metrics) while the list is shown.
'use strict';

AJ.list = {
  timer: null,
  usage: new Map(),    // id -> {cpu, memory, limit, at}
  previews: new Map(), // "id:port" -> url, or '' when there is none
  busy: false,
};

AJ.list.show = function () {
  AJ.list.stop();
  AJ.list.refresh();
  AJ.list.timer = setInterval(AJ.list.refresh, 2000);
};

AJ.list.stop = function () {
  clearInterval(AJ.list.timer);
  AJ.list.timer = null;
};

AJ.list.refresh = async function () {
  if (AJ.list.busy || document.hidden) return;
  AJ.list.busy = true;
  try {
    const {sandboxes} = await AJ.api('GET', '/v1/sandboxes', undefined, {timeout: AJ.POLL_TIMEOUT});
    AJ.list.render(sandboxes);
    AJ.$('#list-status').textContent = 'updated ' + new Date().toLocaleTimeString(undefined, {hour12: false});
    AJ.list.sample(sandboxes);
  } catch (e) {
    AJ.$('#list-status').textContent = 'cannot list: ' + e.message;
  } finally {
    AJ.list.busy = false;
  }
};

// CPU and memory of the running sandboxes, at most every five seconds each.
AJ.list.sample = function (sandboxes) {
  const now = Date.now();
  for (const sb of sandboxes) {
    const u = AJ.list.usage.get(sb.id);
    if (sb.state !== 'running' || (u && now - u.at < 5000)) continue;
    AJ.list.usage.set(sb.id, Object.assign({}, u, {at: now}));
    const since = Math.floor(now / 1000);
    AJ.api('GET', AJ.sbPath(sb.id, '/metrics?start=' + since), undefined, {timeout: AJ.POLL_TIMEOUT}).then(m => {
      AJ.list.usage.set(sb.id, {cpu: m.now.cpu_percent, memory: m.now.memory,
        limit: m.now.memory_limit, at: now});
    }).catch(() => {});
  }
};

AJ.list.portLinks = function (sb) {
  const cell = AJ.el('td', {class: 'ports'});
  for (const {port, how} of AJ.ports(sb)) {
    const key = sb.id + ':' + port;
    const url = AJ.list.previews.get(key);
    cell.append(url ? AJ.el('a', {href: url, target: '_blank', rel: 'noopener noreferrer',
      title: how + ': preview'}, String(port)) : AJ.el('span', {title: how}, String(port)), ' ');
    if (url === undefined && sb.state === 'running') {
      AJ.list.previews.set(key, '');
      AJ.api('GET', AJ.sbPath(sb.id, '/preview?port=' + port))
        .then(p => AJ.list.previews.set(key, p.url_with_token || p.url))
        .catch(() => {});
    }
  }
  return cell;
};

AJ.list.row = function (sb) {
  const u = sb.state === 'running' ? AJ.list.usage.get(sb.id) : null;
  const labels = Object.entries(sb.labels || {}).map(([k, v]) => AJ.el('span', {class: 'label'}, k + '=' + v));
  const open = () => { location.hash = '#/sandboxes/' + encodeURIComponent(sb.name); };
  return AJ.el('tr', {dataset: {sandbox: sb.name, id: sb.id}, class: 'clickable', onclick: open},
    AJ.el('td', {}, AJ.el('a', {href: '#/sandboxes/' + encodeURIComponent(sb.name)}, sb.name)),
    AJ.el('td', {}, AJ.stateBadge(sb.state)),
    AJ.el('td', {}, AJ.describePolicy(sb)),
    AJ.el('td', {}, ...labels),
    AJ.el('td', {title: sb.created}, AJ.age(sb.created)),
    // The first sample of a sandbox has no CPU figure yet (a rate needs two).
    AJ.el('td', {class: 'num'}, u && typeof u.cpu === 'number' ? u.cpu.toFixed(1) + ' %' : '–'),
    AJ.el('td', {class: 'num'}, u && typeof u.memory === 'number'
      ? AJ.bytes(u.memory) + (u.limit ? ' / ' + AJ.bytes(u.limit) : '') : '–'),
    AJ.list.portLinks(sb));
};

AJ.list.render = function (sandboxes) {
  const body = AJ.$('#sandboxes tbody');
  body.replaceChildren(...sandboxes.map(AJ.list.row));
  AJ.$('#list-empty').hidden = sandboxes.length > 0;
};
