// The console's pages but the queue (queue.js): one operation, the tools, the counts, and what every
// page shares. Each view renders into the main element from what the API returns; every decision goes
// through `confirmDialog`, which shows the digest (and the attempt) being decided on.

import * as api from './api.js';
import { age, digestCode, h, pretty, replace, stateBadge } from './dom.js';

/** Unresolved states, in the order an operator reads them (the listing holds only these). */
export const UNRESOLVED_STATES = [
  'needs_reconciliation',
  'uncertain',
  'awaiting_approval',
  'failed_retryable',
  'pending',
  'queued',
];

/** A problem from the API (or the forwarder): its stable code and title, then its detail. */
export function problemBox(error, extra) {
  const problem =
    error instanceof api.ProblemError
      ? error.problem
      : { code: 'console_error', title: error instanceof Error ? error.message : String(error) };
  const status = problem.status ? ` (${problem.status})` : '';
  return h(
    'div',
    { class: 'problem', role: 'alert', 'data-code': problem.code },
    h(
      'p',
      {},
      h('strong', { class: 'code' }, problem.code),
      status,
      problem.title ? `: ${problem.title}` : '',
    ),
    problem.detail && problem.detail !== problem.title ? h('p', { class: 'detail' }, problem.detail) : null,
    Array.isArray(problem.issues)
      ? h(
          'ul',
          {},
          problem.issues.slice(0, 10).map((issue) => h('li', {}, `${issue.path}: ${issue.message}`)),
        )
      : null,
    extra,
  );
}

/** Replaces the view with its page heading (focusable, so a navigation can move focus to it). */
export function heading(view, text) {
  const el = h('h1', { tabindex: '-1' }, text);
  replace(view, el);
  return el;
}

/** Moves focus to the page's heading after a navigation, so keyboard and screen-reader users follow. */
export function focusHeading(view) {
  view.querySelector('h1')?.focus();
}

/** The console's link to one operation. */
export function operationHref(id) {
  return `#/operations/${encodeURIComponent(id)}`;
}

// ── One operation ───────────────────────────────────────────────────────────────────────────────

/**
 * One operation: the record, its digest, the transition history as a timeline, and the panel that
 * fits its state: approval for `awaiting_approval`, resolution for `uncertain` and
 * `needs_reconciliation`. The arguments are asked for too; credentials without the approver or
 * operator role get the record without them.
 */
export async function operationView(view, id) {
  heading(view, `Operation ${id}`);
  focusHeading(view);
  let op;
  let argumentsHidden = false;
  let roles;
  try {
    roles = (await api.identity()).roles;
    try {
      op = await api.getOperation(id, ['arguments', 'history']);
    } catch (error) {
      if (!(error instanceof api.ProblemError && error.problem.code === 'forbidden')) throw error;
      op = await api.getOperation(id, ['history']);
      argumentsHidden = true;
    }
  } catch (error) {
    view.append(problemBox(error), backLink());
    return;
  }
  renderOperation(view, op, argumentsHidden, roles);
}

function renderOperation(view, op, argumentsHidden, roles, notice) {
  heading(view, `Operation ${op.operation_id}`);
  const panel = decisionPanel(view, op, argumentsHidden, roles);
  view.append(
    backLink(),
    ...(notice ? [notice] : []),
    h('p', { class: 'state-note', 'data-testid': 'state-note' }, stateNote(op)),
    h(
      'div',
      { class: 'columns' },
      h(
        'div',
        {},
        h(
          'section',
          { 'aria-labelledby': 'record-h' },
          h('h2', { id: 'record-h' }, 'Record'),
          recordList(op),
        ),
        panel,
        // The approval panel shows the arguments being approved itself.
        op.state === 'awaiting_approval'
          ? null
          : h(
              'section',
              { 'aria-labelledby': 'args-h' },
              h('h2', { id: 'args-h' }, 'Arguments'),
              argumentsBlock(op, argumentsHidden),
            ),
        op.result !== null && op.result !== undefined
          ? h(
              'section',
              { 'aria-labelledby': 'result-h' },
              h('h2', { id: 'result-h' }, 'Result'),
              h('pre', { class: 'json' }, pretty(op.result)),
            )
          : null,
      ),
      h(
        'section',
        { 'aria-labelledby': 'timeline-h' },
        h('h2', { id: 'timeline-h' }, 'History'),
        timeline(op.history ?? []),
      ),
    ),
  );
}

