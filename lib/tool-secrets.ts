import { Stack } from 'aws-cdk-lib';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { SETTINGS } from '../functions/contract/environment';
import { SECRET_NAME_PATTERN, type SecretSource } from '../functions/tools/tool-secrets';
import type { HandlerName, ToolSecret } from './tool-ledger-props';

/**
 * The deployment's tool secrets (functions/tools/tool-secrets.ts): each handler's
 * `TOOL_LEDGER_TOOL_SECRETS` names only the secrets its tools may read, and only that handler's role
 * may read them. Values never enter the template.
 */

const ALL_HANDLERS: readonly HandlerName[] = ['api', 'executor', 'reconciler'];

/** Problems with the secrets' names and handlers, each saying what to change. */
export function checkToolSecrets(secrets: Readonly<Record<string, ToolSecret>>): string[] {
  const problems: string[] = [];
  for (const [name, secret] of Object.entries(secrets)) {
    if (!SECRET_NAME_PATTERN.test(name)) {
      problems.push(
        `toolSecrets name "${name}" is not a secret name: use [A-Z][A-Z0-9_]*, at most 64 characters.`,
      );
    }
    if (secret.handlers !== undefined && secret.handlers.length === 0) {
      problems.push(
        `toolSecrets.${name} names no handler: leave handlers out (every function that runs tools) or name them.`,
      );
    }
  }
  return problems;
}

/** The variable of one handler, and the grants to its role. */
export function toolSecretsFor(
  scope: Construct,
  secrets: Readonly<Record<string, ToolSecret>>,
  handler: HandlerName,
  grantee: IGrantable,
): Record<string, string> {
  const sources: Record<string, SecretSource> = {};
  for (const [name, secret] of Object.entries(secrets)) {
    if (!(secret.handlers ?? ALL_HANDLERS).includes(handler)) continue;
    if ('secret' in secret) {
      secret.secret.grantRead(grantee);
      sources[name] = {
        source: 'secretsmanager',
        id: secret.secret.secretArn,
        ...(secret.field === undefined ? {} : { field: secret.field }),
      };
    } else {
      secret.parameter.grantRead(grantee);
      sources[name] = { source: 'ssm', id: secret.parameter.parameterName };
    }
  }
  if (Object.keys(sources).length === 0) return {};
  return { [SETTINGS.toolSecrets.name]: Stack.of(scope).toJsonString(sources) };
}
