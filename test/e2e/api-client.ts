import { request as httpRequest } from 'node:http';

/**
 * A bare HTTP client for the end-to-end tests: they talk to local mode only over HTTP, exactly as an
 * agent would, and look at statuses, headers and bodies as sent.
 */

/** A response as the tests inspect it. */
export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: Record<string, unknown> | undefined;
}

/** One call to `POST /v1/operations`. */
export interface OperationCall {
  key?: string;
  body?: unknown;
  /** Bearer token (local mode's made tokens: `stack.tokens.agent`). */
  token: string;
  headers?: Record<string, string>;
}

/** Sends any request to the API. */
export async function send(
  api: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {},
): Promise<ApiResponse> {
  const response = await fetch(`${api}${path}`, {
    method: init.method ?? 'GET',
    headers: init.headers ?? {},
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const text = await response.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** `POST /v1/operations` with JSON, a bearer token and (unless `key` is undefined) an Idempotency-Key. */
export function postOperation(api: string, call: OperationCall): Promise<ApiResponse> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${call.token}`,
    'content-type': 'application/json',
    ...call.headers,
  };
  if (call.key !== undefined) headers['idempotency-key'] = call.key;
  return send(api, '/v1/operations', {
    method: 'POST',
    headers,
    body: typeof call.body === 'string' ? call.body : JSON.stringify(call.body),
  });
}

/** `GET /v1/operations/{id}`. */
export function getOperation(api: string, id: string, token: string): Promise<ApiResponse> {
  return send(api, `/v1/operations/${encodeURIComponent(id)}`, {
    headers: { authorization: `Bearer ${token}` },
  });
}

/**
 * A request whose headers are sent line by line as given (fetch would merge repeated names), for the
 * cases where repetition itself is under test.
 */
export function rawRequest(
  api: string,
  path: string,
  method: string,
  headers: Record<string, string | string[]>,
  body: Buffer,
): Promise<{ status: number; contentType: string | undefined; text: string }> {
  const url = new URL(path, api);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        // An array value is sent as one header line per element.
        headers: { ...headers, 'content-length': String(body.length) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: res.headers['content-type'],
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Polls the operation until `done` holds (bounded): the stack's work is asynchronous, never slept on. */
export async function waitForOperation(
  api: string,
  id: string,
  done: (body: Record<string, unknown>) => boolean,
  options: { token: string; timeoutMs?: number },
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  let last: ApiResponse | undefined;
  while (Date.now() < deadline) {
    last = await getOperation(api, id, options.token);
    if (last.status === 200 && last.json && done(last.json)) return last.json;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`operation ${id} did not reach the expected state; last: ${last?.status} ${last?.text}`);
}