function argumentsBlock(op, argumentsHidden) {
  return argumentsHidden
    ? h(
        'p',
        { class: 'muted' },
        'Hidden: the console’s credentials have neither the approver nor the operator role.',
      )
    : h('pre', { class: 'json', 'data-testid': 'arguments' }, pretty(op.arguments));
}

const QUEUE_KEY = 'tool-ledger-console-queue';

/** Remembers the queue's address with its filters, for the way back from an operation. */
export function rememberQueue(hash) {
  sessionStorage.setItem(QUEUE_KEY, hash);
}

function backLink() {
  const href = sessionStorage.getItem(QUEUE_KEY) ?? '#/queue';
  return h('p', { class: 'back' }, h('a', { href }, '← Back to the queue'));
}

function recordList(op) {
  const rows = [
    ['Operation ID', h('code', {}, op.operation_id)],
    ['Tool', op.tool],
    ['State', stateBadge(op.state)],
    [
      'Executed by',
      op.execution === 'caller'
        ? 'its caller: an agent claims each attempt and runs the effect itself'
        : 'the ledger: its tools module, through the work queue',
    ],
    ['Attempt', String(op.attempt)],
    ['Arguments digest', digestCode(op.arguments_digest, { 'data-testid': 'digest' })],
    ['Created', `${op.created_at} (${age(op.created_at)} ago)`],
    ['Completed', op.completed_at ?? '—'],
  ];
  if (op.agent_run_id) rows.push(['Agent run', op.agent_run_id]);
  if (op.lease_expires_at)
    rows.push([
      op.execution === 'caller' ? 'Claim’s lease ends' : 'Lease expires',
      `${op.lease_expires_at}${op.execution === 'caller' ? ' (unless its caller sends a heartbeat)' : ''}`,
    ]);
  if (op.downstream_key) rows.push(['Downstream key', h('code', {}, op.downstream_key)]);
  if (op.approval_deadline) rows.push(['Approval deadline', op.approval_deadline]);
  if (op.approval)
    rows.push(['Approval', `${op.approval.decision} by ${op.approval.by} at ${op.approval.at}`]);
  if (op.resolved_by) rows.push(['Resolved by', op.resolved_by]);
  if (op.reconciled)
    rows.push([
      'Reconciled',
      op.execution === 'caller' && op.reconciled_by
        ? `yes: ${op.reconciled_by} checked the target and gave its caller’s verdict`
        : 'yes: the reconciler asked the target',
    ]);
  if (op.error) rows.push(['Error', h('span', {}, h('code', {}, op.error.code), `: ${op.error.message}`)]);
  if (op.late_outcome) {
    const late = op.late_outcome;
    rows.push([
      'Late outcome',
      `attempt ${late.attempt} reported ${late.state} (${late.outcome_code}) at ${late.at}`,
    ]);
  }
  return h(
    'dl',
    { class: 'record' },
    rows.map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
  );
}

function timeline(history) {
  if (history.length === 0) return h('p', { class: 'muted' }, 'No history on the record.');
  return h(
    'ol',
    { class: 'timeline', 'data-testid': 'timeline' },
    history.map((entry) =>
      h(
        'li',
        { class: `to-${entry.to}`, 'data-from': entry.from ?? '', 'data-to': entry.to },
        h('p', { class: 'when' }, h('time', { datetime: entry.at }, entry.at)),
        h(
          'p',
          { class: 'what' },
          entry.from ? stateBadge(entry.from) : h('span', { class: 'state state-none' }, 'new'),
          h('span', { 'aria-label': 'to' }, ' → '),
          stateBadge(entry.to),
        ),
        h(
          'p',
          { class: 'who' },
          `attempt ${entry.attempt} · by ${entry.by}`,
          entry.code ? h('span', {}, ' · ', h('code', {}, entry.code)) : null,
          VERDICT_CODES[entry.code]
            ? h('span', { class: 'verdict', 'data-testid': 'verdict' }, ` · ${VERDICT_CODES[entry.code]}`)
            : null,
        ),
      ),
    ),
  );
}

