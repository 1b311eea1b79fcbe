import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll } from 'vitest';
import type { LedgerConfig } from '../../functions/config';
import { type ReconcileSummary, reconcilePass } from '../../functions/engine/reconcile';
import { createWorkQueues, type LocalSqs, startLocalSqs } from '../../functions/local/sqs-server';
import { SqsWorkQueue } from '../../functions/queue/sqs-work-queue';
import { checkTrace, type TraceVerdict } from '../../scripts/verify/trace-check';
import type { DynaliteHandle } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { type TestApi, type TestRequest, type TestResponse, testApi } from './support';

/**
 * The API handler over dynalite and a real work queue (fauxqs), both started by the test file, for
 * operations their caller executes: the queue is real so that "never enqueued" is read from SQS itself.
 */

/** The ledger's own tool: a name a caller may never declare. */
export const LEDGER_TOOL = 'test.effect';

/** A caller's tool name (the deployment does not run it). */
export const CALLER_TOOL = 'crm.create_contact';

/** One fauxqs for the test file that calls it. */
export function useFauxqs(): { readonly sqs: LocalSqs } {
  const holder = {} as { sqs: LocalSqs };
  beforeAll(async () => {
    holder.sqs = await startLocalSqs(0);
  });
  afterAll(async () => {
    await holder.sqs?.stop();
  });
  return holder;
}

/** An API over a fresh table and a fresh queue, with its clock and queue at hand. */
export interface CallerApi extends TestApi {
  /** The ledger's own scripted tool (`test.effect`). */
  tool: ScriptedTool;
  /** Messages on the work queue, visible or in flight. */
  queueDepth(): Promise<number>;
  /** One reconciler pass at the test clock. */
  reconcile(): Promise<ReconcileSummary>;
  /** Replays every transition line the ledger logged so far through the trace checker. */
  trace(): TraceVerdict;
}

let queues = 0;

/** Builds the API for one test. */
export async function callerApi(
  db: DynaliteHandle,
  fauxqs: { readonly sqs: LocalSqs },
  config: Partial<LedgerConfig> = {},
): Promise<CallerApi> {
  const tool = new ScriptedTool(LEDGER_TOOL);
  const api = await testApi(db.client, [tool.tool], config);
  queues += 1;
  const { queueUrl } = await createWorkQueues(fauxqs.sqs.client, {
    name: `caller-${process.pid}-${queues}`,
    visibilityTimeoutSeconds: 30,
    maxReceiveCount: 5,
  });
  api.ledger.deps.queue = new SqsWorkQueue(fauxqs.sqs.client, queueUrl);
  return {
    ...api,
    tool,
    async queueDepth() {
      const out = await fauxqs.sqs.client.send(
        new GetQueueAttributesCommand({
          QueueUrl: queueUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return (
        Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
      );
    },
    reconcile: () => reconcilePass(api.ledger.deps, api.ledger.req()),
    trace: () => checkTrace(api.ledger.logs),
  };
}

/** A claim request: `POST /v1/operations` with `"execution": "caller"`. */
export function claimRequest(
  key: string,
  fields: Record<string, unknown> = {},
  options: Partial<TestRequest> = {},
): TestRequest {
  return {
    method: 'POST',
    path: '/v1/operations',
    key,
    body: { tool: CALLER_TOOL, arguments: { email: 'a@example.com' }, execution: 'caller', ...fields },
    ...options,
  };
}

/** A POST to one of an operation's sub-resources. */
export function postTo(
  key: string,
  suffix: 'lease' | 'outcome' | 'reconciliation',
  body: unknown,
  options: Partial<TestRequest> = {},
): TestRequest {
  return {
    method: 'POST',
    path: `/v1/operations/${encodeURIComponent(key)}/${suffix}`,
    body,
    ...options,
  };
}

/** The claim of a 200 answer. */
export interface ClaimBody {
  token: string;
  attempt: number;
  lease_expires_at: string;
  downstream_key: string;
}

/** The claim in a response, failing the test when there is none. */
export function claimOf(response: TestResponse): ClaimBody {
  if (response.status !== 200 || typeof response.body.claim !== 'object') {
    throw new Error(`expected a claim, got ${response.status} ${JSON.stringify(response.body)}`);
  }
  return response.body.claim as ClaimBody;
}

/** `GET /v1/operations/{id}` as the tenant's all-roles token sees it, history included. */
export function readRequest(key: string, token = 'all-a'): TestRequest {
  return {
    method: 'GET',
    path: `/v1/operations/${encodeURIComponent(key)}`,
    token,
    query: [['include', 'history']],
  };
}
