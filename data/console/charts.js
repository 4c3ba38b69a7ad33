// The metrics tab: the supervisor's samples of the last hour (GET .../metrics, one every five
// seconds) drawn as line charts on canvases, refreshed every five seconds.
'use strict';

AJ.metrics = {timer: null};

// series: [{points: [[t, v]...], color}], fmt: a value as a label, floor: the smallest top of
// the scale (so that an idle sandbox's noise does not fill the chart). Draws on canvas.
AJ.chart = function (canvas, series, fmt, floor) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 400, h = canvas.clientHeight || 160;
  canvas.width = w * dpr;
  canvas.height = h * dpr;
  const g = canvas.getContext('2d');
  g.scale(dpr, dpr);
  g.clearRect(0, 0, w, h);
  const all = series.flatMap(s => s.points);
  const pad = {l: 64, r: 8, t: 8, b: 20};
  g.font = '11px system-ui, sans-serif';
  g.fillStyle = '#8a94a6';
  if (!all.length) {
    g.fillText('no samples yet', pad.l, h / 2);
    return;
  }
  const t0 = Math.min(...all.map(p => p[0])), t1 = Math.max(...all.map(p => p[0]), t0 + 1);
  const vmax = Math.max(...all.map(p => p[1]), floor || 1) * 1.1;
  const x = t => pad.l + (t - t0) / (t1 - t0) * (w - pad.l - pad.r);
  const y = v => h - pad.b - v / vmax * (h - pad.t - pad.b);
  g.strokeStyle = '#2a3140';
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const v = vmax * i / 4;
    g.beginPath();
    g.moveTo(pad.l, y(v));
    g.lineTo(w - pad.r, y(v));
    g.stroke();
    g.fillText(fmt(v), 4, y(v) + 4);
  }
  g.fillText(new Date(t0 * 1000).toLocaleTimeString(undefined, {hour12: false}), pad.l, h - 4);
  const end = new Date(t1 * 1000).toLocaleTimeString(undefined, {hour12: false});
  g.fillText(end, w - pad.r - g.measureText(end).width, h - 4);
  for (const s of series) {
    g.strokeStyle = s.color;
    g.lineWidth = 1.5;
    g.beginPath();
    s.points.forEach((p, i) => (i ? g.lineTo(x(p[0]), y(p[1])) : g.moveTo(x(p[0]), y(p[1]))));
    g.stroke();
  }
};

const vmaxOf = points => Math.max(0, ...points.map(p => p[1]));

// Network counters are totals: per-second rates between samples.
AJ.metrics.rates = function (samples, key) {
  const out = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = samples[i].t - samples[i - 1].t;
    const dv = samples[i][key] - samples[i - 1][key];
    if (dt > 0 && dv >= 0) out.push([samples[i].t, dv / dt]);
  }
  return out;
};

AJ.metrics.refresh = async function () {
  const ref = AJ.sb.ref;
  const status = AJ.$('#metrics-status');
  if (!ref || AJ.sb.tab !== 'metrics' || document.hidden) return;
  if (AJ.sb.rec && AJ.sb.rec.state === 'stopped') {
    status.textContent = 'The sandbox is stopped: no samples (a start begins a new series).';
    return;
  }
  let m;
  try {
    m = await AJ.api('GET', AJ.sbPath(ref, '/metrics'), undefined, {timeout: AJ.POLL_TIMEOUT});
  } catch (e) {
    status.textContent = 'metrics: ' + e.message;
    return;
  }
  const samples = m.samples.concat(m.now ? [m.now] : [])
    .map(s => Object.assign({t: Date.parse(s.time) / 1000}, s))
    .filter(s => !isNaN(s.t)).sort((a, b) => a.t - b.t);
  const pts = key => samples.filter(s => typeof s[key] === 'number').map(s => [s.t, s[key]]);
  const last = samples[samples.length - 1] || {};
  status.textContent = samples.length + ' samples, one every ' + m.every_s + ' s; now: CPU ' +
    (last.cpu_percent || 0).toFixed(1) + ' %, memory ' + AJ.bytes(last.memory) +
    (last.memory_limit ? ' of ' + AJ.bytes(last.memory_limit) : '') + ', ' + (last.pids || 0) + ' processes';
  const pct = v => v.toFixed(vmaxOf(pts('cpu_percent')) < 10 ? 1 : 0) + ' %';
  AJ.chart(AJ.$('#chart-cpu'), [{points: pts('cpu_percent'), color: '#5aa9ff'}], pct, 1);
  AJ.chart(AJ.$('#chart-memory'), [{points: pts('memory'), color: '#7bd88f'}], AJ.bytes, 1 << 20);
  AJ.chart(AJ.$('#chart-pids'), [{points: pts('pids'), color: '#c792ea'}], v => v.toFixed(0), 4);
  AJ.chart(AJ.$('#chart-net'), [{points: AJ.metrics.rates(samples, 'net_up'), color: '#5aa9ff'},
    {points: AJ.metrics.rates(samples, 'net_down'), color: '#7bd88f'}], v => AJ.bytes(v) + '/s', 1024);
};

AJ.metrics.start = function () {
  AJ.metrics.stop();
  AJ.metrics.refresh();
  AJ.metrics.timer = setInterval(AJ.metrics.refresh, 5000);
};

AJ.metrics.stop = function () {
  clearInterval(AJ.metrics.timer);
  AJ.metrics.timer = null;
};
