// The terminal tab: a shell in the sandbox on a terminal made inside it, over a WebSocket
// (GET .../terminal, subprotocol agentjail.terminal.v1), rendered by xterm.js.
//
// A browser cannot put the bearer token in a WebSocket's headers, and a cookie would let any
// page of another site use it: the page first asks for a ticket with the token
// (POST .../terminal/tickets: single use, valid for 30 seconds, for this sandbox only) and
// offers it as a second subprotocol, "ticket.HEX". The daemon also refuses an upgrade whose
// Origin is not its own. Binary messages carry the terminal's bytes both ways; text messages
// are JSON: {"type": "resize", "rows", "cols"} from the page, start, exit and error from the
// daemon. The shell ends when the connection closes.
'use strict';

AJ.terminal = {term: null, fit: null, ws: null, observer: null, sized: ''};

AJ.terminal.status = function (text) {
  AJ.$('#term-status').textContent = text;
};

AJ.terminal.ensure = function () {
  if (AJ.terminal.term) return AJ.terminal.term;
  const term = new window.Terminal({cursorBlink: true, fontSize: 14, scrollback: 5000,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
    theme: {background: '#0b0f17'}});
  const fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(AJ.$('#terminal'));
  term.onData(d => AJ.terminal.send(new TextEncoder().encode(d)));
  term.onBinary(d => AJ.terminal.send(Uint8Array.from(d, c => c.charCodeAt(0) & 255)));
  term.onResize(({rows, cols}) => AJ.terminal.resize(rows, cols));
  AJ.terminal.observer = new ResizeObserver(() => AJ.terminal.refit());
  AJ.terminal.observer.observe(AJ.$('#terminal'));
  AJ.terminal.term = term;
  AJ.terminal.fit = fit;
  return term;
};

AJ.terminal.refit = function () {
  if (!AJ.terminal.fit || AJ.$('#tab-terminal').hidden) return;
  try { AJ.terminal.fit.fit(); } catch (e) { /* not laid out yet */ }
};

AJ.terminal.send = function (bytes) {
  const ws = AJ.terminal.ws;
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(bytes);
};

AJ.terminal.resize = function (rows, cols) {
  const ws = AJ.terminal.ws;
  const key = rows + 'x' + cols;
  if (!ws || ws.readyState !== WebSocket.OPEN || AJ.terminal.sized === key) return;
  AJ.terminal.sized = key;
  ws.send(JSON.stringify({type: 'resize', rows, cols}));
};

AJ.terminal.enter = function () {
  AJ.terminal.ensure();
  AJ.terminal.refit();
  if (!AJ.terminal.ws) AJ.terminal.connect();
  AJ.terminal.term.focus();
};

AJ.terminal.stateChanged = function () {
  if (AJ.sb.rec && AJ.sb.rec.state === 'running' && !AJ.terminal.ws) AJ.terminal.connect();
};

AJ.terminal.connect = async function () {
  const rec = AJ.sb.rec;
  if (!rec || rec.state !== 'running') {
    AJ.terminal.status('The sandbox must be running for a terminal.');
    return;
  }
  const term = AJ.terminal.ensure();
  AJ.terminal.close();
  AJ.terminal.refit();
  AJ.terminal.status('connecting…');
  let ticket;
  try {
    ticket = await AJ.api('POST', AJ.sbPath(rec.id, '/terminal/tickets'), {});
  } catch (e) {
    AJ.terminal.status('no terminal: ' + e.message);
    return;
  }
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host +
    AJ.sbPath(rec.id, '/terminal?rows=' + term.rows + '&cols=' + term.cols);
  const ws = new WebSocket(url, ['agentjail.terminal.v1', 'ticket.' + ticket.ticket]);
  ws.binaryType = 'arraybuffer';
  AJ.terminal.ws = ws;
  AJ.terminal.sized = term.rows + 'x' + term.cols;
  ws.onopen = () => AJ.terminal.status('connected to ' + rec.name);
  ws.onmessage = e => {
    if (typeof e.data !== 'string') {
      term.write(new Uint8Array(e.data));
      return;
    }
    const m = JSON.parse(e.data);
    if (m.type === 'start') AJ.terminal.status('connected to ' + rec.name + ' (process ' + m.process + ')');
    else if (m.type === 'exit') AJ.terminal.status('the shell ended (exit ' + (m.exit_code ?? m.status?.signal ?? '?') + ')');
    else if (m.type === 'error') AJ.terminal.status('error: ' + m.message);
  };
  ws.onclose = e => {
    if (AJ.terminal.ws !== ws) return;
    AJ.terminal.ws = null;
    if (!/ended|error/.test(AJ.$('#term-status').textContent))
      AJ.terminal.status('disconnected' + (e.reason ? ': ' + e.reason : ' (' + e.code + ')'));
  };
};

AJ.terminal.close = function () {
  const ws = AJ.terminal.ws;
  AJ.terminal.ws = null;
  if (ws) ws.close(1000, 'closed by the page');
};

AJ.terminal.init = function () {
  AJ.$('#term-connect').addEventListener('click', () => AJ.terminal.connect());
  AJ.$('#term-disconnect').addEventListener('click', () => {
    AJ.terminal.close();
    AJ.terminal.status('disconnected');
  });
  window.addEventListener('resize', () => AJ.terminal.refit());
};
