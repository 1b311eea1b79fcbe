import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import dynalite from 'dynalite';
import { DataFolderGuard } from './data-folder-guard';
import { guardServer, sendAwsRefusal } from './loopback-guard';

/**
 * Local mode's DynamoDB, on a thread of its own: dynalite and its LevelDB work no longer wait behind the
 * handlers on one event loop (and the handlers no longer wait behind them), so local mode uses both of
 * a machine's cores. The thread listens on 127.0.0.1 as dynalite did before, for the CLI, the console and
 * users' own clients; the handlers of the same process reach it over a MessagePort instead
 * (in-process-dynamo.ts). Started by `startLocalDynamo` (dynamo-server.ts) through dynamo-thread-entry.mjs.
 */

/** What the starting thread passes in `workerData`. */
export interface DynamoThreadData {
  path: string;
  port: number;
  /** Folders to watch before every request (fail closed); none: no guard. */
  guardFolders: string[];
  /** Where this process's own handlers send their requests, without HTTP (in-process-dynamo.ts). */
  requests?: MessagePort;
}

/** A request from this process's handlers: what the SDK would have sent over HTTP. */
export interface InProcessRequest {
  id: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The body's UTF-8 bytes. */
  body: Uint8Array;
}

/** Its answer: what dynalite would have written to the socket. */
export interface InProcessResponse {
  id: number;
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Messages from this thread. */
export type DynamoThreadMessage = { kind: 'listening'; port: number } | { kind: 'failed'; message: string };

/**
 * The error a refused request gets, in DynamoDB's JSON error shape. A 400 with a type no SDK retries:
 * the store gives up at once and reports `ledger_unavailable`, instead of retrying a folder that is gone.
 */
export const LEDGER_UNAVAILABLE_TYPE = 'com.amazonaws.dynamodb.v20120810#LocalLedgerUnavailableException';

async function run(port: NonNullable<typeof parentPort>, data: DynamoThreadData): Promise<void> {
  const guard = data.guardFolders.length > 0 ? await DataFolderGuard.watch(data.guardFolders) : undefined;
  const server: Server = dynalite({ path: data.path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  if (guard) guardRequests(server, guard);
  // A web page that rebinds its name to 127.0.0.1 must not reach the store, which checks no signature.
  let listening = 0;
  guardServer(
    server,
    () => listening,
    (res, refusal) => sendAwsRefusal(res, 'com.amazonaws.dynamodb.v20120810#AccessDeniedException', refusal),
  );
  if (data.requests) serveInProcess(data.requests, server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(data.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  // The one message from the starting thread is "stop": close every connection, then end the thread.
  port.once('message', () => {
    data.requests?.close();
    server.close(() => port.close());
    server.closeAllConnections();
  });
  listening = (server.address() as AddressInfo).port;
  port.postMessage({ kind: 'listening', port: listening } satisfies DynamoThreadMessage);
}

/**
 * Serves the handlers of this process over a MessagePort: each message goes through the same request
 * handlers as an HTTP request (the guard, then dynalite), with a request and response that carry only
 * what they read and write: method, path, headers and body; status, headers and body.
 */
function serveInProcess(requests: MessagePort, server: Server): void {
  requests.on('message', (message: InProcessRequest) => {
    const body = Buffer.from(message.body);
    const req = Object.assign(Readable.from(body.length === 0 ? [] : [body]), {
      method: message.method,
      url: message.path,
      headers: message.headers,
    });
    const headers: Record<string, string> = {};
    const res = {
      statusCode: 200,
      setHeader(name: string, value: unknown) {
        headers[name.toLowerCase()] = String(value);
      },
      writeHead(status: number, more: Record<string, unknown>) {
        res.statusCode = status;
        for (const [name, value] of Object.entries(more)) res.setHeader(name, value);
      },
      end(body?: string | Buffer) {
        requests.postMessage({
          id: message.id,
          status: res.statusCode,
          headers,
          body: body === undefined ? '' : body.toString(),
        } satisfies InProcessResponse);
      },
    };
    server.emit('request', req, res);
  });
}

/** Puts the guard in front of dynalite's request handler. */
function guardRequests(server: Server, guard: DataFolderGuard): void {
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const problem = guard.check();
    if (problem === undefined) {
      for (const handler of handlers) handler.call(server, req, res);
      return;
    }
    req.resume();
    const body = JSON.stringify({
      __type: LEDGER_UNAVAILABLE_TYPE,
      message: `the local ledger refuses requests: ${problem}`,
    });
    res.writeHead(400, {
      'content-type': 'application/x-amz-json-1.0',
      'content-length': Buffer.byteLength(body),
      'x-amzn-requestid': crypto.randomUUID(),
    });
    res.end(body);
  });
}

/**
 * Runs the thread: called by dynamo-thread-entry.mjs, the worker's entry. Importing this module runs nothing.
 */
export function runDynamoThread(): void {
  const port = parentPort;
  if (!port) throw new Error('runDynamoThread runs inside the worker that startLocalDynamo starts');
  run(port, workerData as DynamoThreadData).catch((error: unknown) => {
    port.postMessage({
      kind: 'failed',
      message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    } satisfies DynamoThreadMessage);
    port.close();
  });
}
