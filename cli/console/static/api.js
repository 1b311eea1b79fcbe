// The page's only way to the API: the console's forwarder on this same origin, with the per-run
// secret in a header. The browser never sees a token or AWS credentials; the forwarder signs.

const SECRET_KEY = 'tool-ledger-console-secret';
const SECRET_HEADER = 'x-tool-ledger-console';

/**
 * Takes the secret from the URL fragment the CLI printed (`#secret=…`) into this tab's session
 * storage and drops it from the address bar, so it is not left on screen or in the history.
 * Returns whether a secret is known.
 */
export function adoptSecret() {
  const match = /^#secret=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(SECRET_KEY, match[1]);
    history.replaceState(null, '', '#/queue');
  }
  return sessionStorage.getItem(SECRET_KEY) !== null;
}

/** An API refusal, carrying the problem document as the API (or the forwarder) sent it. */
export class ProblemError extends Error {
  constructor(status, problem) {
    super(`${problem.code ?? `http_${status}`}: ${problem.title ?? ''}`);
    this.name = 'ProblemError';
    this.status = status;
    this.problem = { code: `http_${status}`, status, ...problem };
  }
}

async function call(method, path, { query, body } = {}) {
  const url = new URL(`/api${path}`, location.origin);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  const headers = { accept: 'application/json, application/problem+json' };
  const secret = sessionStorage.getItem(SECRET_KEY);
  if (secret) headers[SECRET_HEADER] = secret;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch {
    throw new ProblemError(0, {
      code: 'console_unreachable',
      title: 'The console server does not answer (was `tool-ledger console` stopped?)',
    });
  }
  let data;
  try {
    data = await response.json();
  } catch {
    data = undefined;
  }
  if (!response.ok) throw new ProblemError(response.status, typeof data === 'object' && data ? data : {});
  return data;
}

/** The reconciliation queue, one page (`state`, `limit`, `cursor`). */
export function listOperations(query) {
  return call('GET', '/v1/operations', { query });
}

/** One operation; `include` is a list of `arguments`, `history`. */
export function getOperation(id, include = []) {
  return call('GET', `/v1/operations/${encodeURIComponent(id)}`, {
    query: { include: include.join(',') },
  });
}

/** Approves or rejects, bound to the digest the approver was shown. */
export function decide(id, decision, argumentsDigest) {
  return call('POST', `/v1/operations/${encodeURIComponent(id)}/approval`, {
    body: { decision, arguments_digest: argumentsDigest },
  });
}

/** Resolves at the attempt the operator was shown; `result` only with `applied`. */
export function resolve(id, resolution) {
  return call('POST', `/v1/operations/${encodeURIComponent(id)}/resolution`, { body: resolution });
}

/** The tools with their JSON Schemas. */
export async function tools() {
  return (await call('GET', '/v1/tools')).tools;
}

let identityOnce;

/**
 * Who the console's credentials are (`{tenant, principal, roles}`), asked once per page load: the
 * pages offer only the decisions those roles may take.
 */
export function identity() {
  identityOnce ??= call('GET', '/v1/identity').catch((error) => {
    identityOnce = undefined;
    throw error;
  });
  return identityOnce;
}
