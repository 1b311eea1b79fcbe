import tools from '#tool-ledger/tools';
import { createExecutorHandler } from '../queue/executor-handler';
import { buildRuntime } from '../wiring';

/**
 * The SQS executor Lambda (SPEC §6): the deployment's tools module (`#tool-ledger/tools`, the shipped
 * tools unless the construct aliases another), wired from the environment, behind the queue's front
 * door (functions/queue/executor-handler.ts).
 */
export const handler = createExecutorHandler(() => buildRuntime(tools));
