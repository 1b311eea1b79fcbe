import { mkdir } from 'node:fs/promises';
import { MessageChannel, Worker } from 'node:worker_threads';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureLedgerTable } from '../ledger/table';
import type { DynamoThreadData, DynamoThreadMessage } from './dynamo-thread';
import { InProcessDynamoHandler, registerInProcessDynamo } from './in-process-dynamo';

/**
 * DynamoDB for local mode: dynalite on a thread of this process (dynamo-thread.ts), on 127.0.0.1,
 * persisted in a LevelDB folder so that a restart (also after `kill -9`: every write has reached the OS
 * before DynamoDB answers) loses no ledger record. With guarded folders, every request is refused once
 * the data folder is gone (fail closed).
 */

export { LEDGER_UNAVAILABLE_TYPE } from './dynamo-thread';

/** A running local DynamoDB. */
export interface LocalDynamo {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  /** Closes the server and every connection to it, and ends its thread. */
  stop(): Promise<void>;
  /**
   * Settles if the thread ends without being stopped (an error inside dynalite): the store is gone,
   * and whoever started it decides what that means.
   */
  lost: Promise<Error>;
}

/**
 * Starts dynalite on `127.0.0.1:port` (0: a free port) with its data in `path`, on a thread of its
 * own, and makes sure the ledger table exists.
 *
 * @example
 * ```ts
 * const dynamo = await startLocalDynamo({ path: '.data/ledger', port: 0, tableName: 'tool-ledger' });
 * console.log(dynamo.endpoint);
 * ```
 */
export async function startLocalDynamo(options: {
  path: string;
  port: number;
  tableName: string;
  /** Folders that must stay the ones they are now, and writable; asked before every request. */
  guardFolders?: string[];
}): Promise<LocalDynamo> {
  await mkdir(options.path, { recursive: true });
  const channel = new MessageChannel();
  const workerData: DynamoThreadData = {
    path: options.path,
    port: options.port,
    guardFolders: options.guardFolders ?? [],
    requests: channel.port2,
  };
  // No inherited Node flags: the entry registers its own loader, and a flag meant for the process
  // (a profiler, a second `--import`) is not the thread's.
  const worker = new Worker(new URL('./dynamo-thread-entry.mjs', import.meta.url), {
    workerData,
    transferList: [channel.port2],
    execArgv: [],
  });
  let stopping = false;
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  const failure = new Promise<Error>((resolve) => worker.once('error', resolve));
  const lost = Promise.race([
    failure,
    exited.then((code) => new Error(`the local DynamoDB thread ended (exit ${code})`)),
  ]).then((error) => (stopping ? new Promise<Error>(() => {}) : error));
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', (message: DynamoThreadMessage) => {
      if (message.kind === 'listening') resolve(message.port);
      else reject(new Error(`local DynamoDB could not start: ${message.message}`));
    });
    lost.then(reject);
  }).catch(async (error: unknown) => {
    // dynalite opens its LevelDB folder before it listens: end the thread, and with it the folder's lock.
    stopping = true;
    await worker.terminate();
    channel.port1.close();
    throw error;
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const unregister = registerInProcessDynamo(endpoint, new InProcessDynamoHandler(channel.port1));
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    unregister();
    worker.postMessage('stop');
    await exited;
    channel.port1.close();
  };
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    await ensureLedgerTable(client, options.tableName);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    client.destroy();
  }
  return { endpoint, stop, lost };
}
