import { Agent, type ToolsInput } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { InMemoryStore } from '@mastra/core/storage';
import { MastraLanguageModelV2Mock } from '@mastra/core/test-utils/llm-mock';
import { createTool } from '@mastra/core/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { bearerToken, REPLAY_NOTE, type RunContext, ToolLedgerClient } from '../../client/index';
import { currentRunContext, isLedgerEnvelope, withLedger } from '../../client/mastra-entry';
import { operationKey } from '../../functions/contract/keys';
import { useDynalite } from '../support/dynalite';
import { FaultyFetch, type ServedLedger, serveLedger } from './support/served-ledger';

/**
 * `@tool-ledger/client/mastra` with Mastra's own `Agent` and its own mock model
 * (`@mastra/core/test-utils/llm-mock`), against the real ledger: the API handler on dynalite over HTTP,
 * its clock and reconciler driven by the test. The mock model behaves as a provider does when a step is
 * generated again: the same tool calls, with new tool-call IDs. Every effect lands in an in-test mailbox
 * that counts sends, so "one effect" is counted where the effect happens.
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

const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
let generation = 0;

/** The calls a scripted model makes: tool name (the agent's key) and JSON input, in order. */
type ScriptedCalls = { toolName: string; input: Record<string, unknown> }[];

/** A model's prompt as the mock sees it: the roles are what the script looks at. */
type Prompt = Parameters<MastraLanguageModelV2Mock['doGenerate']>[0]['prompt'];

/**
 * Mastra's mock model: a conversation ending in tool results is answered with text; any other with
 * `calls`, each generation minting new tool-call IDs, as providers do.
 */
