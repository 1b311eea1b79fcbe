// Building the page from data: every value from the API goes in as text (textContent), never as HTML,
// so a tool name, an error message or a result can never become markup or script.

/**
 * Creates an element. `attrs` are set as attributes (`on*` functions as listeners); children are
 * nodes, strings (as text), or null/false (skipped), nested arrays flattened.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's content. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

/** How long ago an ISO time was, in its largest whole unit (42s, 5m, 3h, 12d), like the CLI. */
export function age(iso, now = Date.now()) {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return '-';
  const s = Math.max(0, Math.floor((now - at) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** Seconds since an ISO time (NaN when unreadable). */
export function ageSeconds(iso, now = Date.now()) {
  return (now - Date.parse(iso)) / 1000;
}

/** A JSON value, indented, for a `<pre>`. */
export function pretty(value) {
  return JSON.stringify(value, null, 2) ?? 'null';
}

/** Hex digits between two of a digest's break opportunities. */
const DIGEST_GROUP = 16;

/**
 * An arguments digest in full (`v1:` and 64 hex digits), in monospace with a break opportunity
 * (`<wbr>`, which adds no character to what is copied) after the prefix and every
 * {@link DIGEST_GROUP} digits. Where it does not fit on one line it wraps between groups, into
 * balanced lines (see `.digest-full`), never a lone last digit.
 */
export function digestCode(digest, attrs = {}) {
  const colon = digest.indexOf(':') + 1;
  const parts = [digest.slice(0, colon)];
  for (let i = colon; i < digest.length; i += DIGEST_GROUP) parts.push(digest.slice(i, i + DIGEST_GROUP));
  const pieces = parts
    .filter((part) => part !== '')
    .flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part]));
  return h('code', { class: 'digest-full', ...attrs }, pieces);
}

/** A state as a badge: the name in text (colour only repeats it). */
export function stateBadge(state) {
  return h('span', { class: `state state-${state}` }, state);
}

/** Announces a short message to screen readers. */
export function announce(text) {
  const status = document.getElementById('status');
  if (status) status.textContent = text;
}
