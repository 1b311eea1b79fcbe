/**
 * The body of a work-queue message (the contract, §6). Tenants come from the queue's binding, so a message
 * that names a tenant the queue does not carry is never run.
 */
export interface WorkMessage {
  operation_id: string;
  tenant: string;
  tool: string;
  arguments: unknown;
  agent_run_id?: string;
  /** ISO time after which the message is acknowledged without running. */
  not_after?: string;
}

/** Where the engine puts work for later; SQS in AWS and locally (fauxqs). */
export interface WorkQueue {
  /** Sends one message. Throws if it could not be sent. */
  enqueue(message: WorkMessage): Promise<void>;
  /**
   * Makes a received message visible again after `seconds` instead of the queue's whole visibility
   * timeout (six executor timeouts), so a retryable failure is retried in seconds. Queues without
   * receipts (tests, in-memory) leave it out.
   */
  retryAfter?(receiptHandle: string, seconds: number): Promise<void>;
}

/** A queue that refuses everything: for deployments and tests without asynchronous work. */
export const noWorkQueue: WorkQueue = {
  async enqueue() {
    throw new Error('no work queue is configured');
  },
};