/** History codes of a caller's verdict on its own uncertain attempt, and how the timeline says them. */
const VERDICT_CODES = {
  verdict_applied: 'the caller’s verdict: the effect happened',
  verdict_not_applied: 'the caller’s verdict: the effect did not happen',
};

/** What the state means for this operation and what happens next, in one sentence or two. */
export function stateNote(op) {
  const caller = op.execution === 'caller';
  switch (op.state) {
    case 'awaiting_approval':
      return `Waits for an approver’s decision${op.approval_deadline ? ` until ${op.approval_deadline}; then it is rejected` : ''}. Nothing runs before that.`;
    case 'queued':
      return 'Queued: a worker will run the next attempt.';
    case 'pending':
      return caller
        ? 'Its caller holds the claim and runs the attempt. If the claim’s lease ends without an outcome, the attempt becomes uncertain.'
        : 'A worker is running the attempt. If its lease ends without an outcome, the attempt becomes uncertain.';
    case 'failed_retryable':
      return caller
        ? 'The attempt failed without an effect. The next attempt is its caller’s to claim, with the same downstream key.'
        : 'The attempt failed without an effect. The next attempt runs with the same downstream key.';
    case 'uncertain':
      return caller
        ? 'The outcome of this attempt is unknown. The ledger waits for a verdict from its caller (any agent of the tenant may give one) and then hands it to an operator; you may resolve it now if you have checked the target.'
        : 'The outcome of this attempt is unknown. The reconciler will check the target (or retry where the tool allows it) and then hand it to an operator; you may resolve it now if you have checked the target.';
    case 'needs_reconciliation':
      return 'The ledger could not settle this operation and will not try again by itself. Nothing happens until a person checks the target and resolves it.';
    case 'succeeded':
      return 'Final: the effect happened. A replay returns this result; it never changes.';
    case 'failed_terminal':
      return 'Final: it failed and will not be retried. It never changes.';
    case 'rejected':
      return 'Final: it was rejected and never ran.';
    default:
      return '';
  }
}

function decisionPanel(view, op, argumentsHidden, roles) {
  if (op.state === 'awaiting_approval') {
    return roles.includes('approver')
      ? approvalPanel(view, op, argumentsHidden, roles)
      : roleNote('Approval', 'approver', roles);
  }
  if (op.state === 'uncertain' || op.state === 'needs_reconciliation') {
    return roles.includes('operator')
      ? resolutionPanel(view, op, argumentsHidden, roles)
      : roleNote('Resolution', 'operator', roles);
  }
  return null;
}

/** In place of a decision the console's credentials may not take: who may, and how to get there. */
function roleNote(title, role, roles) {
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'decision-h', 'data-testid': 'role-note' },
    h('h2', { id: 'decision-h' }, title),
    h(
      'p',
      {},
      `This decision needs the ${role} role; the console’s credentials have ${roles.length > 0 ? roles.join(' and ') : 'no role'}. `,
      `Run a console with ${role} credentials (locally: --token "$(npx tool-ledger token --role ${role})").`,
    ),
  );
}

function approvalPanel(view, op, argumentsHidden, roles) {
  const feedback = h('div', { class: 'feedback' });
  const decide = async (decision) => {
    const ok = await confirmDialog(
      decision === 'approve' ? 'Approve this operation?' : 'Reject this operation?',
      [
        h(
          'p',
          {},
          decision === 'approve'
            ? 'It is queued and runs once, with the arguments of exactly this digest:'
            : 'It will never run.',
        ),
        digestLines(op),
        decision === 'approve' && !argumentsHidden
          ? h('pre', { class: 'json short' }, pretty(op.arguments))
          : null,
      ],
      decision === 'approve' ? 'Approve' : 'Reject',
    );
    if (!ok) return;
    await submitDecision(view, op, argumentsHidden, roles, feedback, () =>
      api.decide(op.operation_id, decision, op.arguments_digest),
    );
  };
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'approval-h' },
    h('h2', { id: 'approval-h' }, 'Approval'),
    h(
      'p',
      {},
      'The decision is bound to this digest: arguments other than those shown can never ride on it.',
    ),
    digestLines(op),
    h('h3', {}, 'Arguments'),
    argumentsBlock(op, argumentsHidden),
    h(
      'p',
      { class: 'actions' },
      h('button', { type: 'button', class: 'primary', onclick: () => void decide('approve') }, 'Approve…'),
      ' ',
      h('button', { type: 'button', class: 'danger', onclick: () => void decide('reject') }, 'Reject…'),
    ),
    feedback,
  );
}

