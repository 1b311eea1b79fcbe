/**
 * The CDK app (`npx cdk synth`, `npx cdk deploy`). Settings come from CDK context, so a deployment is
 * configured in cdk.json or with `-c key=value`, never by editing code:
 *
 * | context key | meaning |
 * | --- | --- |
 * | `toolLedger:stackName` | stack name (default `ToolLedger`) |
 * | `toolLedger:account`, `toolLedger:region` | where to deploy (both or neither; default: environment-agnostic) |
 * | `toolLedger:tenants` | JSON `{"tenant": {"agents": [arn], "approvers": [arn], "operators": [arn]}}` |
 * | `toolLedger:queueTenants` | JSON array of tenants the work queue carries (default: all) |
 * | `toolLedger:queueSenders` | JSON `[{"principal": "AROA…", "tenants": ["acme"]}]`: producer role IDs and their tenants |
 * | `toolLedger:toolsModule` | path of the tools module, relative to the project (default: `webhook.post` alone; the workspace tools need a shared file system) |
 * | `toolLedger:webhookAllow` | origins `webhook.post` may call, comma-separated |
 * | `toolLedger:alarmEmail` | e-mail address for alarm notifications |
 * | `toolLedger:dev` | `true`: the table, key and logs are destroyed with the stack |
 */
import path from 'node:path';
import { App, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { deploymentEnvironment } from '../lib/app-environment';
import { PROJECT_ROOT } from '../lib/bundling';
import type { QueueSender } from '../lib/queue-senders';
import type { TenantPrincipals } from '../lib/tool-ledger';
import { ToolLedgerStack } from '../lib/tool-ledger-stack';

const app = new App();

/** A context value as given in cdk.json (any JSON) or on the command line (always a string). */
function context<T>(key: string): T | undefined {
  const value: unknown = app.node.tryGetContext(`toolLedger:${key}`);
  if (typeof value !== 'string') return value as T | undefined;
  const trimmed = value.trim();
  return (trimmed.startsWith('{') || trimmed.startsWith('[') ? JSON.parse(trimmed) : value) as T;
}

function list(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value)
    ? value
    : value
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
}

const configuredTools = context<string>('toolsModule');
// The construct loads the tools module itself to check retention and timeouts (the contract, §8).
const toolsModule = configuredTools ? path.resolve(PROJECT_ROOT, configuredTools) : undefined;
const webhookAllow = list(context<string | string[]>('webhookAllow'));
const dev = String(context<string | boolean>('dev')) === 'true';

new ToolLedgerStack(app, context<string>('stackName') ?? 'ToolLedger', {
  // Never CDK_DEFAULT_*: see lib/app-environment.ts.
  env: deploymentEnvironment(context<string>('account')?.toString(), context<string>('region')),
  alarmEmail: context<string>('alarmEmail'),
  ledger: {
    tenants: context<Record<string, TenantPrincipals>>('tenants') ?? {},
    queueTenants: context<string[]>('queueTenants'),
    queueSenders: context<QueueSender[]>('queueSenders') ?? [],
    ...(toolsModule === undefined ? {} : { toolsModule }),
    webhookAllow,
    removalPolicy: dev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
  },
});

// cdk-nag's AWS Solutions rules run on every synth; acknowledged findings carry their reasons in lib/.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