function scriptedModel(calls: ScriptedCalls) {
  const answered = (prompt: Prompt) => prompt.at(-1)?.role === 'tool';
  const toolCalls = () =>
    calls.map((call) => ({
      type: 'tool-call' as const,
      toolCallId: `call-${++generation}`,
      toolName: call.toolName,
      input: JSON.stringify(call.input),
    }));
  return new MastraLanguageModelV2Mock({
    doGenerate: async ({ prompt }) =>
      answered(prompt)
        ? { content: [{ type: 'text', text: 'done' }], finishReason: 'stop', usage, warnings: [] }
        : { content: toolCalls(), finishReason: 'tool-calls', usage, warnings: [] },
    doStream: async ({ prompt }) => {
      const parts = answered(prompt)
        ? [
            { type: 'text-start' as const, id: 't' },
            { type: 'text-delta' as const, id: 't', delta: 'done' },
            { type: 'text-end' as const, id: 't' },
            { type: 'finish' as const, finishReason: 'stop' as const, usage },
          ]
        : [...toolCalls(), { type: 'finish' as const, finishReason: 'tool-calls' as const, usage }];
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      };
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

function agentClient() {
  return new ToolLedgerClient({
    endpoint: served.endpoint,
    signer: bearerToken('agent-a'),
    fetch: faults.fetch,
    backoff: { baseMs: 5, maxMs: 20 },
    pollBackoff: { baseMs: 5, maxMs: 20 },
    deadlineMs: 30_000,
  });
}

function approverClient() {
  return new ToolLedgerClient({ endpoint: served.endpoint, signer: bearerToken('approver-a') });
}

function mailTools(mailbox: Mailbox) {
  return {
    sendEmail: createTool({
      id: 'send-email',
      description: 'Sends an email',
      inputSchema: z.object({ to: z.string(), body: z.string() }),
      outputSchema: z.object({ messageId: z.string() }),
      execute: async ({ to }) => mailbox.send(to),
    }),
    searchDocs: createTool({
      id: 'search-docs',
      description: 'Searches the docs',
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => ({ hits: [query] }),
    }),
  };
}

const sendToAna: ScriptedCalls = [
  { toolName: 'sendEmail', input: { to: 'ana@example.com', body: 'report' } },
];

/** One turn of an agent in a conversation (Mastra's memory thread), as a process would run it. */
function turn(
  model: MastraLanguageModelV2Mock,
  tools: ToolsInput,
  thread: string,
): ReturnType<Agent['generate']> {
  const agent = new Agent({ id: 'mailer', name: 'Mailer', instructions: 'Send mail.', model, tools });
  return agent.generate('Email ana@example.com the report', { memory: { thread, resource: 'user-1' } });
}

/** The results of the tools a turn ran, in order. */
function outputs(result: Awaited<ReturnType<Agent['generate']>>): unknown[] {
  return result.toolResults.map((part) => part.payload.result);
}

async function stored(operationId: string) {
  return served.ledger.store.get(operationKey('acme', operationId));
}

describe('withLedger with a Mastra agent', () => {
  it('runs the write tool once; the same step re-run as after a crash is a replay the model is told about', async () => {
    const mailbox = new Mailbox();
    const thread = `thread-${run}`;
    const first = await turn(
      scriptedModel(sendToAna),
      withLedger(agentClient(), mailTools(mailbox), { read: ['searchDocs'] }),
      thread,
    );
    expect(first.text).toBe('done');
    expect(outputs(first)).toEqual([{ messageId: 'm-1' }]);
    expect(mailbox.sent).toHaveLength(1);

    // A new process runs the same turn of the same conversation again: new wrapping, new call IDs.
    const model = scriptedModel(sendToAna);
    const again = await turn(
      model,
      withLedger(agentClient(), mailTools(mailbox), { read: ['searchDocs'] }),
      thread,
    );
    const [output] = outputs(again);
    expect(mailbox.sent).toHaveLength(1);
    expect(isLedgerEnvelope(output)).toBe(true);
    expect(output).toEqual({
      operation_id: `${thread}/0/send-email/0`,
      state: 'succeeded',
      replayed: true,
      note: REPLAY_NOTE,
      result: { messageId: 'm-1' },
    });
    // What the model read next is that envelope, as the model adapters give it.
    expect(model.doGenerateCalls[1]!.prompt.at(-1)).toMatchObject({
      role: 'tool',
      content: [{ type: 'tool-result', output: { type: 'json', value: output } }],
    });
  });

  it('changed arguments under the same ID are refused: nothing runs, the model is told of the conflict', async () => {
    const mailbox = new Mailbox();
    const thread = `thread-${run}`;
    await turn(scriptedModel(sendToAna), withLedger(agentClient(), mailTools(mailbox), {}), thread);
    const changed: ScriptedCalls = [
      { toolName: 'sendEmail', input: { to: 'bob@example.com', body: 'report' } },
    ];
    const second = await turn(
      scriptedModel(changed),
      withLedger(agentClient(), mailTools(mailbox), {}),
      thread,
    );
    expect(outputs(second)).toMatchObject([
      {
        operation_id: `${thread}/0/send-email/0`,
        state: 'conflict',
        error: { code: 'idempotency_key_reused' },
      },
    ]);
    expect(mailbox.sent.map((s) => s.to)).toEqual(['ana@example.com']);
  });

  it('a crash between the effect and its outcome is recovered through reconcile: one email', async () => {
    const mailbox = new Mailbox();
    const thread = `thread-${run}`;
    const options = { tools: { sendEmail: { reconcile: mailbox.reconcile, leaseSeconds: 5 } } };
    faults.inject('outcome', 'crash');
    const crashed = await turn(
      scriptedModel(sendToAna),
      withLedger(agentClient(), mailTools(mailbox), options),
      thread,
    );
    expect(outputs(crashed)).toMatchObject([{ state: 'no_answer' }]);
    const id = `${thread}/0/send-email/0`;
    expect((await stored(id))?.state).toBe('pending');
    served.ledger.advance(6_000);
    await served.reconcile();
    expect((await stored(id))?.state).toBe('uncertain');

    const recovered = await turn(
      scriptedModel(sendToAna),
      withLedger(agentClient(), mailTools(mailbox), options),
      thread,
    );
    expect(outputs(recovered)).toMatchObject([
      { operation_id: id, state: 'succeeded', replayed: true, result: { messageId: 'm-1' } },
    ]);
    expect(mailbox.sent).toHaveLength(1);
    expect(await stored(id)).toMatchObject({ state: 'succeeded', reconciled: true, attempt: 1 });
  });

  it('calls in one response get their positions per tool; a read tool runs outside the ledger', async () => {
    const mailbox = new Mailbox();
    const thread = `thread-${run}`;
    const calls: ScriptedCalls = [
      { toolName: 'searchDocs', input: { query: 'report' } },
      { toolName: 'sendEmail', input: { to: 'ana@example.com', body: 'report' } },
      { toolName: 'sendEmail', input: { to: 'bob@example.com', body: 'report' } },
    ];
    const options = { read: ['searchDocs' as const] };
    const first = await turn(
      scriptedModel(calls),
      withLedger(agentClient(), mailTools(mailbox), options),
      thread,
    );
    expect(outputs(first)).toEqual([{ hits: ['report'] }, { messageId: 'm-1' }, { messageId: 'm-2' }]);
    expect(await stored(`${thread}/0/send-email/0`)).toMatchObject({ state: 'succeeded' });
    expect(await stored(`${thread}/0/send-email/1`)).toMatchObject({ state: 'succeeded' });
    expect(faults.bodies('claim').map((b) => b.tool)).toEqual(['send-email', 'send-email']);

    const again = await turn(
      scriptedModel(calls),
      withLedger(agentClient(), mailTools(mailbox), options),
      thread,
    );
    expect(outputs(again)).toMatchObject([
      { hits: ['report'] },
      { replayed: true, result: { messageId: 'm-1' } },
      { replayed: true, result: { messageId: 'm-2' } },
    ]);
    expect(mailbox.sent.map((s) => s.to)).toEqual(['ana@example.com', 'bob@example.com']);
  });

  it('one tool wrapped on its own runs through the ledger under its id, with the run from the request', async () => {
    const mailbox = new Mailbox();
    const { sendEmail } = mailTools(mailbox);
    const wrapped = withLedger(agentClient(), sendEmail, {
      runId: `job-${run}`,
      tools: { 'send-email': { leaseSeconds: 30 } },
    });
    expect(wrapped.id).toBe('send-email');
    const agent = new Agent({
      id: 'mailer',
      name: 'Mailer',
      instructions: 'Send mail.',
      model: scriptedModel(sendToAna),
      tools: { sendEmail: wrapped },
    });
    await agent.generate('Email ana');
    await new Agent({
      id: 'mailer',
      name: 'Mailer',
      instructions: 'Send mail.',
      model: scriptedModel(sendToAna),
      tools: { sendEmail: withLedger(agentClient(), sendEmail, { runId: `job-${run}` }) },
    }).generate('Email ana');
    expect(mailbox.sent).toHaveLength(1);
    expect(await stored(`job-${run}/0/send-email/0`)).toMatchObject({
      state: 'succeeded',
      policy: { lease_seconds: 30 },
    });
  });

  it('a call with no run identity (no runId, no memory thread) is refused: nothing sent, nothing sent by mail', async () => {
    const mailbox = new Mailbox();
    const agent = new Agent({
      id: 'mailer',
      name: 'Mailer',
      instructions: 'Send mail.',
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), {}),
    });
    const result = await agent.generate('Email ana');
    // Mastra hands the tool's error to the model as the call's result (an error text), not as a tool result.
    expect(JSON.stringify(result.steps.map((step) => step.content))).toMatch(/error-text.*no run identity/);
    expect(mailbox.sent).toHaveLength(0);
    expect(faults.delivered).toHaveLength(0);
  });

  it('bad input runs nothing and records nothing', async () => {
    const mailbox = new Mailbox();
    const { sendEmail } = withLedger(agentClient(), mailTools(mailbox), { runId: `job-${run}` });
    const answer = await sendEmail.execute?.({ to: 42 } as never, {} as never);
    expect(answer).toMatchObject({ error: true });
    expect(mailbox.sent).toHaveLength(0);
    expect(faults.delivered).toHaveLength(0);
  });
});

describe("withLedger and Mastra's tool approval", () => {
  it("a person's approval through approveToolCall is recorded in the ledger, bound to the ID and digest; the call runs once", async () => {
    const mailbox = new Mailbox();
    const thread = `thread-${run}`;
    const tools = withLedger(agentClient(), mailTools(mailbox), {
      approver: approverClient(),
      tools: { sendEmail: { requiresApproval: true } },
    });
    expect(tools.sendEmail.requireApproval).toBe(true);
    const agent = new Agent({
      id: 'mailer',
      name: 'Mailer',
      instructions: 'Send mail.',
      model: scriptedModel(sendToAna),
      tools,
    });
    const mastra = new Mastra({ agents: { mailer: agent }, storage: new InMemoryStore(), logger: false });
    const mailer = mastra.getAgent('mailer');
    const stream = await mailer.stream('Email ana@example.com the report', {
      memory: { thread, resource: 'user-1' },
    });
    const asked: string[] = [];
    let resumedText = '';
    for await (const chunk of stream.fullStream) {
      if (chunk.type !== 'tool-call-approval') continue;
      asked.push(chunk.payload.toolCallId);
      expect(mailbox.sent).toHaveLength(0);
      expect(faults.bodies('claim')).toHaveLength(0); // Mastra asked; nothing reached the ledger yet
      const resumed = await mailer.approveToolCall({
        runId: stream.runId,
        toolCallId: chunk.payload.toolCallId,
      });
      resumedText = await resumed.text;
    }
    expect(asked).toHaveLength(1);
    expect(resumedText).toBe('done');
    expect(mailbox.sent).toHaveLength(1);
    const record = await stored(`${thread}/0/send-email/0`);
    expect(record).toMatchObject({ state: 'succeeded', policy: { requires_approval: true } });
    expect(record?.approval).toMatchObject({
      decision: 'approve',
      arguments_digest: record?.arguments_digest,
    });
    expect(record?.approval?.by).not.toBe(record?.history?.[0]?.by); // the approver, not the agent
  });

  it('a decline runs nothing and leaves nothing in the ledger', async () => {
    const mailbox = new Mailbox();
    const thread = `thread-${run}`;
    const agent = new Agent({
      id: 'mailer',
      name: 'Mailer',
      instructions: 'Send mail.',
      model: scriptedModel(sendToAna),
      tools: withLedger(agentClient(), mailTools(mailbox), {
        approver: approverClient(),
        tools: { sendEmail: { requiresApproval: true } },
      }),
    });
    const mastra = new Mastra({ agents: { mailer: agent }, storage: new InMemoryStore(), logger: false });
    const mailer = mastra.getAgent('mailer');
    const stream = await mailer.stream('Email ana', { memory: { thread, resource: 'user-1' } });
    for await (const chunk of stream.fullStream) {
      if (chunk.type !== 'tool-call-approval') continue;
      const declined = await mailer.declineToolCall({
        runId: stream.runId,
        toolCallId: chunk.payload.toolCallId,
      });
      await declined.text;
    }
    expect(mailbox.sent).toHaveLength(0);
    expect(faults.bodies('claim')).toHaveLength(0);
    expect(await stored(`${thread}/0/send-email/0`)).toBeUndefined();
  });
});
