import tools from '#tool-ledger/tools';
import { lambdaApiHandler } from '../http/api-handler';
import { authenticatorFromEnv } from '../http/auth';
import { schemaVersion } from '../tools/schema-version';
import { buildRuntime } from '../wiring';

/**
 * The API Lambda (the contract, §5): the deployment's tools module, wired from the environment, with the
 * authenticator the environment names, behind the HTTP front door (functions/http/api-handler.ts). It
 * bundles zod's JSON Schema generator (for `GET /v1/tools`), so its reservations also store the schema
 * version of their tool.
 *
 * @example
 * ```ts
 * // CDK: new HandlerFunction(this, 'ApiHandler', { entry: HANDLER_ENTRIES.api, … }) (lib/handler-function.ts)
 * ```
 */
export const handler = lambdaApiHandler(() => {
  const runtime = buildRuntime(tools);
  runtime.deps.schemaVersion = schemaVersion;
  return { runtime, authenticator: authenticatorFromEnv() };
});
