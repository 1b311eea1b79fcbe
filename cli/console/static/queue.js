// The reconciliation queue page: filters, a table of matching operations, paging and refresh. The
// state filter is the API's own; tool, age and attempt are searched for across the whole queue by
// `searchQueue`, which reads the listing with the API's cursor.

import * as api from './api.js';
import { age, ageSeconds, announce, h, replace, stateBadge } from './dom.js';
import { searchQueue } from './search.js';
import { focusHeading, heading, operationHref, problemBox, UNRESOLVED_STATES } from './views.js';

const AGES = [
  ['', 'any age'],
  ['60', 'over 1 minute'],
  ['600', 'over 10 minutes'],
  ['3600', 'over 1 hour'],
  ['86400', 'over 1 day'],
];

const PER_PAGE = ['10', '25', '50', '100'];
const DEFAULT_PER_PAGE = 25;

/**
 * Entries of the queue one search reads at most before it stops and asks whether to keep searching:
 * ten full API pages, about a second against a deployment. `&scan=N` in the address changes it.
 */
export const DEFAULT_SCAN = 1000;
const MAX_SCAN = 100_000;

/** The queue's view state as the address holds it (`#/queue?tool=…&age=…`), cleaned of nonsense. */
function readFilters(params) {
  const state = params.get('state') ?? '';
  const ageParam = params.get('age') ?? '';
  const attempt = params.get('attempt') ?? '';
  const perPage = params.get('per_page') ?? '';
  const scan = Number(params.get('scan') ?? '');
  return {
    state: UNRESOLVED_STATES.includes(state) ? state : '',
    tool: params.get('tool') ?? '',
    age: AGES.some(([value]) => value === ageParam) ? ageParam : '',
    attempt: /^\d{1,6}$/.test(attempt) ? String(Number(attempt)) : '',
    perPage: PER_PAGE.includes(perPage) ? Number(perPage) : DEFAULT_PER_PAGE,
    scan: Number.isInteger(scan) && scan >= 1 && scan <= MAX_SCAN ? scan : DEFAULT_SCAN,
    scanGiven: params.has('scan'),
  };
}

/** The console's own filters as one predicate, or undefined when only the API's state filter is set. */
function matcher(filters, now) {
  if (!filters.tool && !filters.age && !filters.attempt) return undefined;
  return (op) =>
    (!filters.tool || op.tool === filters.tool) &&
    (!filters.age || ageSeconds(op.created_at, now) >= Number(filters.age)) &&
    (!filters.attempt || op.attempt >= Number(filters.attempt));
}

/**
 * The reconciliation queue: unresolved operations, newest first, a page at a time. With a tool, age
 * or attempt filter, a page holds the first matches found from where it starts, however far into the
 * queue they are, up to the search's bound (then the page says so and offers to keep searching).
 * Next and previous move between pages that each start where the one before ended; refresh reads the
 * page shown again from its start.
 */
export async function queueView(view, params) {
  const filters = readFilters(params);
  heading(view, 'Reconciliation queue');
  const toolList = await api.tools().catch(() => []);
  const results = h('div', { id: 'queue-results' });
  view.append(filterForm(filters, toolList), results);
  focusHeading(view);

  // The pages before the one shown (for Previous), and the one shown: where each starts, and how many
  // entries its search may read (more once the operator asked to keep searching).
  const earlier = [];
  let current = { from: undefined, budget: filters.scan };
  let found;
  let now = Date.now();
  let generation = 0;

  const search = (from, want, budget) =>
    searchQueue({
      list: api.listOperations,
      state: filters.state,
      matches: matcher(filters, now),
      want,
      budget,
      from,
    });

  /** Runs `work` for the page and shows its outcome, unless a later action overtook it. */
  const show = async (work, focusOn) => {
    const mine = ++generation;
    replace(results, h('p', { class: 'muted', 'aria-busy': 'true' }, 'Searching the queue…'));
    let outcome;
    try {
      outcome = await work();
    } catch (error) {
      if (mine !== generation) return;
      replace(results, problemBox(error), pagingButtons(undefined));
      // After a button press, to Refresh (to try again); a page that just opened keeps its heading.
      focusAfter(focusOn && 'refresh');
      return;
    }
    if (mine !== generation) return;
    found = outcome;
    render();
    focusAfter(focusOn);
  };

  const load = (focusOn) => show(() => search(current.from, filters.perPage, current.budget), focusOn);

  const keepSearching = () =>
    show(async () => {
      const more = await search(found.next, filters.perPage - found.operations.length, filters.scan);
      current.budget += filters.scan;
      return {
        operations: [...found.operations, ...more.operations],
        next: more.next,
        read: found.read + more.read,
        stoppedEarly: more.stoppedEarly,
      };
    }, 'more');

  const actions = {
    previous: () => {
      current = earlier.pop() ?? { from: undefined, budget: filters.scan };
      void load('previous');
    },
    next: () => {
      earlier.push(current);
      current = { from: found.next, budget: filters.scan };
      void load('next');
    },
    refresh: () => {
      now = Date.now();
      void load('refresh');
    },
    more: () => void keepSearching(),
  };

  function pagingButtons(page) {
    const button = (action, label, disabled) =>
      h('button', { type: 'button', 'data-action': action, disabled, onclick: actions[action] }, label);
    return h(
      'p',
      { class: 'paging' },
      button('previous', 'Previous page', earlier.length === 0),
      ' ',
      button('next', 'Next page', !page || page.next === null),
      ' ',
      button('refresh', 'Refresh', false),
    );
  }

  function render() {
    const filtered = matcher(filters, now) !== undefined;
    const count = found.operations.length;
    const number = earlier.length + 1;
    const ops = `${count} ${filtered ? 'matching ' : ''}operation${count === 1 ? '' : 's'}`;
    const summary = h(
      'p',
      { class: 'summary', id: 'queue-summary', tabindex: '-1' },
      `Page ${number}: ${ops}`,
      filtered ? `, found among ${found.read} read from the queue` : '',
      found.next === null ? ' · end of the queue' : '',
      ` · loaded ${new Date(now).toLocaleTimeString()}`,
    );
    const stopped = found.stoppedEarly
      ? h(
          'div',
          { class: 'notice', 'data-testid': 'stopped-early' },
          h(
            'p',
            {},
            `The search stopped after reading ${found.read} operations without filling the page: `,
            `older operations in the queue were not searched yet.`,
          ),
          h(
            'p',
            {},
            h(
              'button',
              { type: 'button', class: 'primary', 'data-action': 'more', onclick: actions.more },
              `Keep searching (${filters.scan} more)`,
            ),
          ),
        )
      : null;
    replace(
      results,
      summary,
      stopped,
      count === 0
        ? h('p', { class: 'empty' }, emptyText(filtered, found, number))
        : queueTable(found.operations, now),
      pagingButtons(found),
    );
    announce(
      `Page ${number}: ${ops}${found.stoppedEarly ? '; the search stopped early, keep searching for more' : ''}`,
    );
  }

  function focusAfter(action) {
    if (!action) return;
    const button = results.querySelector(`[data-action="${action}"]`);
    if (button && !button.disabled) button.focus();
    else results.querySelector('#queue-summary')?.focus();
  }

  await load(undefined);
}

