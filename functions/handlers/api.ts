import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import tools from '#tool-ledger/tools';
import { errorClass } from '../domain/errors';
import { type ApiHandler, createApiHandler } from '../http/api-handler';
import { authenticatorFromEnv } from '../http/auth';
import { problemResponse } from '../http/problem';
import { logger } from '../observability/logger';
import { buildRuntime } from '../wiring';

export { type ApiHandler, createApiHandler } from '../http/api-handler';

let built: ApiHandler | undefined;
let refreshTools: () => Promise<void> = async () => {};

/**
 * The API Lambda (API Gateway REST proxy integration, SPEC §5). The runtime (DynamoDB client, tools,
 * queue) and the authenticator are built on the first invocation and kept for the sandbox's life. A
 * configuration error answers 500 `internal_error` and is logged by class only, since its message may
 * quote configuration; the next invocation tries again.
 *
 * @example
 * ```ts
 * // CDK: new NodejsFunction(this, 'Api', { entry: 'functions/handlers/api.ts', handler: 'handler' })
 * ```
 */
export async function handler(event: APIGatewayProxyEvent, context: Context): Promise<APIGatewayProxyResult> {
  if (!built) {
    try {
      const runtime = buildRuntime(tools);
      built = createApiHandler(runtime, authenticatorFromEnv());
      refreshTools = runtime.refreshTools;
    } catch (error) {
      logger.error('api configuration failed', { code: 'internal_error', error_class: errorClass(error) });
      return problemResponse(error, context?.awsRequestId ?? 'unknown');
    }
  }
  // The gateway's upstream tools: listed at the first invocation, relisted while one is missing.
  await refreshTools();
  return built(event, context);
}
