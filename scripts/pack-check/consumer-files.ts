/**
 * The files of the scratch consumer project: what a team writes after `npm install tool-ledger
 * @tool-ledger/client`, and nothing more. Relative imports carry `.js`, as NodeNext requires; every value
 * handed to an adapter is typed with the model SDK's own type, and there is no cast anywhere.
 */

/**
 * A team's tools module, importing only the tool author's entry, with the shipped `webhook.post` kept
 * next to its own tool (the composed form docs/tools.md shows).
 */
export const TOOLS_MODULE = `import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { awsDefaultTools, defineTool, TerminalToolError, type ToolFactory } from 'tool-ledger/tool';
import * as z from 'zod';

const tools: ToolFactory = (env) => [
  ...awsDefaultTools(env),
  defineTool({
    name: 'consumer.note',
    description: 'Appends a note to a log (pack-check consumer tool, marker 5d1e77)',
    effect: 'write',
    schema: z.object({ note: z.string().min(1) }),
    async execute(args, ctx) {
      if (args.note === 'refuse') throw new TerminalToolError('refused', 'refused by the consumer tool');
      const log = path.join(env.workspaceRoot, 'consumer-notes.log');
      await mkdir(path.dirname(log), { recursive: true });
      await appendFile(log, ctx.operationId + '\\n');
      return { noted: true, attempt: ctx.attempt, node: process.version };
    },
  }),
];

export default tools;
`;

/** Agent code against the client and all three adapters, typed with the real SDK types. */
export const AGENT_MODULE = `import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import {
  bearerToken,
  type CallOutcome,
  operationIdFor,
  runAnthropicToolUses,
  runChatCompletionToolCalls,
  runResponsesFunctionCalls,
  toAnthropicTools,
  toChatCompletionTools,
  ToolLedgerClient,
  ToolNameMap,
  toResponsesTools,
} from '@tool-ledger/client';
import { ToolLedgerMcpClient } from '@tool-ledger/client/mcp';
import { sigv4Signer } from '@tool-ledger/client/sigv4';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

export async function chatTurn(ledger: ToolLedgerClient, completion: OpenAI.Chat.Completions.ChatCompletion) {
  const tools = await ledger.tools();
  const names = ToolNameMap.fromTools(tools);
  const request: OpenAI.Chat.Completions.ChatCompletionTool[] = toChatCompletionTools(tools, names);
  const { messages } = await runChatCompletionToolCalls(ledger, completion, { agentRunId: 'run-1', step: 1, names });
  const next: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [completion.choices[0]!.message, ...messages];
  return { request, next };
}

export async function responsesTurn(ledger: ToolLedgerClient, response: OpenAI.Responses.Response) {
  const tools = await ledger.tools();
  const request: OpenAI.Responses.Tool[] = toResponsesTools(tools);
  const { items } = await runResponsesFunctionCalls(ledger, response, { agentRunId: 'run-1', step: 2 });
  const input: OpenAI.Responses.ResponseInputItem[] = items;
  return { request, input };
}

export async function anthropicTurn(ledger: ToolLedgerClient, message: Anthropic.Messages.Message) {
  const tools = await ledger.tools();
  const request: Anthropic.Messages.Tool[] = toAnthropicTools(tools);
  const { message: results } = await runAnthropicToolUses(ledger, message, { agentRunId: 'run-1', step: 3 });
  const next: Anthropic.Messages.MessageParam[] = [{ role: 'assistant', content: message.content }, results];
  return { request, next };
}

export async function mcpCall(client: Client) {
  const ledger = new ToolLedgerMcpClient(client);
  return ledger.callTool({ name: 'consumer.note', arguments: { note: 'via MCP' }, position: { agentRunId: 'run-1', step: 4, callIndex: 0 } });
}

export function signedClient(endpoint: string): ToolLedgerClient {
  return new ToolLedgerClient({ endpoint, signer: sigv4Signer({ region: 'eu-west-1' }) });
}

/** Calls the consumer's own tool twice with one operation ID: the second answer must be the replay. */
export async function callTwice(endpoint: string, token: string): Promise<[CallOutcome, CallOutcome]> {
  const ledger = new ToolLedgerClient({ endpoint, signer: bearerToken(token) });
  const operationId = operationIdFor({ agentRunId: 'pack-check', step: 1, callIndex: 0 });
  const input = { operationId, tool: 'consumer.note', arguments: { note: 'hello from a consumer' } };
  const first = await ledger.call(input);
  const second = await ledger.call(input);
  return [first, second];
}
`;