function emptyText(filtered, found, number) {
  if (found.stoppedEarly) return 'No match among the operations read so far.';
  if (filtered) return number === 1 ? 'No unresolved operation matches the filters.' : 'No further matches.';
  return number === 1 ? 'No unresolved operations.' : 'No further operations.';
}

function filterForm(filters, toolList) {
  const select = (name, label, options, value) =>
    h(
      'label',
      {},
      label,
      h(
        'select',
        { name },
        options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)),
      ),
    );
  const tools = toolList.map((t) => t.name);
  // A filter on a tool the deployment no longer lists still shows what it filters on.
  if (filters.tool && !tools.includes(filters.tool)) tools.push(filters.tool);
  const filtered = filters.state || filters.tool || filters.age || filters.attempt;
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter the queue' },
    select(
      'state',
      'State',
      [['', 'all unresolved'], ...UNRESOLVED_STATES.map((s) => [s, s])],
      filters.state,
    ),
    select('tool', 'Tool', [['', 'any tool'], ...tools.map((t) => [t, t])], filters.tool),
    select('age', 'Age', AGES, filters.age),
    h(
      'label',
      {},
      'Attempt at least',
      h('input', {
        name: 'attempt',
        type: 'number',
        min: '0',
        step: '1',
        value: filters.attempt,
        inputmode: 'numeric',
      }),
    ),
    select(
      'per_page',
      'Per page',
      PER_PAGE.map((n) => [n, n]),
      String(filters.perPage),
    ),
    filters.scanGiven ? h('input', { type: 'hidden', name: 'scan', value: String(filters.scan) }) : null,
    h(
      'p',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, 'Apply filters'),
      filtered ? h('a', { href: '#/queue', class: 'clear' }, 'Clear filters') : null,
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const [name, value] of new FormData(form)) {
      if (value !== '' && !(name === 'per_page' && value === String(DEFAULT_PER_PAGE))) {
        query.set(name, String(value));
      }
    }
    const text = query.toString();
    const target = `#/queue${text ? `?${text}` : ''}`;
    // The same filters applied again search again, as an operator pressing the button expects.
    if (location.hash === target) window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = target;
  });
  return form;
}

function queueTable(operations, now) {
  return h(
    'table',
    { class: 'queue' },
    h('caption', { class: 'visually-hidden' }, 'Unresolved operations, newest first'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Operation', 'Tool', 'Runs in', 'State', 'Attempt', 'Age', 'Digest'].map((c) =>
          h('th', { scope: 'col' }, c),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      operations.map((op) =>
        h(
          'tr',
          { 'data-operation-id': op.operation_id },
          h('th', { scope: 'row' }, h('a', { href: operationHref(op.operation_id) }, op.operation_id)),
          h('td', {}, op.tool),
          // Who runs the effect: the ledger's executor, or the agent that claims each attempt itself.
          h(
            'td',
            {
              class: 'execution',
              title: op.execution === 'caller' ? 'its caller claims and runs each attempt' : '',
            },
            op.execution === 'caller' ? 'caller' : 'ledger',
          ),
          h('td', {}, stateBadge(op.state)),
          h('td', { class: 'num' }, String(op.attempt)),
          h('td', { class: 'num', title: op.created_at }, age(op.created_at, now)),
          h(
            'td',
            { class: 'digest' },
            h('code', { title: op.arguments_digest }, `${op.arguments_digest.slice(0, 15)}…`),
          ),
        ),
      ),
    ),
  );
}
