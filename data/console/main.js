// Starts the page: the login form, and the views by the address's fragment:
//   #/                        the sandboxes
//   #/sandboxes/REF[/TAB]     one sandbox (TAB: overview, events, metrics, files, terminal)
'use strict';

AJ.views = ['login-view', 'list-view', 'sandbox-view'];

AJ.showView = function (id) {
  for (const v of AJ.views) AJ.$('#' + v).hidden = v !== id;
  const inside = id !== 'login-view';
  AJ.$('#logout').hidden = !inside;
  AJ.$('#live').hidden = !inside;
  AJ.$('#who').hidden = !inside;
  if (inside) AJ.showWho();
};

AJ.route = function () {
  if (!AJ.token()) {
    AJ.list.stop();
    AJ.sb.leave();
    AJ.showView('login-view');
    AJ.$('#login-error').textContent = AJ.loginMessage || '';
    AJ.$('#login-token').focus();
    return;
  }
  const m = /^#\/sandboxes\/([^/]+)(?:\/([a-z]+))?$/.exec(location.hash);
  if (m) {
    AJ.list.stop();
    AJ.showView('sandbox-view');
    AJ.sb.show(decodeURIComponent(m[1]), m[2]);
    return;
  }
  AJ.sb.leave();
  AJ.showView('list-view');
  AJ.list.show();
};

AJ.initLogin = function () {
  AJ.$('#login-form').addEventListener('submit', async e => {
    e.preventDefault();
    const input = AJ.$('#login-token');
    const err = AJ.$('#login-error');
    err.textContent = '';
    try {
      await AJ.login(input.value.trim());
      input.value = '';
      AJ.loginMessage = '';
      AJ.route();
    } catch (ex) {
      err.textContent = ex.status === 401 ? 'This token is not valid here.' : 'Cannot log in: ' + ex.message;
    }
  });
  AJ.$('#logout').addEventListener('click', () => AJ.logout('Logged out.'));
};

document.addEventListener('DOMContentLoaded', async () => {
  AJ.$('#where').textContent = location.host;
  await AJ.loginFromFragment();
  AJ.initLogin();
  AJ.sb.init();
  AJ.events.init();
  AJ.files.init();
  AJ.terminal.init();
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && AJ.list.timer) AJ.list.refresh();
  });
  window.addEventListener('hashchange', AJ.route);
  AJ.route();
});
