/**
 * The agent-side client of tool-ledger: the HTTP client, `run` for effects that run in the agent's own
 * process, the queue sender, stable operation IDs, and adapters between model tool calls and the
 * ledger, and an MCP client helper.
 */

export type {
  AnthropicContentBlockLike,
  AnthropicInputSchema,
  AnthropicMessageLike,
  AnthropicTool,
  ToolResultBlock,
  ToolResultMessage,
} from './adapters/anthropic';
export { anthropicToolUses, runAnthropicToolUses, toAnthropicTools } from './adapters/anthropic';
export { modelParameters, ToolNameMap } from './adapters/model-tools';
export type {
  ChatCompletionLike,
  ChatCompletionTool,
  ChatCompletionToolCallLike,
  ChatToolMessage,
  FunctionCallOutputItem,
  ResponsesFunctionTool,
  ResponsesLike,
  ResponsesOutputItemLike,
} from './adapters/openai';
export {
  chatCompletionToolCalls,
  responsesFunctionCalls,
  runChatCompletionToolCalls,
  runResponsesFunctionCalls,
  toChatCompletionTools,
  toResponsesTools,
} from './adapters/openai';
export type { ModelToolResult, ToolResultEnvelope } from './adapters/result-envelope';
export {
  AWAITING_APPROVAL_NOTE,
  modelResultForError,
  NO_ANSWER_NOTE,
  NOT_SETTLED_NOTE,
  REPLAY_FAILURE_NOTE,
  REPLAY_NOTE,
} from './adapters/result-envelope';
export type { ModelToolCall, ToolCallContext, ToolCaller, ToolCallResult } from './adapters/run-tool-calls';
export { runToolCalls } from './adapters/run-tool-calls';
export type {
  Claim,
  Identity,
  Operation,
  OperationPage,
  OperationState,
  Problem,
  ToolDescription,
} from './api-types';
export { isTerminalState, TERMINAL_STATES } from './api-types';
export type { BackoffPolicy } from './backoff';
export { backoffDelay, DEFAULT_BACKOFF, parseRetryAfter } from './backoff';
export type { ReconcileVerdict, RunContext, RunInput, RunOutcome, RunWaitOptions } from './caller-run';
export { MAX_RESULT_BYTES } from './caller-run';
export type { Clock, RandomSource } from './clock';
export { systemClock } from './clock';
export type { CompletionEvent, EventMessage, EventQueue } from './completion-events';
export { completionEventOfBody } from './completion-events';
export {
  ClaimLostError,
  DeadlineExceededError,
  IdempotencyConflictError,
  InvalidOperationIdError,
  OutcomeNotRecordedError,
  ToolLedgerError,
  ToolLedgerRequestError,
  UnexpectedResponseError,
  WaitTimeoutError,
} from './errors';
export type { OperationPosition } from './operation-id';
export { assertOperationId, formatIdempotencyKey, operationIdFor, operationIdFrom } from './operation-id';
export type { OutcomeKind } from './outcome-errors';
export { NotAppliedError, outcomeKindOf, TerminalToolError, UncertainOutcomeError } from './outcome-errors';
export type { RequestSigner, SignableRequest } from './signer';
export { bearerToken } from './signer';
export type {
  CallInput,
  CallOutcome,
  CallResultKind,
  ListOptions,
  Resolution,
  ToolLedgerClientOptions,
  WaitForEventOptions,
  WaitOptions,
} from './tool-ledger-client';
export { callResultKind, ToolLedgerClient } from './tool-ledger-client';
