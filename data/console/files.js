// The files tab: a directory of the running sandbox (GET .../files/list), a file's text
// (GET .../files), downloads (the same bytes as a file of the browser's) and uploads into the
// directory shown (PUT .../files). Paths are resolved by the sandbox's init, inside the
// sandbox, as the sandbox user: the daemon's checks, not the page's.
'use strict';

AJ.files = {dir: null, VIEW_MAX: 1 << 20};

AJ.files.reset = function () {
  AJ.files.dir = null;
  AJ.$('#files tbody').replaceChildren();
  AJ.$('#file-view').hidden = true;
  AJ.$('#files-status').textContent = '';
};

AJ.files.join = (dir, name) => (dir.endsWith('/') ? dir : dir + '/') + name;
AJ.files.parent = dir => dir.replace(/\/[^/]+\/?$/, '') || '/';

AJ.files.enter = function () {
  if (!AJ.sb.rec || AJ.sb.rec.state !== 'running') {
    AJ.$('#files-status').textContent = 'The sandbox must be running to browse its files.';
    return;
  }
  AJ.files.open(AJ.files.dir || '');
};

// '' is the sandbox's working directory (the API's relative path ".").
AJ.files.open = async function (dir) {
  const status = AJ.$('#files-status');
  try {
    const out = await AJ.api('GET', AJ.sbPath(AJ.sb.ref, '/files/list?path=' + encodeURIComponent(dir || '.')));
    out.path = out.path.replace(/\/\.$/, '') || '/';
    AJ.files.dir = out.path;
    AJ.$('#files-path').value = out.path;
    AJ.files.render(out);
    status.textContent = out.entries.length + ' entries' + (out.truncated ? ' (truncated)' : '');
  } catch (e) {
    status.textContent = (dir || '.') + ': ' + e.message;
  }
};

AJ.files.render = function (out) {
  const rows = out.entries.slice().sort((a, b) =>
    (a.type === 'dir' ? 0 : 1) - (b.type === 'dir' ? 0 : 1) || a.name.localeCompare(b.name));
  AJ.$('#files tbody').replaceChildren(...rows.map(e => {
    const path = AJ.files.join(out.path, e.name);
    const isDir = e.type === 'dir';
    const name = isDir
      ? AJ.el('a', {href: '#', onclick: ev => { ev.preventDefault(); AJ.files.open(path); }}, e.name + '/')
      : AJ.el('a', {href: '#', onclick: ev => { ev.preventDefault(); AJ.files.view(path, e.size); }}, e.name);
    return AJ.el('tr', {dataset: {name: e.name, type: e.type}},
      AJ.el('td', {}, name, e.link ? ' → ' + e.link : ''),
      AJ.el('td', {}, e.type),
      AJ.el('td', {class: 'num'}, isDir ? '' : AJ.bytes(e.size)),
      AJ.el('td', {}, e.mode),
      AJ.el('td', {}, e.mtime || ''),
      AJ.el('td', {}, e.type === 'file' ? AJ.el('button', {type: 'button', class: 'small',
        onclick: () => AJ.files.download(path, e.name)}, 'Download') : ''));
  }));
};

AJ.files.get = async function (path) {
  const res = await AJ.fetch('GET', AJ.sbPath(AJ.sb.ref, '/files?path=' + encodeURIComponent(path)));
  return res.blob();
};

AJ.files.view = async function (path, size) {
  const status = AJ.$('#files-status');
  if (size > AJ.files.VIEW_MAX) {
    status.textContent = path + ' is ' + AJ.bytes(size) + ': download it instead.';
    return;
  }
  try {
    const buf = new Uint8Array(await (await AJ.files.get(path)).arrayBuffer());
    let text;
    try {
      text = new TextDecoder('utf-8', {fatal: true}).decode(buf);
    } catch (e) {
      text = '(' + AJ.bytes(buf.length) + ' of binary data: download it to see it)';
    }
    AJ.$('#file-view-name').textContent = path;
    AJ.$('#file-view-text').textContent = text;
    AJ.$('#file-view').hidden = false;
  } catch (e) {
    status.textContent = path + ': ' + e.message;
  }
};

AJ.files.download = async function (path, name) {
  try {
    const url = URL.createObjectURL(await AJ.files.get(path));
    const a = AJ.el('a', {href: url, download: name});
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (e) {
    AJ.$('#files-status').textContent = path + ': ' + e.message;
  }
};

AJ.files.upload = async function (fileList) {
  const status = AJ.$('#files-status');
  const dir = AJ.files.dir || '.';
  for (const f of fileList) {
    const path = AJ.files.join(dir, f.name);
    status.textContent = 'uploading ' + f.name + ' (' + AJ.bytes(f.size) + ')…';
    try {
      await AJ.fetch('PUT', AJ.sbPath(AJ.sb.ref, '/files?path=' + encodeURIComponent(path)),
        {body: f, headers: {'Content-Type': 'application/octet-stream'}});
      status.textContent = 'uploaded ' + path;
    } catch (e) {
      status.textContent = f.name + ': ' + e.message;
      return;
    }
  }
  await AJ.files.open(dir);
  status.textContent = 'uploaded ' + [...fileList].map(f => f.name).join(', ');
};

AJ.files.init = function () {
  AJ.$('#files-form').addEventListener('submit', e => {
    e.preventDefault();
    AJ.files.open(AJ.$('#files-path').value.trim());
  });
  AJ.$('#files-up').addEventListener('click', () => AJ.files.open(AJ.files.parent(AJ.files.dir || '/')));
  AJ.$('#file-upload').addEventListener('change', e => {
    const list = [...e.target.files];
    e.target.value = '';
    if (list.length) AJ.files.upload(list);
  });
  AJ.$('#file-view-close').addEventListener('click', () => { AJ.$('#file-view').hidden = true; });
};
