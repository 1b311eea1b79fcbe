import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SETTINGS } from '../../functions/contract/environment';
import { OPERATIONS_PATH, operationPath } from '../../functions/contract/routes';
import { tenantFolder } from '../../functions/tools/workspace-path';
import { type LocalStackProcess, startLocalStack } from '../local-stack';
import { checkTrace, type TraceLine } from '../verify/trace-check';
import { type ApiTarget, type CallOutcome, type CallSample, requestUntilListening } from './client';
import { observeEffects } from './effects';
import { type LoadOptions, LoadOptionsError, parseLoadOptions } from './options';
import { fixed, markdownTable, quantile, tally } from './report';
import { startWebhookTarget } from './webhook-target';
import { type PlannedOperation, type PlannedSend, planOperations, planSends, seededRandom } from './workload';

/**
 * `npm run load`: local mode under concurrent clients that send every operation several times, with
 * faults (lost responses, duplicate SQS deliveries, a webhook target that fails or resets, one SIGKILL
 * and restart of the whole stack), then a wait for quiescence and a count of effects where they land.
 * Prints a markdown table; exits 1 if any effect ran twice (or an effect is missing for a succeeded
 * operation), 2 if the ledger did not settle before the time limit. Loopback only; bounded in count
 * and time. Options: OPERATIONS, CONCURRENCY, SENDS, FAULTS=0/1, RESTART=0/1, SEED, TIMEOUT_S (env or
 * `--operations=…` flags).
 */

/** States after which nothing happens without a person: the run waits for every operation to reach one. */
const SETTLED = new Set(['succeeded', 'failed_terminal', 'rejected', 'needs_reconciliation']);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Runs `work` over `items` with at most `concurrency` at a time. */
async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

function log(message: string): void {
  process.stderr.write(`load: ${message}\n`);
}