function resolutionPanel(view, op, argumentsHidden, roles) {
  const feedback = h('div', { class: 'feedback' });
  const outcomes = [
    ['applied', 'applied: the effect happened (succeeded, with the result below)'],
    ['not_applied', 'not applied: it did not happen; retry it with the same key (failed_retryable)'],
    ['failed', 'failed: it did not happen and must not be retried (failed_terminal)'],
  ];
  const resultField = h('textarea', {
    id: 'resolution-result',
    name: 'result',
    rows: '4',
    spellcheck: 'false',
    placeholder: '{"checked": true}',
  });
  const form = h(
    'form',
    { class: 'resolution' },
    h(
      'fieldset',
      {},
      h('legend', {}, 'What did you find on the target?'),
      // Nothing is chosen for the operator: `applied` records an effect only a person can vouch for.
      outcomes.map(([value, label]) =>
        h('label', { class: 'radio' }, h('input', { type: 'radio', name: 'outcome', value }), ` ${label}`),
      ),
    ),
    h('label', { for: 'resolution-result' }, 'Result to store (JSON, optional, applied only)'),
    resultField,
    h(
      'p',
      { class: 'muted' },
      `Resolves attempt ${op.attempt} only: if the operation has moved on, nothing changes.`,
    ),
    h('p', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Resolve…')),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const outcome = new FormData(form).get('outcome');
    if (outcome === null) {
      replace(feedback, problemBox(localProblem('choose what you found on the target first')));
      return;
    }
    const resolution = { outcome, attempt: op.attempt };
    const text = resultField.value.trim();
    if (text !== '') {
      if (outcome !== 'applied') {
        replace(feedback, problemBox(localProblem('a result only goes with the outcome applied')));
        return;
      }
      try {
        resolution.result = JSON.parse(text);
      } catch {
        replace(feedback, problemBox(localProblem('the result is not JSON')));
        return;
      }
    }
    const ok = await confirmDialog(
      `Resolve as ${outcome}?`,
      [
        digestLines(op),
        h('p', {}, `Attempt: ${op.attempt}`),
        'result' in resolution
          ? [h('p', {}, 'Result:'), h('pre', { class: 'json' }, pretty(resolution.result))]
          : null,
      ],
      `Resolve as ${outcome}`,
    );
    if (!ok) return;
    await submitDecision(view, op, argumentsHidden, roles, feedback, () =>
      api.resolve(op.operation_id, resolution),
    );
  });
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'resolution-h' },
    h('h2', { id: 'resolution-h' }, 'Resolution'),
    h('p', {}, 'Check the target system by hand, then record what you found.'),
    form,
    feedback,
  );
}

function localProblem(detail) {
  return new api.ProblemError(400, { code: 'validation_failed', title: 'The request is invalid', detail });
}

function digestLines(op) {
  return h(
    'dl',
    { class: 'record compact' },
    h('dt', {}, 'Operation'),
    h('dd', {}, h('code', {}, op.operation_id)),
    h('dt', {}, 'Arguments digest'),
    h('dd', {}, digestCode(op.arguments_digest)),
  );
}

/**
 * Sends a decision and shows its outcome. On success the page shows the record as the API returned
 * it; on a refusal it keeps the record it showed and says what the API found (for `state_changed`,
 * where the operation is now), so nothing looks decided that was not.
 */
async function submitDecision(view, op, argumentsHidden, roles, feedback, send) {
  replace(feedback, h('p', { class: 'muted' }, 'Sending…'));
  try {
    const updated = await send();
    const fresh = await api
      .getOperation(op.operation_id, argumentsHidden ? ['history'] : ['arguments', 'history'])
      .catch(() => updated);
    renderOperation(
      view,
      fresh,
      argumentsHidden,
      roles,
      h(
        'p',
        { class: 'ok', role: 'status' },
        `Done: the operation is now ${updated.state} (attempt ${updated.attempt}).`,
      ),
    );
    focusHeading(view);
  } catch (error) {
    const now = error instanceof api.ProblemError ? error.problem.operation : undefined;
    const extra = now
      ? h(
          'p',
          {},
          `The operation is now ${now.state} at attempt ${now.attempt}. Nothing was changed by this request. `,
          h(
            'button',
            { type: 'button', onclick: () => void operationView(view, op.operation_id) },
            'Reload the operation',
          ),
        )
      : null;
    replace(feedback, problemBox(error, extra));
    feedback.querySelector('[role=alert]')?.focus?.();
  }
}