/**
 * Examples the docs embed, copied into the consumer and type-checked there against the packed
 * packages, each as `<file name>` in the consumer's root: a documented example that stopped compiling
 * against the published entries is a failure.
 */
export const DOC_EXAMPLES = [
  'examples/agents/durable-function.ts',
  'examples/deploying/durable-function-stack.ts',
  'examples/agents/openai-agents.ts',
  'examples/agents/langchain.ts',
  'examples/agents/ai-sdk.ts',
  'examples/agents/mastra.ts',
] as const;

/** The framework entries a user's ESM code imports, with what each must export. */
export const FRAMEWORK_ENTRIES = {
  '@tool-ledger/client/ai-sdk': ['currentRunContext', 'isLedgerEnvelope', 'withLedger'],
  '@tool-ledger/client/mastra': ['currentRunContext', 'isLedgerEnvelope', 'withLedger'],
  '@tool-ledger/client/openai-agents': ['currentRunContext', 'isLedgerEnvelope', 'withLedger'],
  '@tool-ledger/client/langchain': ['currentRunContext', 'isLedgerEnvelope', 'withLedger'],
} as const;

/**
 * The OpenAI Agents and LangChain entries as a user runs them, against local mode: each framework's own
 * runner and test model, one step run twice as after a crash (the response generated again, with new
 * tool-call IDs). The effects are counted in the consumer's process.
 */
export const FRAMEWORKS_MODULE = `import { AIMessage, AIMessageChunk, type BaseMessage, HumanMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { Agent, run, setTracingDisabled, tool } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents/testing';
import { bearerToken, ToolLedgerClient } from '@tool-ledger/client';
import { withLedger as withLangChainLedger } from '@tool-ledger/client/langchain';
import { withLedger as withAgentsLedger } from '@tool-ledger/client/openai-agents';
import { z } from 'zod';

// No traces to export (and no line about a missing API key after the JSON the checker reads).
setTracingDisabled(true);

/** One OpenAI Agents SDK step run twice: how many refunds happened, and what each run's tool returned. */
export async function agentsTwice(endpoint: string) {
  const ledger = new ToolLedgerClient({ endpoint, signer: bearerToken(process.env.TOKEN!) });
  let effects = 0;
  const outputs: unknown[] = [];
  for (const callId of ['call-a', 'call-b']) {
    const refund = tool(
      withAgentsLedger(
        ledger,
        {
          name: 'refund',
          description: 'Refund part of an invoice',
          parameters: z.object({ cents: z.number().int() }),
          execute: async ({ cents }) => {
            effects += 1;
            return \`refunded \${cents}\`;
          },
        },
        { runId: 'pack-check-agents' },
      ),
    );
    const model = new ScriptedModel([[functionCall('refund', { cents: 5 }, { callId })], [assistantMessage('done')]]);
    const result = await run(new Agent({ name: 'billing', model, tools: [refund] }), 'Refund 5 cents');
    for (const item of result.newItems) if (item.type === 'tool_call_output_item') outputs.push(item.output);
  }
  return { effects, outputs };
}

/** One LangGraph step (a ToolNode on a checkpointed thread) run, then forked before the model's turn. */
export async function langGraphTwice(endpoint: string) {
  const ledger = new ToolLedgerClient({ endpoint, signer: bearerToken(process.env.TOKEN!) });
  let effects = 0;
  let generation = 0;
  const refund = langchainTool(
    async ({ cents }) => {
      effects += 1;
      return \`refunded \${cents}\`;
    },
    { name: 'refund', description: 'Refund part of an invoice', schema: z.object({ cents: z.number().int() }) },
  );
  const tools = withLangChainLedger(ledger, [refund], {});
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => {
      const turn = state.messages.filter((m) => m.getType() === 'ai').length;
      const call = { id: \`call-\${++generation}\`, name: 'refund', args: { cents: 5 }, type: 'tool_call' as const };
      const model =
        turn === 0
          ? new FakeStreamingChatModel({
              responses: [new AIMessage('')],
              chunks: [new AIMessageChunk({ content: '', tool_calls: [call] })],
            })
          : new FakeStreamingChatModel({ responses: [new AIMessage('done')] });
      return { messages: [await model.invoke(state.messages)] };
    })
    .addNode('tools', new ToolNode(tools))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: 'pack-check-langgraph' } };
  const outputs: unknown[] = [];
  const toolOutput = (messages: BaseMessage[]) => messages.filter((m) => m.getType() === 'tool').at(-1)?.content;
  outputs.push(toolOutput((await graph.invoke({ messages: [new HumanMessage('Refund 5 cents')] }, config)).messages));
  for await (const snapshot of graph.getStateHistory(config)) {
    const messages: BaseMessage[] = snapshot.values.messages ?? [];
    if (snapshot.next.includes('agent') && !messages.some((m) => m.getType() === 'ai')) {
      outputs.push(toolOutput((await graph.invoke(null, snapshot.config)).messages));
      break;
    }
  }
  return { effects, outputs };
}
`;

