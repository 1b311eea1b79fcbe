import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { QueueMessages } from './sqs-server';

/**
 * Local mode's queues outlive a clean stop (the contract, §10): fauxqs keeps them in memory, so a
 * message SQS accepted but no executor had handled yet (sent by a producer straight to the queue, or
 * a reconciler's delayed re-send) would die with the process. On a clean stop, once the executors have
 * stopped, what each queue still holds (ready, delayed, and in flight with a batch that was abandoned)
 * is written to the data folder; the next start sends it again before the executors poll, keeping
 * what remains of each delay. A message handled twice is harmless (the claim is conditional); a lost
 * one is an operation that never happens. Only bodies are kept: work messages carry nothing else.
 *
 * A `kill -9` skips this: what was only in the queue is lost, as the docs say; `queued` records are
 * still re-sent from the ledger at start (index-repair.ts).
 */

/** The file a queue's messages are kept in, inside the data folder. */
export function keptQueueFile(dataDir: string, queueName: string): string {
  return path.join(dataDir, `queue-${queueName}.json`);
}

interface KeptQueue {
  format: 1;
  messages: { body: string; delay_until?: number }[];
}

/**
 * Writes the messages a queue still holds to `file` (owner-only, replaced atomically); no file when
 * the queue is empty. Returns how many were kept.
 */
export async function keepQueue(messages: QueueMessages, file: string, now = Date.now()): Promise<number> {
  const kept: KeptQueue = {
    format: 1,
    messages: [
      ...messages.ready.map((m) => ({ body: m.body })),
      ...messages.delayed.map((m) =>
        m.delayUntil !== undefined && m.delayUntil > now
          ? { body: m.body, delay_until: m.delayUntil }
          : { body: m.body },
      ),
      ...messages.inflight.map((m) => ({ body: m.body })),
    ],
  };
  if (kept.messages.length === 0) {
    await rm(file, { force: true });
    return 0;
  }
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, JSON.stringify(kept), { mode: 0o600 });
  await rename(temp, file);
  return kept.messages.length;
}

/**
 * Sends the messages kept in `file` to the queue again, with what remains of their delays (at most
 * SQS's 900 s), then removes the file. A file that cannot be read as a kept queue stops the start
 * (thrown) rather than being dropped: it holds accepted work. Returns how many were sent.
 */
export async function restoreQueue(
  client: SQSClient,
  queueUrl: string,
  file: string,
  now = Date.now(),
): Promise<number> {
  let raw: string;
  try {
    raw = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  const kept = JSON.parse(raw) as KeptQueue;
  if (kept?.format !== 1 || !Array.isArray(kept.messages)) {
    throw new Error(`${file} is not a kept queue of this version: move it away to start without it`);
  }
  for (const message of kept.messages) {
    const delay =
      message.delay_until === undefined
        ? 0
        : Math.min(900, Math.max(0, Math.ceil((message.delay_until - now) / 1000)));
    await client.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: message.body,
        ...(delay > 0 ? { DelaySeconds: delay } : {}),
      }),
    );
  }
  await rm(file, { force: true });
  return kept.messages.length;
}
