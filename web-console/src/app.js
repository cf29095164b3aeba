// The console's shell: hash routes -> pages. Each page is render(view, route, ctx) and registers
// its timers and sockets with ctx, which stops them all when the route changes.
import { clusterId, login, logout, whoami } from './api.js';
import { errorBox, fill, h } from './dom.js';
import * as overview from './page-overview.js';
import * as brokers from './page-brokers.js';
import * as topics from './page-topics.js';
import * as topic from './page-topic.js';
import * as messages from './page-messages.js';
import * as tail from './page-tail.js';
import * as groups from './page-groups.js';
import * as group from './page-group.js';
import * as delayed from './page-delayed.js';
import * as acls from './page-acls.js';
import * as quotas from './page-quotas.js';

/**
 * "#/topics/orders?x=1" -> {page, path: ['topics', 'orders'], query: URLSearchParams}.
 * Path segments are percent-decoded (topic and group names may hold any allowed character).
 */
export function parseRoute(hash) {
  const text = (hash || '').replace(/^#\/?/, '');
  const [pathText, queryText = ''] = text.split('?');
  const path = pathText.split('/').filter(Boolean).map(decodeURIComponent);
  return { page: path[0] || 'overview', path, query: new URLSearchParams(queryText) };
}

function pageFor(route) {
  switch (route.page) {
    case 'overview': return overview;
    case 'brokers': return brokers;
    case 'topics': return route.path.length > 1 ? topic : topics;
    case 'messages': return messages;
    case 'tail': return tail;
    case 'groups': return route.path.length > 1 ? group : groups;
    case 'delayed': return delayed;
    case 'acls': return acls;
    case 'quotas': return quotas;
    default: return null;
  }
}

/** What a page may hold while shown; everything is released on the next route change. */
class PageContext {
  constructor() {
    this.cleanups = [];
    this.alive = true;
  }
  /** Runs fn now (or first after ms with {now: false}) and then every ms, never overlapping
   *  itself: the next run is timed from the end of this one. */
  every(ms, fn, { now = true } = {}) {
    let timer = null;
    const tick = async () => {
      if (!this.alive) return;
      try {
        await fn();
      } finally {
        if (this.alive) timer = setTimeout(tick, ms);
      }
    };
    if (now) tick();
    else timer = setTimeout(tick, ms);
    this.onLeave(() => clearTimeout(timer));
  }
  onLeave(fn) { this.cleanups.push(fn); }
  leave() {
    this.alive = false;
    for (const fn of this.cleanups.splice(0)) {
      try { fn(); } catch (e) { console.error(e); }
    }
  }
}

let current = null;

function show() {
  const route = parseRoute(location.hash);
  if (current) current.leave();
  current = new PageContext();
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', a.dataset.page === route.page);
  }
  const view = document.getElementById('view');
  const page = pageFor(route);
  if (!page) {
    fill(view, errorBox(`no console page "${route.page}"`));
    return;
  }
  view.replaceChildren();
  view.dataset.page = route.page;
  Promise.resolve(page.render(view, route, current)).catch((e) => view.append(errorBox(e)));
}

// -- authentication (issue 29): with http.authentication.method other than NONE, the console asks
// for a user and password (POST /v1/login) and then works on its session cookie.

let loginShown = false;
// Whether this page was ever logged in: a 401 then means the session ended; before, it is the
// first visit, and "the session ended" would name a session there never was (new user, session 24).
let loggedIn = false;

function showLogin(message) {
  if (loginShown) return;
  loginShown = true;
  if (current) current.leave();
  current = null;
  const view = document.getElementById('view');
  view.dataset.page = 'login';
  const user = h('input', { name: 'user', autocomplete: 'username', required: true, 'data-testid': 'login-user' });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true,
    'data-testid': 'login-password' });
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  if (message) status.append(errorBox(message));
  const form = h('form', { class: 'login', 'data-testid': 'login-form', onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      await login(user.value, password.value);
      loginShown = false;
      start();
    } catch (e) {
      fill(status, errorBox(e.status === 401 ? 'wrong user name or password' : e));
    }
  } },
  h('h1', {}, 'Log in to ringlog'),
  h('label', {}, 'User ', user),
  h('label', {}, 'Password ', password),
  h('button', { type: 'submit', 'data-testid': 'login-submit' }, 'Log in'),
  status);
  fill(view, form);
  user.focus();
}

function showPrincipal(who) {
  loggedIn = true;
  const place = document.getElementById('principal');
  if (!place) return;
  if (who.authentication === 'NONE') return place.replaceChildren();
  fill(place, h('span', { 'data-testid': 'principal' }, who.principal), ' ',
    h('button', { type: 'button', class: 'link', 'data-testid': 'logout', onclick: async () => {
      await logout().catch(() => {});
      place.replaceChildren();
      showLogin();
    } }, 'Log out'));
}

async function start() {
  try {
    showPrincipal(await whoami());
  } catch (e) {
    if (e.status === 401) return showLogin();
    document.getElementById('view').prepend(errorBox(e));
  }
  show();
  clusterId().then((id) => { document.getElementById('cluster').textContent = `cluster ${id}`; },
    (e) => document.getElementById('view').prepend(errorBox(e)));
}

window.addEventListener('hashchange', () => { if (!loginShown) show(); });
window.addEventListener('ringlog-login-required', () => showLogin(loggedIn ? 'the session ended: log in again' : undefined));
start();
