import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AWAITING_APPROVAL_NOTE,
  bearerToken,
  REPLAY_NOTE,
  runAnthropicToolUses,
  runChatCompletionToolCalls,
  runResponsesFunctionCalls,
  ToolLedgerClient,
  ToolNameMap,
  type ToolResultEnvelope,
} from '../../client/index';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import anthropicFixture from '../fixtures/anthropic-message.json';
import chatFixture from '../fixtures/openai-chat-completion.json';
import responsesFixture from '../fixtures/openai-responses.json';

/**
 * The model adapters end to end (issue 9): the hand-written provider responses of test/fixtures run
 * through the real ledger of local mode twice, as an orchestrator that replays a turn would. The
 * second run is answered from the ledger, marked as replayed for the model, and no effect happens
 * twice. The fixtures name a webhook origin on port 8787; it is pointed at this file's own target.
 */

const FIXTURE_ORIGIN = 'http://127.0.0.1:8787';

let stack: LocalStackProcess;
let target: WebhookTarget;
let dataDir: string;
let client: ToolLedgerClient;
let names: ToolNameMap;
const run = `adapters-e2e-${Date.now()}`;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-adapters-e2e-'));
  target = await startWebhookTarget();
  stack = await startLocalStack({ dataDir, env: { TOOL_LEDGER_RECONCILE_EVERY_MS: '500' } });
  client = new ToolLedgerClient({
    endpoint: stack.api,
    signer: bearerToken(stack.tokens.agent),
    deadlineMs: 20_000,
  });
  names = ToolNameMap.fromTools(await client.tools());
});

afterAll(async () => {
  if (stack) {
    await stack.kill();
    expect(groupAlive(stack.pgid)).toBe(false);
  }
  await target?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** The fixture with its webhook origin pointed at the target, and (`regenerate`) new provider call IDs. */
function prepared<T>(fixture: T, regenerate = false): T {
  let text = JSON.stringify(fixture).replaceAll(FIXTURE_ORIGIN, target.origin);
  if (regenerate) text = text.replace(/"(call|toolu)_([A-Za-z0-9]{10,})"/g, '"$1_regen$2"');
  return JSON.parse(text) as T;
}

function envelopes(contents: readonly string[]): ToolResultEnvelope[] {
  return contents.map((c) => JSON.parse(c) as ToolResultEnvelope);
}

function workspaceFile(path: string): Promise<string> {
  return readFile(join(dataDir, 'workspace', 'local', path), 'utf8');
}

describe('model adapters against local mode', () => {
  it('an OpenAI Chat Completions response run twice: the second run is all replays and every effect happened once', async () => {
    const context = { agentRunId: `${run}-chat`, step: 1, names };
    const first = await runChatCompletionToolCalls(client, prepared(chatFixture), context);
    expect(envelopes(first.messages.map((m) => m.content))).toMatchObject([
      {
        operation_id: `${run}-chat:s1:c0`,
        state: 'succeeded',
        replayed: false,
        result: { path: 'notes/plan.md' },
      },
      { operation_id: `${run}-chat:s1:c1`, state: 'succeeded', replayed: false, result: { status: 200 } },
      { operation_id: `${run}-chat:s1:c2`, state: 'succeeded', replayed: false },
      { operation_id: `${run}-chat:s1:c3`, state: 'invalid_arguments', replayed: false },
    ]);
    expect(first.messages.map((m) => m.tool_call_id)).toEqual(
      chatFixture.choices[0]!.message.tool_calls.map((c) => c.id),
    );

    const regenerated = prepared(chatFixture, true);
    const second = await runChatCompletionToolCalls(client, regenerated, context);
    const replays = envelopes(second.messages.map((m) => m.content));
    expect(replays.slice(0, 3)).toEqual(
      envelopes(first.messages.slice(0, 3).map((m) => m.content)).map((e) => ({
        ...e,
        replayed: true,
        note: REPLAY_NOTE,
      })),
    );
    expect(replays[3]).toMatchObject({ state: 'invalid_arguments', replayed: false });
    expect(second.messages.map((m) => m.tool_call_id)).toEqual(
      regenerated.choices[0]!.message.tool_calls.map((c) => c.id),
    );
    expect(second.results.slice(0, 3).map((r) => r.operation?.attempt)).toEqual([1, 1, 1]);

    expect(await workspaceFile('notes/plan.md')).toBe('# Plan\n- ship it\n');
    expect(await workspaceFile('log/deploys.txt')).toBe('deploy main\n');
    expect(target.count('/hooks/deploy')).toBe(1);
  });

  it('an Anthropic Messages response run twice: one refusal (path escape), replays marked, effects once', async () => {
    const context = { agentRunId: `${run}-anthropic`, step: 1, names };
    const hits = target.count('/hooks/deploy');
    const first = await runAnthropicToolUses(client, prepared(anthropicFixture), context);
    const second = await runAnthropicToolUses(client, prepared(anthropicFixture, true), context);
    const blocks = second.message.content;
    expect(envelopes(first.message.content.map((b) => b.content))).toMatchObject([
      { state: 'refused', error: { code: 'validation_failed' } },
      { state: 'succeeded', replayed: false },
      { state: 'succeeded', replayed: false },
    ]);
    expect(envelopes(blocks.map((b) => b.content))).toMatchObject([
      { state: 'refused', replayed: false },
      { state: 'succeeded', replayed: true, note: REPLAY_NOTE },
      { state: 'succeeded', replayed: true, note: REPLAY_NOTE },
    ]);
    expect(blocks.map((b) => b.is_error)).toEqual([true, undefined, undefined]);
    expect(blocks[0]?.tool_use_id).toMatch(/^toolu_regen/);
    expect(await workspaceFile('notes/release.md')).toBe('v1.2.0');
    expect(target.count('/hooks/deploy')).toBe(hits + 1);
  });

  it('an OpenAI Responses response run twice: approval is waited for, unknown tools never reach the ledger', async () => {
    const context = { agentRunId: `${run}-responses`, step: 1, names };
    await runResponsesFunctionCalls(client, prepared(responsesFixture), context);
    const { items } = await runResponsesFunctionCalls(client, prepared(responsesFixture, true), context);
    expect(items.map((i) => i.call_id)).toEqual([
      'call_regen5uLbG0wYd8QeVn3Ks1HjR7Tz',
      'call_regen2wPcM9eXr4NaTf6Bo8YsK1Lq',
      'call_regen9kRtH3vZm1QcXe7Ju5WaD2Ng',
    ]);
    const [webhook, deletion, unknown] = envelopes(items.map((i) => i.output));
    expect(webhook).toMatchObject({ state: 'succeeded', replayed: true, note: REPLAY_NOTE });
    expect(deletion).toMatchObject({ state: 'awaiting_approval' });
    expect(deletion?.note).toBe(AWAITING_APPROVAL_NOTE);
    expect(unknown).toMatchObject({ state: 'refused', error: { code: 'tool_unknown' } });
    expect(target.count('/missing')).toBe(1);
    await expect(client.get(`${run}-responses:s1:c2`)).rejects.toMatchObject({ status: 404 });
  });
});
