import type { MessagePort } from 'node:worker_threads';
import type { InProcessRequest, InProcessResponse } from './dynamo-thread';

/**
 * The way local mode's own handlers reach its DynamoDB thread: the SDK's request, as it would go over
 * HTTP, posted to the thread on a MessagePort, and dynalite's answer posted back. The thread runs it
 * through the same request handlers as an HTTP request (the data-folder guard, then dynalite), so
 * nothing about the answer changes; what goes is the loopback socket, the HTTP framing on both sides
 * and the connection pool. The HTTP endpoint stays for everything else (the CLI, the console, a user's
 * own client).
 */

/** The response the SDK's deserializers read: status, headers and the body's bytes. */
interface HandlerResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** What the SDK gives a request handler (smithy's HttpRequest, the fields read here). */
interface HandlerRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: unknown;
}

/**
 * An SDK request handler (the `requestHandler` client setting) over a MessagePort to the DynamoDB
 * thread. A request sent once the thread is gone fails at once, as a refused connection would.
 */
export class InProcessDynamoHandler {
  private nextId = 0;
  private closed = false;
  private readonly waiting = new Map<
    number,
    { resolve: (response: HandlerResponse) => void; reject: (error: Error) => void }
  >();

  constructor(private readonly port: MessagePort) {
    port.on('message', (answer: InProcessResponse) => {
      const pending = this.waiting.get(answer.id);
      if (!pending) return;
      this.waiting.delete(answer.id);
      pending.resolve({
        statusCode: answer.status,
        headers: answer.headers,
        body: Buffer.from(answer.body),
      });
    });
    port.on('close', () => this.fail());
    // Waiting requests keep the process alive through their callers, not through the port.
    port.unref();
  }

  async handle(
    request: HandlerRequest,
    options: { abortSignal?: unknown } = {},
  ): Promise<{ response: HandlerResponse }> {
    if (this.closed) throw connectionError('the local DynamoDB thread has stopped');
    // The JSON protocol's body, as text or as its UTF-8 bytes: bytes go to the thread (copied).
    const body = utf8(request.body);
    const id = this.nextId++;
    const response = await new Promise<HandlerResponse>((resolve, reject) => {
      const signal = isAbortSignal(options.abortSignal) ? options.abortSignal : undefined;
      if (signal?.aborted) {
        reject(abortError());
        return;
      }
      const onAbort = () => {
        this.waiting.delete(id);
        reject(abortError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.set(id, {
        resolve: (r) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(r);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      });
      this.port.postMessage({
        id,
        method: request.method,
        path: request.path,
        headers: request.headers,
        body,
      } satisfies InProcessRequest);
    });
    return { response };
  }

  /** The SDK asks; there is nothing to configure. */
  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  /** The port belongs to the thread's owner, who closes it when it stops the thread. */
  destroy(): void {}

  private fail(): void {
    this.closed = true;
    for (const pending of this.waiting.values()) {
      pending.reject(connectionError('the local DynamoDB thread stopped before it answered'));
    }
    this.waiting.clear();
  }
}

/** A request body as UTF-8 bytes: the SDK sends text or bytes, and nothing for no body. */
function utf8(body: unknown): Uint8Array {
  if (body === undefined) return new Uint8Array();
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return body;
  throw new TypeError('the local DynamoDB takes a text or byte body only');
}

/** The SDK passes the caller's signal through; only a standard one can be listened to. */
function isAbortSignal(value: unknown): value is AbortSignal {
  return value instanceof AbortSignal;
}

/** A refused connection, as the SDK's retry logic recognises one. */
function connectionError(message: string): Error {
  return Object.assign(new Error(message), { code: 'ECONNREFUSED' });
}

function abortError(): Error {
  return Object.assign(new Error('Request aborted'), { name: 'AbortError' });
}

/** Handlers by endpoint: local mode registers its thread's, and the wiring (wiring.ts) asks. */
const handlers = new Map<string, InProcessDynamoHandler>();

/** Makes `handler` the way this process's clients of `endpoint` send their requests. */
export function registerInProcessDynamo(endpoint: string, handler: InProcessDynamoHandler): () => void {
  handlers.set(endpoint, handler);
  return () => {
    if (handlers.get(endpoint) === handler) handlers.delete(endpoint);
  };
}

/** The in-process handler registered for `endpoint`, if any. */
export function inProcessDynamo(endpoint: string | undefined): InProcessDynamoHandler | undefined {
  return endpoint === undefined ? undefined : handlers.get(endpoint);
}
