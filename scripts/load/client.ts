/**
 * The load run's HTTP client: one request, timed, with the two client-side faults a real agent sees
 * (its own timeout cutting a request off, a server that is not there), classified so the report can
 * say what happened to every send.
 */

/** How one request ended. */
export type CallOutcome =
  /** An HTTP status arrived. */
  | { kind: 'status'; status: number; body: Record<string, unknown> | undefined }
  /** The client aborted it (a lost response: the server may have done the work). */
  | { kind: 'aborted' }
  /** The connection broke after the request may have been sent (also a lost response). */
  | { kind: 'lost' }
  /** Nothing listened (local mode restarting): nothing was sent. */
  | { kind: 'refused' };

/** One timed request, for the latency figures. */
export interface CallSample {
  route: 'submit' | 'read';
  outcome: CallOutcome['kind'];
  status?: number;
  ms: number;
}

/** Where the API is now (it may move to a new process during a restart) and how to call it. */
export interface ApiTarget {
  api(): string;
  token: string;
}

function isRefused(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  return cause?.code === 'ECONNREFUSED';
}

/**
 * Sends one request and records its sample. `abortAfterMs` cuts it off client-side.
 *
 * @example
 * ```ts
 * const out = await request(target, samples, 'submit', 'POST', '/v1/operations', { headers, body });
 * if (out.kind === 'status') console.log(out.status);
 * ```
 */
export async function request(
  target: ApiTarget,
  samples: CallSample[],
  route: CallSample['route'],
  method: string,
  path: string,
  init: { headers?: Record<string, string>; body?: string; abortAfterMs?: number } = {},
): Promise<CallOutcome> {
  const controller = new AbortController();
  const timer =
    init.abortAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), init.abortAfterMs);
  const started = performance.now();
  let outcome: CallOutcome;
  try {
    const res = await fetch(`${target.api()}${path}`, {
      method,
      headers: { authorization: `Bearer ${target.token}`, ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body }),
      signal: controller.signal,
    });
    const text = await res.text();
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = undefined;
    }
    outcome = { kind: 'status', status: res.status, body };
  } catch (error) {
    if (controller.signal.aborted) outcome = { kind: 'aborted' };
    else if (isRefused(error)) outcome = { kind: 'refused' };
    else outcome = { kind: 'lost' };
  } finally {
    clearTimeout(timer);
  }
  samples.push({
    route,
    outcome: outcome.kind,
    ...(outcome.kind === 'status' ? { status: outcome.status } : {}),
    ms: performance.now() - started,
  });
  return outcome;
}

/**
 * Repeats a request while nothing listens (a restart in progress), up to `deadline`: a refused
 * connection sent nothing, so trying again is what any client would do.
 */
export async function requestUntilListening(
  target: ApiTarget,
  samples: CallSample[],
  route: CallSample['route'],
  method: string,
  path: string,
  init: { headers?: Record<string, string>; body?: string; abortAfterMs?: number },
  deadline: number,
): Promise<CallOutcome> {
  for (;;) {
    const outcome = await request(target, samples, route, method, path, init);
    if (outcome.kind !== 'refused' || Date.now() > deadline) return outcome;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