/**
 * A modal confirmation (the native `<dialog>`: focus stays inside, Escape cancels, Cancel is the
 * default). Resolves true only when the operator presses the confirm button.
 */
export function confirmDialog(title, body, confirmLabel) {
  const dialog = document.getElementById('confirm');
  replace(document.getElementById('confirm-title'), title);
  replace(document.getElementById('confirm-body'), body);
  replace(document.getElementById('confirm-ok'), confirmLabel);
  dialog.returnValue = 'cancel';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'confirm'), { once: true });
    dialog.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

// ── Tools and counts ────────────────────────────────────────────────────────────────────────────

/** The deployment's tools: flags and the JSON Schema of their arguments. */
export async function toolsView(view) {
  heading(view, 'Tools');
  focusHeading(view);
  let list;
  try {
    list = await api.tools();
  } catch (error) {
    view.append(problemBox(error));
    return;
  }
  view.append(
    h(
      'div',
      { class: 'tools' },
      list.map((tool) =>
        h(
          'section',
          { class: 'tool', 'aria-labelledby': `tool-${tool.name}` },
          h('h2', { id: `tool-${tool.name}` }, h('code', {}, tool.name)),
          h('p', {}, tool.description),
          h(
            'dl',
            { class: 'record compact' },
            h('dt', {}, 'Effect'),
            h('dd', {}, tool.effect),
            h('dt', {}, 'Needs approval'),
            h('dd', {}, tool.requires_approval ? 'yes' : 'no'),
            h('dt', {}, 'Timeout'),
            h('dd', {}, `${tool.timeout_ms} ms`),
            h('dt', {}, 'Attempts at most'),
            h('dd', {}, String(tool.max_attempts)),
          ),
          h(
            'details',
            {},
            h('summary', {}, 'Arguments schema'),
            h('pre', { class: 'json' }, pretty(tool.input_schema)),
          ),
        ),
      ),
    ),
  );
}

/** Pages read at most for the counts: enough for any queue a person works through by hand. */
const COUNT_PAGES = 50;

/**
 * Unresolved operations by state, counted from the listing (the API has no counting route): every
 * page up to {@link COUNT_PAGES} pages of 100.
 */
export async function countsView(view) {
  heading(view, 'Unresolved operations by state');
  focusHeading(view);
  const out = h('div', {}, h('p', { class: 'muted' }, 'Counting…'));
  view.append(out);
  const counts = new Map(UNRESOLVED_STATES.map((s) => [s, 0]));
  let cursor;
  let pages = 0;
  try {
    do {
      const page = await api.listOperations({ limit: 100, cursor });
      for (const op of page.operations) counts.set(op.state, (counts.get(op.state) ?? 0) + 1);
      cursor = page.next_cursor ?? undefined;
      pages += 1;
    } while (cursor && pages < COUNT_PAGES);
  } catch (error) {
    replace(out, problemBox(error));
    return;
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  replace(
    out,
    h(
      'table',
      { class: 'counts' },
      h(
        'thead',
        {},
        h('tr', {}, h('th', { scope: 'col' }, 'State'), h('th', { scope: 'col' }, 'Operations')),
      ),
      h(
        'tbody',
        {},
        [...counts].map(([state, n]) =>
          h(
            'tr',
            { 'data-state': state },
            h('th', { scope: 'row' }, h('a', { href: `#/queue?state=${state}` }, stateBadge(state))),
            h('td', { class: 'num' }, String(n)),
          ),
        ),
      ),
      h(
        'tfoot',
        {},
        h('tr', {}, h('th', { scope: 'row' }, 'Total'), h('td', { class: 'num' }, String(total))),
      ),
    ),
    h(
      'p',
      { class: 'muted' },
      cursor
        ? `Stopped after ${pages} pages: these are lower bounds.`
        : `Counted from ${pages} page(s) of the listing.`,
    ),
  );
}