/** Runs both frameworks against local mode and prints what they saw, as JSON. */
export const RUN_FRAMEWORKS_MODULE = `import { agentsTwice, langGraphTwice } from './frameworks.js';

const endpoint = process.argv[2]!;
console.log(JSON.stringify({ node: process.version, agents: await agentsTwice(endpoint), langgraph: await langGraphTwice(endpoint) }));
`;

/** Loads every framework entry as a user's ESM code does and prints what each exports. */
export const LOAD_FRAMEWORKS_MODULE = `const entries = ${JSON.stringify(Object.keys(FRAMEWORK_ENTRIES))};
const exports = {};
for (const entry of entries) exports[entry] = Object.keys(await import(entry)).sort();
console.log(JSON.stringify({ node: process.version, exports }));
`;

/**
 * An AI SDK agent (the SDK's own mock model, no network) whose write tool runs through the packed
 * \`/ai-sdk\` entry against local mode: the same step run twice, as after a crash, must run the
 * effect once and tell the model the second result is a replay.
 */
export const RUN_AI_SDK_MODULE = `import { bearerToken, ToolLedgerClient } from '@tool-ledger/client';
import { isLedgerEnvelope, withLedger } from '@tool-ledger/client/ai-sdk';
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import * as z from 'zod';

// The agent token local mode made for its data folder: \`npx tool-ledger token\` prints it.
const ledger = new ToolLedgerClient({ endpoint: process.argv[2] ?? '', signer: bearerToken(process.env.TOKEN ?? '') });
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
let effects = 0;
let generation = 0;
const notify = tool({
  description: 'Notifies someone',
  inputSchema: z.object({ to: z.string() }),
  execute: async ({ to }) => ({ notified: to, effect: ++effects }),
});
// A model that calls notify, minting a new call ID each time it is asked, as providers do.
const model = () =>
  new MockLanguageModelV4({
    doGenerate: async ({ prompt }) =>
      prompt.at(-1)?.role === 'tool'
        ? { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] }
        : {
            content: [{ type: 'tool-call', toolCallId: 'call-' + ++generation, toolName: 'notify', input: '{"to":"ana"}' }],
            finishReason: { unified: 'tool-calls', raw: undefined },
            usage,
            warnings: [],
          },
  });
const turn = () =>
  generateText({
    model: model(),
    tools: withLedger(ledger, { notify }, { runId: 'pack-check-ai-sdk' }),
    prompt: 'Notify ana',
    stopWhen: stepCountIs(3),
  });
const first = (await turn()).steps[0]?.toolResults[0]?.output;
const second = (await turn()).steps[0]?.toolResults[0]?.output;
console.log(JSON.stringify({
  node: process.version,
  effects,
  first,
  replayed: isLedgerEnvelope(second) && second.replayed,
  operationId: isLedgerEnvelope(second) ? second.operation_id : undefined,
}));
`;

