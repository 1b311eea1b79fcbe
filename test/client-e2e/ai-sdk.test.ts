import {
  generateText,
  type ModelMessage,
  simulateReadableStream,
  stepCountIs,
  streamText,
  type ToolApprovalResponse,
  tool,
} from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { currentRunContext, isLedgerEnvelope, withLedger } from '../../client/ai-sdk-entry';
import { bearerToken, REPLAY_NOTE, type RunContext, ToolLedgerClient } from '../../client/index';
import { operationKey } from '../../functions/contract/keys';
import { useDynalite } from '../support/dynalite';
import { FaultyFetch, type ServedLedger, serveLedger } from './support/served-ledger';

/**
 * `@tool-ledger/client/ai-sdk` with the AI SDK's own `generateText` / `streamText` and its own mock
 * model (`ai/test`), against the real ledger: the API handler on dynalite over HTTP, its clock and
 * reconciler driven by the test. The mock model behaves as a provider does when a step is generated
 * again: the same tool calls, with new tool-call IDs. Every effect lands in an in-test mailbox that
 * counts sends, so "one effect" is counted where the effect happens.
 */

const db = useDynalite();
let served: ServedLedger;
let faults: FaultyFetch;
let run = 0;

beforeEach(async () => {
  served = await serveLedger(db);
  faults = new FaultyFetch();
  run++;
});
afterEach(async () => {
  await served.close();
});

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

let generation = 0;

/** A stream part of the AI SDK's language model interface, as the mock model streams it. */
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

/** The calls a scripted model makes: tool name and JSON input, in order. */
type ScriptedCalls = { toolName: string; input: Record<string, unknown> }[];

/**
 * A mock model that answers a conversation ending in a user message with `calls` (each generation
 * mints new tool-call IDs, as providers do), and one ending in tool results with text.
 */
