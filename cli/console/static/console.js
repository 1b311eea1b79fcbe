// The console's entry: takes the secret from the printed URL, then routes on the URL fragment
// (#/queue, #/operations/<id>, #/tools, #/counts) so that back, forward and reload work.

import { adoptSecret } from './api.js';
import { h, replace } from './dom.js';
import { queueView } from './queue.js';
import { countsView, operationView, rememberQueue, toolsView } from './views.js';

const view = document.getElementById('view');

function route() {
  const hash = location.hash || '#/queue';
  const [path, query = ''] = hash.slice(1).split('?');
  const params = new URLSearchParams(query);
  const parts = path.split('/').filter(Boolean);
  let section = parts[0] ?? 'queue';
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (link.dataset.nav === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (section === 'operations' && parts[1]) {
    let id;
    try {
      id = decodeURIComponent(parts.slice(1).join('/'));
    } catch {
      id = undefined;
    }
    if (id !== undefined) return operationView(view, id);
    section = 'missing';
  }
  if (section === 'queue') {
    rememberQueue(hash);
    return queueView(view, params);
  }
  if (section === 'tools') return toolsView(view);
  if (section === 'counts') return countsView(view);
  replace(
    view,
    h('h1', { tabindex: '-1' }, 'Not found'),
    h('p', {}, h('a', { href: '#/queue' }, 'Go to the queue')),
  );
}

if (!adoptSecret()) {
  replace(
    view,
    h('h1', {}, 'Open the console from its URL'),
    h(
      'p',
      {},
      'This page needs the secret that `tool-ledger console` printed with its URL (after #secret=). Open that exact URL.',
    ),
  );
} else {
  window.addEventListener('hashchange', () => void route());
  void route();
}
