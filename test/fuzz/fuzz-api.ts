import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { expect } from 'vitest';
import type { ErrorCode } from '../../functions/domain/errors';
import { PROBLEMS, problemType } from '../../functions/http/problem';
import { builtinTools } from '../../functions/tools/builtin';
import { parse, type TestApi, type TestResponse, testApi, testContext } from '../http/support';
import { type DynaliteHandle, startDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';

/**
 * The API under fuzz: the real handler (createApiHandler) over dynalite, with a scripted effect, a
 * scripted tool that needs approval, and the shipped tools (workspace in a temp folder, webhook
 * allowed to one closed loopback port), so every tool schema of the project is a target.
 */

/** How many cases each property runs: a few hundred in CI, more with `FUZZ_RUNS=5000`. */
export const RUNS = Number(process.env.FUZZ_RUNS ?? 200);

/** Per-test time limit: the suite default, stretched for long runs (`FUZZ_RUNS`). */
export const FUZZ_TEST_TIMEOUT_MS = Math.max(30_000, RUNS * 400);

/** A property's share of {@link RUNS} (some properties are slower per case). */
export function runs(fraction = 1): number {
  return Math.max(20, Math.round(RUNS * fraction));
}

/** Every 4xx code of the SPEC's list (functions/http/problem.ts): the only codes a refusal may carry. */
export const REFUSAL_CODES: readonly ErrorCode[] = (Object.keys(PROBLEMS) as ErrorCode[]).filter(
  (code) => PROBLEMS[code].status >= 400 && PROBLEMS[code].status < 500,
);

/** The webhook allow list of the fuzzed API: one loopback port nothing listens on. */
export const WEBHOOK_ORIGIN = 'http://127.0.0.1:9';

/** A running API under fuzz. */
export interface FuzzApi {
  db: DynaliteHandle;
  /** The API on the current table; {@link FuzzApi.freshTable} replaces it. */
  api: TestApi;
  /** Moves `api` to a new, empty table (scans stay cheap, and no case sees another's records). */
  freshTable(): Promise<TestApi>;
  effect: ScriptedTool;
  approval: ScriptedTool;
  /** Tool starts of both scripted tools (the shipped tools cannot reach anything). */
  starts(): number;
  stop(): Promise<void>;
}

/** Starts dynalite and builds the API on a fresh table. */
export async function startFuzzApi(): Promise<FuzzApi> {
  const db = await startDynalite();
  const workspace = await mkdtemp(path.join(tmpdir(), 'tool-ledger-fuzz-'));
  const effect = new ScriptedTool('test.effect');
  const approval = new ScriptedTool('test.approve', { requiresApproval: true });
  const shipped = builtinTools({ workspaceRoot: workspace, webhookAllow: [WEBHOOK_ORIGIN], local: true });
  const tools = [effect.tool, approval.tool, ...shipped];
  const fuzz: FuzzApi = {
    db,
    api: await testApi(db.client, tools),
    async freshTable() {
      fuzz.api = await testApi(db.client, tools);
      return fuzz.api;
    },
    effect,
    approval,
    starts: () => effect.starts.length + approval.starts.length,
    async stop() {
      await db.stop();
      await rm(workspace, { recursive: true, force: true });
    },
  };
  return fuzz;
}

/**
 * Asserts a refusal: a 4xx (never a 5xx), `application/problem+json` with the members of RFC 9457,
 * a code from the SPEC's list (and from `codes` when given) whose status is the response's, and
 * headers that carry nothing a caller could inject.
 */
export function expectRefusal(res: TestResponse, codes: readonly ErrorCode[] = REFUSAL_CODES): ErrorCode {
  expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
  expect(res.headers['Content-Type']).toBe('application/problem+json');
  const code = res.body.code as ErrorCode;
  expect(codes, `unexpected code ${code}`).toContain(code);
  expect(res.status).toBe(PROBLEMS[code].status);
  expect(res.body).toMatchObject({
    type: problemType(code),
    status: res.status,
    title: PROBLEMS[code].title,
  });
  expectSafeHeaders(res);
  return code;
}

/** Every response header value is printable ASCII: no CR, LF or NUL a caller could have planted. */
export function expectSafeHeaders(res: TestResponse): void {
  for (const [name, value] of Object.entries(res.headers)) {
    expect(String(value), name).toMatch(/^[\x20-\x7e]*$/);
  }
}

/** Error-level lines in captured output: the API logs one exactly when it answers a 5xx. */
export function errorLines(lines: readonly string[]): string[] {
  return lines.filter((line) => /"level":"(ERROR|CRITICAL)"/.test(line));
}

/** A request as API Gateway delivers it, with headers and query parameters in any order and repeated. */
export interface RawRequest {
  method: string;
  path: string;
  headers?: [string, string][];
  query?: [string, string][];
  body?: string | null;
  isBase64Encoded?: boolean;
  /** Which header maps the event carries (API Gateway sends both; tests also send one or none). */
  headerMaps?: 'both' | 'single' | 'multi' | 'none';
  /** Which query maps the event carries. */
  queryMaps?: 'both' | 'single' | 'multi';
}

/**
 * Builds the event the way the Lambda runtime hands it over: JSON text parsed with `JSON.parse`, so a
 * header or parameter named `__proto__` is an own property, exactly as in production (an object
 * literal assignment would set the prototype instead and hide it).
 */
export function rawEvent(request: RawRequest): APIGatewayProxyEvent {
  const single = (pairs: [string, string][]) => {
    const last = new Map<string, string>();
    for (const [name, value] of pairs) last.set(name, value);
    return `{${[...last].map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value)}`).join(',')}}`;
  };
  const multi = (pairs: [string, string][]) => {
    const all = new Map<string, string[]>();
    for (const [name, value] of pairs) all.set(name, [...(all.get(name) ?? []), value]);
    return `{${[...all].map(([name, values]) => `${JSON.stringify(name)}:${JSON.stringify(values)}`).join(',')}}`;
  };
  const headers = request.headers ?? [];
  const query = request.query ?? [];
  const headerMaps = request.headerMaps ?? 'both';
  const queryMaps = request.queryMaps ?? 'both';
  const text = [
    `"httpMethod":${JSON.stringify(request.method)}`,
    `"path":${JSON.stringify(request.path)}`,
    `"resource":"/{proxy+}"`,
    `"headers":${headerMaps === 'both' || headerMaps === 'single' ? single(headers) : 'null'}`,
    `"multiValueHeaders":${headerMaps === 'both' || headerMaps === 'multi' ? multi(headers) : 'null'}`,
    `"queryStringParameters":${query.length > 0 && queryMaps !== 'multi' ? single(query) : 'null'}`,
    `"multiValueQueryStringParameters":${query.length > 0 && queryMaps !== 'single' ? multi(query) : 'null'}`,
    `"body":${JSON.stringify(request.body ?? null)}`,
    `"isBase64Encoded":${request.isBase64Encoded === true}`,
    `"pathParameters":null`,
    `"stageVariables":null`,
    `"requestContext":{"requestId":"fuzz","identity":{"sourceIp":"127.0.0.1","userArn":null}}`,
  ].join(',');
  return JSON.parse(`{${text}}`) as APIGatewayProxyEvent;
}

/** Sends a raw request through the handler of `api`. */
export async function callRaw(api: TestApi, request: RawRequest): Promise<TestResponse> {
  return parse(await api.handler(rawEvent(request), testContext()));
}