function scriptedModel(calls: ScriptedCalls) {
  const toolCalls = () =>
    calls.map((call) => ({
      type: 'tool-call' as const,
      toolCallId: `call-${++generation}`,
      toolName: call.toolName,
      input: JSON.stringify(call.input),
    }));
  return new MockLanguageModelV4({
    doGenerate: async (options) => {
      if (options.prompt.at(-1)?.role === 'tool') {
        return {
          content: [{ type: 'text', text: 'done' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage,
          warnings: [],
        };
      }
      return {
        content: toolCalls(),
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    },
    doStream: async (options) => {
      const done = options.prompt.at(-1)?.role === 'tool';
      const finish = {
        type: 'finish' as const,
        finishReason: done
          ? { unified: 'stop' as const, raw: undefined }
          : { unified: 'tool-calls' as const, raw: undefined },
        usage,
      };
      const chunks: StreamPart[] = done
        ? [
            { type: 'text-start' as const, id: 't' },
            { type: 'text-delta' as const, id: 't', delta: 'done' },
            { type: 'text-end' as const, id: 't' },
            finish,
          ]
        : [...toolCalls(), finish];
      return { stream: simulateReadableStream({ chunks, chunkDelayInMs: null }) };
    },
  });
}

/** A mail service with its own record of sends, looked up by idempotency key (what `reconcile` asks). */
class Mailbox {
  readonly sent: { to: string; key: string | undefined }[] = [];
  send(to: string): { messageId: string } {
    this.sent.push({ to, key: currentRunContext()?.downstreamKey });
    return { messageId: `m-${this.sent.length}` };
  }
  readonly reconcile = (ctx: RunContext) => {
    const index = this.sent.findIndex((s) => s.key === ctx.downstreamKey);
    return index >= 0
      ? { status: 'applied' as const, result: { messageId: `m-${index + 1}` } }
      : { status: 'not_applied' as const };
  };
}

function agentClient(extra: { token?: string } = {}) {
  return new ToolLedgerClient({
    endpoint: served.endpoint,
    signer: bearerToken(extra.token ?? 'agent-a'),
    fetch: faults.fetch,
    backoff: { baseMs: 5, maxMs: 20 },
    pollBackoff: { baseMs: 5, maxMs: 20 },
    deadlineMs: 30_000,
  });
}

function mailTools(mailbox: Mailbox) {
  return {
    sendEmail: tool({
      description: 'Sends an email',
      inputSchema: z.object({ to: z.string(), body: z.string() }),
      execute: async ({ to }) => mailbox.send(to),
    }),
    searchDocs: tool({
      description: 'Searches the docs',
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => ({ hits: [query] }),
    }),
  };
}

const conversation = (): ModelMessage[] => [{ role: 'user', content: 'Email ana@example.com the report' }];
const sendToAna: ScriptedCalls = [
  { toolName: 'sendEmail', input: { to: 'ana@example.com', body: 'report' } },
];

async function stored(operationId: string) {
  return served.ledger.store.get(operationKey('acme', operationId));
}

describe('withLedger with generateText', () => {
  it('runs the write tool once; the same step re-run as after a crash is a replay the model is told about', async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    const tools = withLedger(agentClient(), mailTools(mailbox), { runId, read: ['searchDocs'] });
    const first = await generateText({
      model: scriptedModel(sendToAna),
      tools,
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    expect(first.text).toBe('done');
    expect(first.steps[0]!.toolResults[0]!.output).toEqual({ messageId: 'm-1' });
    expect(mailbox.sent).toHaveLength(1);
    expect(mailbox.sent[0]!.key).toMatch(/^[A-Za-z0-9_-]{1,64}$/);

    // A new process re-runs the same step of the same conversation: a new wrapping, new tool-call IDs.
    const model = scriptedModel(sendToAna);
    const again = await generateText({
      model,
      tools: withLedger(agentClient(), mailTools(mailbox), { runId, read: ['searchDocs'] }),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    const output = again.steps[0]!.toolResults[0]!.output;
    expect(mailbox.sent).toHaveLength(1);
    expect(isLedgerEnvelope(output)).toBe(true);
    expect(output).toEqual({
      operation_id: `${runId}/0/send_email/0`,
      state: 'succeeded',
      replayed: true,
      note: REPLAY_NOTE,
      result: { messageId: 'm-1' },
    });
    // What the model read next is that envelope, as the model adapters give it.
    const toolMessage = model.doGenerateCalls[1]!.prompt.at(-1);
    expect(toolMessage).toMatchObject({
      role: 'tool',
      content: [{ type: 'tool-result', output: { type: 'json', value: output } }],
    });
    expect((await stored(`${runId}/0/send_email/0`))?.state).toBe('succeeded');
  });

  it('changed arguments under the same ID are refused: nothing runs, the model is told of the conflict', async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    await generateText({
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), { runId }),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    const changed: ScriptedCalls = [
      { toolName: 'sendEmail', input: { to: 'bob@example.com', body: 'report' } },
    ];
    const second = await generateText({
      model: scriptedModel(changed),
      tools: withLedger(agentClient(), mailTools(mailbox), { runId }),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    expect(second.steps[0]!.toolResults[0]!.output).toMatchObject({
      operation_id: `${runId}/0/send_email/0`,
      state: 'conflict',
      replayed: false,
      error: { code: 'idempotency_key_reused' },
    });
    expect(mailbox.sent.map((s) => s.to)).toEqual(['ana@example.com']);
  });

  it('a crash between the effect and its outcome is recovered through reconcile: one email', async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    const options = {
      runId,
      tools: { sendEmail: { reconcile: mailbox.reconcile, leaseSeconds: 5 } },
    };
    faults.inject('outcome', 'crash');
    const crashed = await generateText({
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    expect(crashed.steps[0]!.toolResults[0]!.output).toMatchObject({ state: 'no_answer' });
    const id = `${runId}/0/send_email/0`;
    expect((await stored(id))?.state).toBe('pending');
    served.ledger.advance(6_000);
    await served.reconcile();
    expect((await stored(id))?.state).toBe('uncertain');

    const recovered = await generateText({
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    expect(recovered.steps[0]!.toolResults[0]!.output).toMatchObject({
      operation_id: id,
      state: 'succeeded',
      replayed: true,
      result: { messageId: 'm-1' },
    });
    expect(mailbox.sent).toHaveLength(1);
    expect(await stored(id)).toMatchObject({ state: 'succeeded', reconciled: true, attempt: 1 });
  });

  it('calls in one response get their positions per tool; a read tool runs outside the ledger', async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    const calls: ScriptedCalls = [
      { toolName: 'searchDocs', input: { query: 'report' } },
      { toolName: 'sendEmail', input: { to: 'ana@example.com', body: 'report' } },
      { toolName: 'sendEmail', input: { to: 'bob@example.com', body: 'report' } },
    ];
    const options = { runId, read: ['searchDocs' as const] };
    const first = await generateText({
      model: scriptedModel(calls),
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    expect(first.steps[0]!.toolResults.map((r) => r.output)).toEqual([
      { hits: ['report'] },
      { messageId: 'm-1' },
      { messageId: 'm-2' },
    ]);
    expect(await stored(`${runId}/0/send_email/0`)).toMatchObject({ state: 'succeeded' });
    expect(await stored(`${runId}/0/send_email/1`)).toMatchObject({ state: 'succeeded' });
    expect(faults.bodies('claim').map((b) => b.tool)).toEqual(['send_email', 'send_email']);

    // The re-run replays both, in the same places, and the read tool runs again as reads do.
    const again = await generateText({
      model: scriptedModel(calls),
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    expect(again.steps[0]!.toolResults.map((r) => r.output)).toMatchObject([
      { hits: ['report'] },
      { replayed: true, result: { messageId: 'm-1' } },
      { replayed: true, result: { messageId: 'm-2' } },
    ]);
    expect(mailbox.sent.map((s) => s.to)).toEqual(['ana@example.com', 'bob@example.com']);
  });

  it('a later step of the multi-step loop is a new step with its own ID', async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    // Two model turns that each send an email, then text.
    let turn = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () => {
        turn++;
        if (turn > 2) {
          return {
            content: [{ type: 'text', text: 'done' }],
            finishReason: { unified: 'stop', raw: undefined },
            usage,
            warnings: [],
          };
        }
        return {
          content: [
            {
              type: 'tool-call',
              toolCallId: `call-${++generation}`,
              toolName: 'sendEmail',
              input: JSON.stringify({ to: `turn${turn}@example.com`, body: 'hi' }),
            },
          ],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        };
      },
    });
    const result = await generateText({
      model,
      tools: withLedger(agentClient(), mailTools(mailbox), { runId }),
      messages: conversation(),
      stopWhen: stepCountIs(5),
    });
    expect(result.text).toBe('done');
    expect(await stored(`${runId}/0/send_email/0`)).toMatchObject({ state: 'succeeded' });
    expect(await stored(`${runId}/1/send_email/0`)).toMatchObject({ state: 'succeeded' });
    expect(mailbox.sent.map((s) => s.to)).toEqual(['turn1@example.com', 'turn2@example.com']);
  });
});

describe('withLedger with one tool', () => {
  it('a tool wrapped on its own, in a ToolSet beside others, replays the same step', async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    const toolSet = () => {
      const { sendEmail, searchDocs } = mailTools(mailbox);
      return {
        sendEmail: withLedger(agentClient(), sendEmail, { toolName: 'sendEmail', runId, name: 'mail.send' }),
        searchDocs,
      };
    };
    const first = await generateText({
      model: scriptedModel(sendToAna),
      tools: toolSet(),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    expect(first.steps[0]!.toolResults[0]!.output).toEqual({ messageId: 'm-1' });
    const again = await generateText({
      model: scriptedModel(sendToAna),
      tools: toolSet(),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    expect(again.steps[0]!.toolResults[0]!.output).toMatchObject({
      operation_id: `${runId}/0/mail.send/0`,
      replayed: true,
    });
    expect(mailbox.sent).toHaveLength(1);
  });
});

describe('withLedger with streamText', () => {
  it('the same step streamed again is a replay: one effect', async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    const stream = async () => {
      const result = streamText({
        model: scriptedModel(sendToAna),
        tools: withLedger(agentClient(), mailTools(mailbox), { runId }),
        messages: conversation(),
        stopWhen: stepCountIs(3),
      });
      return { text: await result.text, steps: await result.steps };
    };
    const first = await stream();
    expect(first.text).toBe('done');
    expect(first.steps[0]!.toolResults[0]!.output).toEqual({ messageId: 'm-1' });
    const again = await stream();
    expect(again.steps[0]!.toolResults[0]!.output).toMatchObject({
      operation_id: `${runId}/0/send_email/0`,
      replayed: true,
      result: { messageId: 'm-1' },
    });
    expect(mailbox.sent).toHaveLength(1);
  });
});

describe("withLedger and the AI SDK's tool approval", () => {
  function approverClient() {
    return new ToolLedgerClient({ endpoint: served.endpoint, signer: bearerToken('approver-a') });
  }

  /** The approval responses a person gives to every request in a result. */
  function answer(content: readonly { type: string }[], approved: boolean): ToolApprovalResponse[] {
    return content.flatMap((part) =>
      part.type === 'tool-approval-request' && 'approvalId' in part && typeof part.approvalId === 'string'
        ? [{ type: 'tool-approval-response' as const, approvalId: part.approvalId, approved }]
        : [],
    );
  }

  it("a person's approval in the SDK's flow is recorded in the ledger, bound to the ID and digest, and the call runs once", async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    const options = {
      runId,
      approver: approverClient(),
      tools: { sendEmail: { requiresApproval: true } },
    };
    const messages = conversation();
    const asked = await generateText({
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages,
      stopWhen: stepCountIs(3),
    });
    const responses = answer(asked.content, true);
    expect(responses).toHaveLength(1);
    expect(mailbox.sent).toHaveLength(0);
    expect(faults.bodies('claim')).toHaveLength(0); // the SDK asked; nothing reached the ledger yet

    messages.push(...asked.response.messages, { role: 'tool', content: responses });
    const model = scriptedModel(sendToAna);
    const approved = await generateText({
      model,
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages,
      stopWhen: stepCountIs(3),
    });
    expect(approved.text).toBe('done');
    // The SDK runs an approved call before it asks the model again, and sends it the result.
    expect(model.doGenerateCalls[0]!.prompt.at(-1)).toMatchObject({
      role: 'tool',
      content: [{ type: 'tool-result', output: { type: 'json', value: { messageId: 'm-1' } } }],
    });
    expect(mailbox.sent).toHaveLength(1);
    const id = `${runId}/0/send_email/0`;
    const record = await stored(id);
    expect(record).toMatchObject({ state: 'succeeded', policy: { requires_approval: true } });
    expect(record?.approval).toMatchObject({
      decision: 'approve',
      arguments_digest: record?.arguments_digest,
    });
    expect(record?.approval?.by).not.toBe(record?.history?.[0]?.by); // the approver, not the agent
    expect(record?.history?.map((h) => h.to)).toEqual([
      'awaiting_approval',
      'queued',
      'pending',
      'succeeded',
    ]);

    // The approved step re-run (the request that carried the answer, sent again): a replay.
    const replayModel = scriptedModel(sendToAna);
    await generateText({
      model: replayModel,
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages,
      stopWhen: stepCountIs(3),
    });
    expect(replayModel.doGenerateCalls[0]!.prompt.at(-1)).toMatchObject({
      role: 'tool',
      content: [
        { type: 'tool-result', output: { type: 'json', value: { operation_id: id, replayed: true } } },
      ],
    });
    expect(mailbox.sent).toHaveLength(1);
  });

  it('a denial in the SDK runs nothing and leaves nothing in the ledger', async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    const options = { runId, approver: approverClient(), tools: { sendEmail: { requiresApproval: true } } };
    const messages = conversation();
    const asked = await generateText({
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages,
    });
    messages.push(...asked.response.messages, { role: 'tool', content: answer(asked.content, false) });
    await generateText({
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages,
    });
    expect(mailbox.sent).toHaveLength(0);
    expect(faults.bodies('claim')).toHaveLength(0);
    expect(await stored(`${runId}/0/send_email/0`)).toBeUndefined();
  });

  it('without an approver the ledger holds the call for its own approvers; the model is told it waits', async () => {
    const mailbox = new Mailbox();
    const runId = `chat-${run}`;
    const options = { runId, tools: { sendEmail: { requiresApproval: true } } };
    const first = await generateText({
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    const id = `${runId}/0/send_email/0`;
    expect(first.steps[0]!.toolResults[0]!.output).toMatchObject({
      operation_id: id,
      state: 'awaiting_approval',
    });
    expect(mailbox.sent).toHaveLength(0);

    const approver = approverClient();
    await approver.approve(id, (await approver.get(id)).arguments_digest);
    const rerun = await generateText({
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), options),
      messages: conversation(),
      stopWhen: stepCountIs(3),
    });
    expect(rerun.steps[0]!.toolResults[0]!.output).toEqual({ messageId: 'm-1' });
    expect(mailbox.sent).toHaveLength(1);
  });
});

describe('withLedger refuses bad options before any call', () => {
  it('names no tool, no run identity, a name the ledger refuses: TypeError, and nothing is sent', () => {
    const tools = mailTools(new Mailbox());
    const ledger = agentClient();
    expect(() => withLedger(ledger, tools, { runId: 'r', tools: { sendMail: {} } as never })).toThrow(
      /options\.tools\.sendMail names no tool/,
    );
    expect(() => withLedger(ledger, tools, { runId: 'r', read: ['search'] as never })).toThrow(
      /options\.read names "search", no tool/,
    );
    expect(() => withLedger(ledger, tools, {})).toThrow(/needs options\.runId/);
    expect(() =>
      withLedger(ledger, tools, { runId: 'r', tools: { sendEmail: { name: 'Send Email' } } }),
    ).toThrow(/options\.tools\.sendEmail\.name/);
    expect(faults.delivered).toHaveLength(0);
  });

  it('a call the SDK did not announce and the conversation does not hold has no place: refused, nothing sent', async () => {
    const mailbox = new Mailbox();
    const { sendEmail } = withLedger(agentClient(), mailTools(mailbox), { runId: 'r' });
    const direct = sendEmail.execute?.(
      { to: 'ana@example.com', body: 'report' },
      { toolCallId: 'call-x', messages: conversation(), context: {} },
    );
    await expect(Promise.resolve(direct)).rejects.toThrow(/no stable place/);
    expect(mailbox.sent).toHaveLength(0);
    expect(faults.delivered).toHaveLength(0);
  });
});