async function run(options: LoadOptions): Promise<number> {
  const random = seededRandom(options.seed);
  const runId = options.seed.toString(36);
  const started = Date.now();
  const deadline = started + options.timeoutSeconds * 1000;
  const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-ledger-load-'));
  const faults = options.faults
    ? { unavailable: 0.08, resetAfterApply: 0.04 }
    : { unavailable: 0, resetAfterApply: 0 };
  const plain = await startWebhookTarget('plain', faults, random);
  const dedup = await startWebhookTarget('deduplicating', faults, random);
  const ports = { api: await freePort(), sqs: await freePort(), dynamo: await freePort() };
  const env = {
    PORT: String(ports.api),
    [SETTINGS.sqsPort.name]: String(ports.sqs),
    [SETTINGS.dynamoPort.name]: String(ports.dynamo),
    [SETTINGS.webhookIdempotent.name]: options.selfCheck ? `${dedup.origin},${plain.origin}` : dedup.origin,
    [SETTINGS.reconcileEveryMs.name]: '300',
    [SETTINGS.retryBaseMs.name]: '200',
    [SETTINGS.queuedStaleMs.name]: '3000',
    [SETTINGS.leaseGraceMs.name]: '1000',
  };
  let stack: LocalStackProcess | undefined;
  // Every transition line local mode printed, across restarts, for the trace checker.
  const logLines: string[] = [];
  const stopAll = async () => {
    await stack?.kill().catch(() => undefined);
    await Promise.all([plain.close(), dedup.close()]);
    if (process.env.KEEP_DATA !== '1') await rm(dataDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => {
    void stopAll().finally(() => process.exit(130));
  });

  try {
    stack = await startLocalStack({ dataDir, env });
    log(`local mode ready (${stack.api}); seed ${options.seed}`);
    // The agent token local mode made for the data folder (tenant `local`, agent + operator); a
    // restart on the same folder keeps it.
    const target: ApiTarget = { api: () => (stack as LocalStackProcess).api, token: stack.tokens.agent };
    const sqs = new SQSClient({
      endpoint: `http://127.0.0.1:${ports.sqs}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 2,
    });
    const queueUrl = stack.queueUrl;
    const ops = planOperations(
      options,
      runId,
      { plainOrigin: plain.origin, dedupOrigin: dedup.origin },
      random,
    );
    const sends = planSends(ops, options, random);
    const samples: CallSample[] = [];
    const submitOutcomes: string[] = [];
    let duplicateSqs = 0;
    let duplicateSqsFailed = 0;
    let restartedAt: number | undefined;
    let downtimeMs = 0;
    let restarting: Promise<void> | undefined;

    const submit = (op: PlannedOperation, abortAfterMs?: number): Promise<CallOutcome> =>
      requestUntilListening(
        target,
        samples,
        'submit',
        'POST',
        OPERATIONS_PATH,
        {
          headers: {
            'content-type': 'application/json',
            'idempotency-key': `"${op.id}"`,
            ...(op.async ? { prefer: 'respond-async' } : {}),
          },
          body: op.body,
          ...(abortAfterMs === undefined ? {} : { abortAfterMs }),
        },
        deadline,
      );

    const duplicateDelivery = async (op: PlannedOperation) => {
      const copies = random() < 0.3 ? 2 : 1;
      for (let i = 0; i < copies; i++) {
        try {
          await sqs.send(
            new SendMessageCommand({
              QueueUrl: queueUrl,
              MessageBody: JSON.stringify({
                operation_id: op.id,
                tenant: 'local',
                tool: op.tool,
                arguments: op.arguments,
              }),
            }),
          );
          duplicateSqs += 1;
        } catch {
          duplicateSqsFailed += 1;
        }
      }
    };

    const restart = async () => {
      const down = Date.now();
      restartedAt = down - started;
      log('SIGKILL to local mode');
      await (stack as LocalStackProcess).kill();
      logLines.push(...(stack as LocalStackProcess).stdoutLines());
      stack = await startLocalStack({ dataDir, env });
      downtimeMs = Date.now() - down;
      log(`local mode back after ${downtimeMs} ms`);
    };

    // Send phase: every copy of every operation, from `concurrency` clients.
    let done = 0;
    const sendStarted = performance.now();
    await pool(sends, options.concurrency, async (send: PlannedSend) => {
      if (Date.now() > deadline) return;
      const outcome = await submit(send.op, send.abortAfterMs);
      submitOutcomes.push(outcome.kind === 'status' ? String(outcome.status) : outcome.kind);
      if (options.faults && send.copy === 0 && (send.op.async || random() < 0.1))
        await duplicateDelivery(send.op);
      done += 1;
      if (options.restart && restarting === undefined && done >= sends.length / 2) restarting = restart();
    });
    await restarting;
    const sendPhaseMs = performance.now() - sendStarted;
    log(`send phase done in ${fixed(sendPhaseMs / 1000)} s; waiting for quiescence`);

    // Quiescence: read every operation until it is settled. One that never reached the ledger (all its
    // sends lost) is sent again, as its client would; nothing is resolved by hand.
    const finals = new Map<string, Record<string, unknown>>();
    let resubmitted = 0;
    let pending = [...ops];
    while (pending.length > 0 && Date.now() < deadline) {
      const still: PlannedOperation[] = [];
      await pool(pending, options.concurrency, async (op) => {
        const out = await requestUntilListening(
          target,
          samples,
          'read',
          'GET',
          operationPath(op.id),
          {},
          deadline,
        );
        if (out.kind === 'status' && out.status === 200 && out.body && SETTLED.has(String(out.body.state))) {
          finals.set(op.id, out.body);
          return;
        }
        if (out.kind === 'status' && out.status === 404) {
          resubmitted += 1;
          await submit(op);
        }
        still.push(op);
      });
      pending = still;
      if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const settledMs = Date.now() - started;
    const sendEpoch = performance.now() - sendStarted;

    // The figures.
    const effects = await observeEffects(
      ops,
      [plain.counts, dedup.counts],
      // The workspace tools write below the tenant's own root (tenant `local`).
      path.join(dataDir, 'workspace', tenantFolder('local')),
      runId,
    );
    const states = ops.map((op) => String(finals.get(op.id)?.state ?? 'unsettled'));
    const attempts = [...finals.values()].reduce((sum, body) => sum + Number(body.attempt ?? 0), 0);
    let duplicates = 0;
    let succeeded = 0;
    let succeededWithEffect = 0;
    let succeededWithoutEffect = 0;
    let appliedUnresolved = 0;
    let terminalWithEffect = 0;
    let totalEffects = 0;
    for (const op of ops) {
      const n = effects.byOperation.get(op.id) ?? 0;
      totalEffects += n;
      duplicates += Math.max(0, n - 1);
      const state = finals.get(op.id)?.state;
      if (state === 'succeeded') {
        succeeded += 1;
        if (n >= 1) succeededWithEffect += 1;
        else succeededWithoutEffect += 1;
      } else if (n > 0 && state === 'needs_reconciliation') {
        appliedUnresolved += 1;
      } else if (n > 0) {
        terminalWithEffect += 1;
      }
    }
    const multiKey = [...effects.keysPerOperation.values()].filter((n) => n > 1).length;
    const submitMs = samples.filter((s) => s.route === 'submit' && s.outcome === 'status').map((s) => s.ms);
    const readMs = samples.filter((s) => s.route === 'read' && s.outcome === 'status').map((s) => s.ms);
    const httpMs = [...submitMs, ...readMs];
    const unsettled = states.filter((s) => s === 'unsettled').length;

    const rows: [string, string][] = [
      [
        'run',
        `${options.selfCheck ? 'SELF CHECK (plain target declared deduplicating), ' : ''}seed ${options.seed}, ${options.concurrency} clients, ${options.sends} sends per operation, faults ${options.faults ? 'on' : 'off'}, restart ${options.restart ? 'on' : 'off'}`,
      ],
      ['operations', String(ops.length)],
      ['operation mix', tally(ops.map((op) => `${op.kind}${op.async ? ' (async)' : ''}`))],
      ['HTTP submits', `${submitOutcomes.length} sends: ${tally(submitOutcomes)}`],
      [
        'connections refused while local mode restarted (sent again)',
        String(samples.filter((sample) => sample.outcome === 'refused').length),
      ],
      [
        'lost responses (client aborts + broken connections)',
        String(submitOutcomes.filter((o) => o === 'aborted' || o === 'lost').length),
      ],
      ['operations re-sent after quiescence found them absent', String(resubmitted)],
      [
        'duplicate SQS deliveries injected',
        `${duplicateSqs}${duplicateSqsFailed > 0 ? ` (+${duplicateSqsFailed} failed to send)` : ''}`,
      ],
      [
        'webhook faults injected (503 / reset after apply)',
        `${plain.counts.unavailable + dedup.counts.unavailable} / ${plain.counts.resets + dedup.counts.resets}`,
      ],
      [
        'restart',
        restartedAt === undefined
          ? 'none'
          : `SIGKILL at ${fixed(restartedAt / 1000)} s, back after ${downtimeMs} ms`,
      ],
      ['attempts (sum of attempt over records)', String(attempts)],
      ['end states', tally(states)],
      ['end states by kind', tally(ops.map((op, i) => `${op.kind} ${states[i]}`))],
      [
        'outcome codes of operations not succeeded',
        tally(
          ops
            .map((op) => finals.get(op.id))
            .filter((body) => body !== undefined && body.state !== 'succeeded')
            .map((body) => String((body?.error as { code?: string } | null)?.code ?? body?.state)),
        ) || 'none',
      ],
      [
        'effects observed at the targets',
        `${totalEffects} (webhook plain ${[...plain.counts.applied.values()].reduce((a, b) => a + b, 0)}, webhook dedup ${[...dedup.counts.applied.values()].reduce((a, b) => a + b, 0)} + ${dedup.counts.redeliveries} redeliveries absorbed, lines and files ${totalEffects - [...plain.counts.applied.values(), ...dedup.counts.applied.values()].reduce((a, b) => a + b, 0)})`,
      ],
      ['succeeded operations / with exactly their effect', `${succeeded} / ${succeededWithEffect}`],
      [
        'effects of operations left to an operator (needs_reconciliation, applied)',
        String(appliedUnresolved),
      ],
      ['**duplicate effects** (must be 0)', String(duplicates)],
      ['succeeded without an effect (must be 0)', String(succeededWithoutEffect)],
      ['terminal failures whose effect happened', String(terminalWithEffect)],
      ['operations sent under two Idempotency-Keys (must be 0)', String(multiKey)],
      [
        'latency p50 / p99, POST /v1/operations',
        `${fixed(quantile(submitMs, 0.5))} / ${fixed(quantile(submitMs, 0.99))} ms (${submitMs.length} answers)`,
      ],
      [
        'latency p50 / p99, GET /v1/operations/{id}',
        `${fixed(quantile(readMs, 0.5))} / ${fixed(quantile(readMs, 0.99))} ms (${readMs.length} answers)`,
      ],
      [
        'latency p50 / p99, all HTTP calls',
        `${fixed(quantile(httpMs, 0.5))} / ${fixed(quantile(httpMs, 0.99))} ms`,
      ],
      [
        'throughput, send phase',
        `${fixed(submitOutcomes.length / (sendPhaseMs / 1000))} submits/s, ${fixed(ops.length / (sendPhaseMs / 1000))} operations/s over ${fixed(sendPhaseMs / 1000)} s`,
      ],
      [
        'throughput, first send to quiescence',
        `${fixed(ops.length / (sendEpoch / 1000))} operations/s (settled at ${fixed(settledMs / 1000)} s)`,
      ],
    ];
    // Every transition line replayed against the protocol's transition relation (scripts/verify).
    await stack.stop().catch(() => undefined);
    logLines.push(...stack.stdoutLines());
    // The one SIGKILL is the only fault that can keep a landed write from its line (local mode talks to
    // dynalite without injected faults): it cuts at most the writer it caught between write and line.
    const killed = restartedAt === undefined ? 0 : 1;
    const verdict = checkTrace(transitionLines(logLines), { unlogged: () => killed });
    rows.push([
      'transition log lines replayed against the model / rejected (must be 0)',
      `${verdict.lines} / ${verdict.rejected.length} (${verdict.operations} operations, ${verdict.unlogged} unlogged moves bridged, at most ${killed} per operation allowed)`,
    ]);
    for (const r of verdict.rejected.slice(0, 10)) log(`trace check REJECTED ${r.key}: ${r.reason}`);
    process.stdout.write(`\n${markdownTable(rows)}\n\n`);
    if (unsettled > 0) log(`${unsettled} operations did not settle before the time limit`);
    const broken =
      duplicates > 0 ||
      succeededWithoutEffect > 0 ||
      effects.unattributed > 0 ||
      multiKey > 0 ||
      verdict.rejected.length > 0;
    if (broken)
      log(
        'FAILED: an effect ran twice, went missing, could not be attributed, or a transition broke the model',
      );
    return broken ? 1 : unsettled > 0 ? 2 : 0;
  } finally {
    await stopAll();
  }
}

/** The transition lines among local mode's JSON log lines (other records are skipped). */
function transitionLines(lines: readonly string[]): TraceLine[] {
  const out: TraceLine[] = [];
  for (const raw of lines) {
    if (!raw.startsWith('{')) continue;
    try {
      const value = JSON.parse(raw) as Record<string, unknown>;
      if ('state_after' in value && 'operation_id' in value) out.push(value as unknown as TraceLine);
    } catch {
      // not JSON: the banner or a person's line
    }
  }
  return out;
}

Promise.resolve()
  .then(() => run(parseLoadOptions(process.argv.slice(2), process.env)))
  .then(
    (code) => process.exit(code),
    (error: unknown) => {
      if (error instanceof LoadOptionsError) {
        log(error.message);
        process.exit(64);
      }
      log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      process.exit(70);
    },
  );
