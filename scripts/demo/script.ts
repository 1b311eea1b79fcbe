/**
 * What the demo's agent intends to do, and which fault strikes each step: one script, played twice,
 * once through tool-ledger and once straight at the targets, so the two runs differ only in the ledger.
 * Every appended line starts with its action's tag (`s2c0`), so that the lines of one action can be
 * counted in a shared log file.
 */

/** A fault the demo injects into one step. */
export type Fault =
  | 'model_turn_replay'
  | 'lost_response'
  | 'duplicate_delivery'
  | 'worker_killed'
  | 'timeout'
  | 'none';

/** Which webhook receiver an action posts to. */
export type Receiver =
  /** Applies every request it gets: nothing protects it but the caller. */
  | 'plain'
  /** Dedupes on `Idempotency-Key`, and is listed in `TOOL_LEDGER_WEBHOOK_IDEMPOTENT`. */
  | 'idempotent';

/** One intended action: one call of one tool. */
export type DemoAction = { step: number; callIndex: number } & (
  | { tool: 'workspace.write_file'; path: string; content: string }
  | {
      tool: 'workspace.append_line';
      path: string;
      line: string;
      /** The wording the model chooses when the step's response is generated again. */
      regeneratedLine?: string;
    }
  | { tool: 'webhook.post'; receiver: Receiver; path: string; json: Record<string, unknown> }
);

/** One turn of the agent: the tool calls of one model response. */
export interface DemoStep {
  step: number;
  fault: Fault;
  /** What the step shows, for the table. */
  title: string;
  actions: DemoAction[];
}

/** How long the slow webhook takes: long enough to kill the stack in the middle of it. */
export const SLOW_MS = 1_500;

/** The agent run's ID: every operation ID derives from it (see `operationIdFor`). */
export const AGENT_RUN_ID = 'demo-run';

/** The script. */
export const STEPS: readonly DemoStep[] = [
  {
    step: 1,
    fault: 'model_turn_replay',
    title: 'model-turn replay',
    actions: [
      {
        step: 1,
        callIndex: 0,
        tool: 'workspace.write_file',
        path: 'notes/plan.md',
        content: '# Plan\n- ship it\n',
      },
      {
        step: 1,
        callIndex: 1,
        tool: 'workspace.append_line',
        path: 'log/agent.log',
        line: 's1c1 plan written',
        regeneratedLine: 's1c1 wrote the plan',
      },
      {
        step: 1,
        callIndex: 2,
        tool: 'webhook.post',
        receiver: 'plain',
        path: '/ok/plan-ready',
        json: { step: 1 },
      },
    ],
  },
  {
    step: 2,
    fault: 'lost_response',
    title: 'lost responses',
    actions: [
      {
        step: 2,
        callIndex: 0,
        tool: 'workspace.append_line',
        path: 'log/agent.log',
        line: 's2c0 build started',
      },
      {
        step: 2,
        callIndex: 1,
        tool: 'webhook.post',
        receiver: 'plain',
        path: '/ok/build-started',
        json: { step: 2 },
      },
    ],
  },
  {
    step: 3,
    fault: 'duplicate_delivery',
    title: 'duplicate SQS deliveries (x3)',
    actions: [
      {
        step: 3,
        callIndex: 0,
        tool: 'workspace.append_line',
        path: 'log/queue.log',
        line: 's3c0 job queued',
      },
      {
        step: 3,
        callIndex: 1,
        tool: 'webhook.post',
        receiver: 'plain',
        path: '/ok/job-queued',
        json: { step: 3 },
      },
    ],
  },
  {
    step: 4,
    fault: 'worker_killed',
    title: 'worker killed mid-call',
    actions: [
      {
        step: 4,
        callIndex: 0,
        tool: 'webhook.post',
        receiver: 'idempotent',
        path: `/slow/${SLOW_MS}/deploy`,
        json: { step: 4, ref: 'main' },
      },
    ],
  },
  {
    step: 5,
    fault: 'timeout',
    title: 'timeout past the tool limit',
    actions: [
      {
        step: 5,
        callIndex: 0,
        tool: 'webhook.post',
        receiver: 'idempotent',
        path: '/hang-once/notify',
        json: { step: 5 },
      },
    ],
  },
  {
    step: 6,
    fault: 'none',
    title: 'no fault',
    actions: [
      { step: 6, callIndex: 0, tool: 'workspace.write_file', path: 'notes/summary.md', content: 'shipped\n' },
      { step: 6, callIndex: 1, tool: 'workspace.append_line', path: 'log/agent.log', line: 's6c1 done' },
      { step: 6, callIndex: 2, tool: 'webhook.post', receiver: 'plain', path: '/ok/done', json: { step: 6 } },
    ],
  },
];

/** Every action of the script, in order. */
export const ACTIONS: readonly DemoAction[] = STEPS.flatMap((s) => s.actions);

/** The tag that starts an appended line of this action. */
export function actionTag(action: Pick<DemoAction, 'step' | 'callIndex'>): string {
  return `s${action.step}c${action.callIndex}`;
}

/** Where the webhook receivers listen. */
export interface ReceiverOrigins {
  plain: string;
  idempotent: string;
}

/** The ledger tool arguments of an action (`regenerated`: as the model words it the second time). */
export function toolArguments(action: DemoAction, origins: ReceiverOrigins, regenerated = false): unknown {
  switch (action.tool) {
    case 'workspace.write_file':
      return { path: action.path, content: action.content };
    case 'workspace.append_line':
      return { path: action.path, line: (regenerated && action.regeneratedLine) || action.line };
    case 'webhook.post':
      return { url: `${origins[action.receiver]}${action.path}`, json: action.json };
  }
}
