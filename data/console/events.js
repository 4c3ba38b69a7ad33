// A sandbox's events as a live stream (GET .../events?follow=true, NDJSON), the newest on
// top; egress decisions get their own columns (decision, host, port, rule) and a colour.
'use strict';

AJ.events = {
  abort: null,
  last: 0,     // the seq of the last event shown: a reconnect goes on from there
  ref: null,
  MAX_ROWS: 1000,
};

AJ.events.reset = function () {
  AJ.events.stop();
  AJ.events.last = 0;
  AJ.events.ref = null;
  AJ.$('#events tbody').replaceChildren();
};

AJ.events.stop = function () {
  if (AJ.events.abort) AJ.events.abort.abort();
  AJ.events.abort = null;
};

AJ.events.start = function () {
  if (AJ.events.abort) return; // already following (it keeps following in other tabs)
  const ctl = new AbortController();
  const ref = AJ.sb.ref;
  AJ.events.abort = ctl;
  AJ.events.ref = ref;
  AJ.$('#events-status').textContent = 'following';
  const path = AJ.sbPath(ref, '/events?follow=true' + (AJ.events.last ? '&after=' + AJ.events.last : ''));
  AJ.ndjson(path, ev => { if (ev.seq !== undefined) AJ.events.add(ev); }, ctl.signal)
    .then(() => { AJ.$('#events-status').textContent = 'the stream ended'; })
    .catch(e => { if (!ctl.signal.aborted) AJ.$('#events-status').textContent = 'stream: ' + e.message; })
    .finally(() => {
      if (AJ.events.abort !== ctl) return;
      AJ.events.abort = null;
      // Dropped (the daemon restarted, a proxy timed out): follow again while it is shown.
      if (!ctl.signal.aborted && AJ.sb.ref === ref) setTimeout(() => { if (AJ.sb.ref === ref) AJ.events.start(); }, 3000);
    });
};

AJ.events.summary = function (ev) {
  const d = ev.data || {};
  const keys = ev.event === 'egress' ? ['proto', 'method', 'path', 'status', 'reason', 'error', 'address'] : Object.keys(d);
  return keys.filter(k => d[k] !== undefined && d[k] !== null && typeof d[k] !== 'object')
    .map(k => k + '=' + d[k]).join(' ');
};

AJ.events.add = function (ev) {
  const d = ev.data || {};
  const egress = ev.event === 'egress';
  const decision = egress ? d.decision || '' : '';
  const row = AJ.el('tr', {class: 'event' + (egress ? ' egress egress-' + decision : ''),
    dataset: {seq: ev.seq, event: ev.event}},
    AJ.el('td', {class: 'num'}, ev.seq),
    AJ.el('td', {title: ev.time}, AJ.time(ev.time)),
    AJ.el('td', {}, ev.event),
    AJ.el('td', {}, decision ? AJ.el('span', {class: 'decision decision-' + decision}, decision) : ''),
    AJ.el('td', {class: 'host'}, egress ? d.host : ''),
    AJ.el('td', {class: 'num'}, egress ? d.port : ''),
    AJ.el('td', {class: 'rule'}, egress ? d.rule || '' : ''),
    AJ.el('td', {class: 'summary'}, AJ.events.summary(ev)));
  const body = AJ.$('#events tbody');
  body.prepend(row);
  while (body.rows.length > AJ.events.MAX_ROWS) body.deleteRow(-1);
  AJ.events.last = Math.max(AJ.events.last, ev.seq);
};

AJ.events.init = function () {
  AJ.$('#events-egress-only').addEventListener('change', e => {
    AJ.$('#events').classList.toggle('egress-only', e.target.checked);
  });
};