/** Loads the durable entry as a user's ESM code does and prints what it exports. */
export const LOAD_DURABLE_MODULE = `const entry = await import('@tool-ledger/client/durable');
console.log(JSON.stringify({ node: process.version, exports: Object.keys(entry).sort() }));
`;

/** Runs the agent against local mode and prints what it saw, as JSON, for the checker to read. */
export const RUN_AGENT_MODULE = `import { callTwice } from './agent.js';

// The agent token local mode made for its data folder: \`npx tool-ledger token\` prints it.
const [first, second] = await callTwice(process.argv[2]!, process.env.TOKEN!);
console.log(JSON.stringify({
  node: process.version,
  first: { state: first.operation.state, replayed: first.replayed, result: first.operation.result },
  second: { state: second.operation.state, replayed: second.replayed, result: second.operation.result },
}));
`;

/** A CDK app in the consumer's project that deploys tool-ledger with the consumer's own tools. */
export const APP_MODULE = `import path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { readToolManifest, LAMBDA_WORKSPACE_DIR, ToolLedger } from 'tool-ledger';

const app = new App({ outdir: 'cdk.out' });
const stack = new Stack(app, 'ConsumerLedger', { env: { account: '111111111111', region: 'eu-west-1' } });
const toolsModule = path.resolve('tools/index.ts');
const manifest = await readToolManifest(toolsModule, { workspaceRoot: LAMBDA_WORKSPACE_DIR, webhookAllow: [], local: false });
new ToolLedger(stack, 'Ledger', {
  tenants: { acme: { agents: ['arn:aws:iam::111111111111:role/acme-agent'] } },
  toolsModule,
  toolRetentions: manifest.retentions,
  toolTimeouts: manifest.timeouts,
});
app.synth();
console.log(JSON.stringify({ tools: manifest.names, node: process.version }));
`;

/**
 * The tools examples the docs embed (examples/tools/, file name → where the consumer keeps it), typed
 * against the packed packages with the consumer's own code: a documented example that stopped compiling
 * against the published entries is a failure.
 */
export const DOCS_TOOLS_EXAMPLES = {
  'index.ts': 'tools/tickets.ts',
  'acme-tools.ts': 'tools/acme-tools.ts',
} as const;

/** Compiler options every consumer configuration shares: strict, no lib beyond ES2022. */
const STRICT = {
  strict: true,
  noEmit: true,
  target: 'ES2022',
  lib: ['ES2022'],
  types: ['node'],
  skipLibCheck: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
};

/** tsconfig for Node's own ESM resolution. */
export const TSCONFIG_NODENEXT = {
  compilerOptions: { ...STRICT, module: 'NodeNext', moduleResolution: 'NodeNext' },
  files: [
    'tools/index.ts',
    ...Object.values(DOCS_TOOLS_EXAMPLES),
    'agent.ts',
    'run-agent.ts',
    'app.ts',
    ...DOC_EXAMPLES.map((file) => file.replace(/^.*\//, '')),
    'frameworks.ts',
    'run-frameworks.ts',
    'run-ai-sdk.ts',
  ],
};

/** tsconfig for bundlers (esbuild, Vite, webpack). */
export const TSCONFIG_BUNDLER = {
  compilerOptions: { ...STRICT, module: 'ESNext', moduleResolution: 'bundler' },
  files: [
    'tools/index.ts',
    ...Object.values(DOCS_TOOLS_EXAMPLES),
    'agent.ts',
    'run-agent.ts',
    'app.ts',
    ...DOC_EXAMPLES.map((file) => file.replace(/^.*\//, '')),
    'frameworks.ts',
    'run-frameworks.ts',
    'run-ai-sdk.ts',
  ],
};

/**
 * tsconfig of the CommonJS project: its tools module is `.mts`, an ES module whatever the package says,
 * and type-checks as one under NodeNext.
 */
export const TSCONFIG_CJS_MTS = {
  compilerOptions: { ...STRICT, module: 'NodeNext', moduleResolution: 'NodeNext' },
  files: ['tools/index.mts'],
};
