/**
 * `npm run smoke -- --profile X [--stack ToolLedger] [--region R] --tenant T`: run once after
 * `cdk deploy`, with credentials of someone who may read the stack, call the API as an agent and
 * operator of tenant T, send to the queue, write and delete items in the table, and set an alarm's
 * state. It answers, against the real account, the questions no offline test can: does the first
 * deploy's logging role exist, does SigV4 reach the API, does the executor take work off the queue,
 * does the reconciler (on AWS) take an expired lease through `uncertain`, do alarms reach the topic.
 * Every step says what it promises and checks it; what it created it removes.
 *
 * `--dry-run` prints the plan and exits 0 without credentials or network. Without credentials for
 * the profile it refuses, before any call, and says what to do.
 */
import { randomUUID } from 'node:crypto';
import { APIGatewayClient, GetAccountCommand } from '@aws-sdk/client-api-gateway';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import {
  CloudWatchClient,
  DescribeAlarmHistoryCommand,
  SetAlarmStateCommand,
} from '@aws-sdk/client-cloudwatch';
import { CloudWatchLogsClient, FilterLogEventsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { DeleteItemCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetFunctionConfigurationCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { fromIni } from '@aws-sdk/credential-provider-ini';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { sigv4Signer } from '../../client/sigv4';
import { SETTINGS } from '../../functions/contract/environment';
import { operationKey } from '../../functions/contract/keys';
import { RECORD_FORMAT } from '../../functions/contract/table';
import type { OperationRecord } from '../../functions/domain/operation';
import { unresolvedFields } from '../../functions/engine/record-fields';
import { toItem } from '../../functions/ledger/record-item';

/** What the command line asked for. */
export interface SmokeOptions {
  profile: string | undefined;
  stack: string;
  region: string | undefined;
  tenant: string | undefined;
  dryRun: boolean;
}

/** One step: what it does, what it promises when it passes. */
interface Step {
  name: string;
  promise: string;
  run(ctx: SmokeContext): Promise<string>;
}

/** What the steps share. */
interface SmokeContext {
  options: SmokeOptions & { tenant: string };
  credentials: AwsCredentialIdentityProvider;
  region: string;
  outputs: Record<string, string>;
  cleanups: (() => Promise<void>)[];
  api(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
}

/** A usage or environment problem: the message says what to do; exit code 2, nothing was called. */
export class SmokeRefusal extends Error {}

const USAGE =
  'usage: npm run smoke -- --profile NAME --tenant TENANT [--stack ToolLedger] [--region REGION] [--dry-run]';

/** Parses `argv` (after the script name). */
export function parseArgs(argv: readonly string[]): SmokeOptions {
  const options: SmokeOptions = {
    profile: undefined,
    stack: 'ToolLedger',
    region: undefined,
    tenant: undefined,
    dryRun: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined || next.startsWith('--'))
        throw new SmokeRefusal(`${flag} needs a value\n${USAGE}`);
      return next;
    };
    if (flag === '--profile') options.profile = value();
    else if (flag === '--stack') options.stack = value();
    else if (flag === '--region') options.region = value();
    else if (flag === '--tenant') options.tenant = value();
    else if (flag === '--dry-run') options.dryRun = true;
    else throw new SmokeRefusal(`unknown option ${flag}\n${USAGE}`);
  }
  return options;
}

/** The steps, in order. */
export const PLAN: readonly Step[] = [
  {
    name: 'credentials',
    promise: 'the profile resolves to an identity in the account (STS GetCallerIdentity)',
    async run(ctx) {
      const who = await new STSClient({ region: ctx.region, credentials: ctx.credentials }).send(
        new GetCallerIdentityCommand({}),
      );
      return `${who.Arn} in ${who.Account}`;
    },
  },
  {
    name: 'stack outputs',
    promise: 'the stack is deployed and has every output the steps read',
    async run(ctx) {
      const out = await new CloudFormationClient({ region: ctx.region, credentials: ctx.credentials }).send(
        new DescribeStacksCommand({ StackName: ctx.options.stack }),
      );
      for (const o of out.Stacks?.[0]?.Outputs ?? [])
        if (o.OutputKey && o.OutputValue) ctx.outputs[o.OutputKey] = o.OutputValue;
      const missing = [
        'ApiUrl',
        'QueueUrl',
        'TableName',
        'ExecutorLogGroup',
        'ApiFunctionName',
        'LateOutcomesAlarmName',
      ].filter((key) => !(key in ctx.outputs));
      if (missing.length > 0)
        throw new Error(`the stack has no output ${missing.join(', ')}: deploy this version first`);
      return ctx.outputs.ApiUrl!;
    },
  },
  {
    name: 'API Gateway logging role',
    promise:
      "the account has API Gateway's logging role (apiCloudWatchRole: true creates it; false needs one already set)",
    async run(ctx) {
      const account = await new APIGatewayClient({ region: ctx.region, credentials: ctx.credentials }).send(
        new GetAccountCommand({}),
      );
      if (!account.cloudwatchRoleArn) throw new Error('no cloudwatchRoleArn in the account settings');
      return account.cloudwatchRoleArn;
    },
  },
  {
    name: 'API over SigV4',
    promise:
      'a SigV4-signed GET /v1/tools answers 200 with the deployment’s tools (the resource policy admits you)',
    async run(ctx) {
      const res = await ctx.api('GET', 'v1/tools');
      if (res.status !== 200)
        throw new Error(`GET /v1/tools answered ${res.status} ${String(res.body.code)}`);
      return `${(res.body.tools as unknown[]).length} tools`;
    },
  },
  {
    name: 'queue',
    promise:
      'a work message sent with SQS reaches the executor, which logs it by message ID (past its not_after, it runs nothing)',
    async run(ctx) {
      const sqs = new SQSClient({ region: ctx.region, credentials: ctx.credentials });
      const sent = await sqs.send(
        new SendMessageCommand({
          QueueUrl: ctx.outputs.QueueUrl,
          MessageBody: JSON.stringify({
            operation_id: `smoke-${randomUUID()}`,
            tenant: ctx.options.tenant,
            tool: 'webhook.post',
            arguments: { url: 'https://smoke.invalid/', json: {} },
            not_after: new Date(Date.now() - 60_000).toISOString(),
          }),
        }),
      );
      const logs = new CloudWatchLogsClient({ region: ctx.region, credentials: ctx.credentials });
      for (let i = 0; i < 30; i++) {
        const found = await logs.send(
          new FilterLogEventsCommand({
            logGroupName: ctx.outputs.ExecutorLogGroup,
            filterPattern: `"${sent.MessageId}"`,
            startTime: Date.now() - 15 * 60_000,
          }),
        );
        const line = found.events?.[0]?.message;
        if (line)
          return `message ${sent.MessageId}: ${/"outcome_code":"([^"]+)"|"code":"([^"]+)"/.exec(line)?.slice(1).find(Boolean) ?? 'logged'}`;
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      }
      throw new Error(`the executor did not log message ${sent.MessageId} within a minute`);
    },
  },
  {
    name: 'forced uncertain outcome',
    promise:
      'a pending operation whose lease expired is taken to uncertain by a reconciler pass on AWS (POST /v1/reconciliations), then to an operator (webhook.post has no reconcile), and resolved by you',
    async run(ctx) {
      const config = await new LambdaClient({ region: ctx.region, credentials: ctx.credentials }).send(
        new GetFunctionConfigurationCommand({ FunctionName: ctx.outputs.ApiFunctionName }),
      );
      const env = config.Environment?.Variables ?? {};
      const shards = {
        attentionShards: Number(env[SETTINGS.attentionShards.name] ?? 8),
        unresolvedShards: Number(env[SETTINGS.unresolvedShards.name] ?? 1),
      };
      const id = `smoke-${randomUUID()}`;
      const now = Date.now();
      const key = operationKey(ctx.options.tenant, id);
      const iso = new Date(now - 120_000).toISOString();
      const record: OperationRecord = {
        ...key,
        tenant: ctx.options.tenant,
        operation_id: id,
        tool: 'webhook.post',
        arguments: '{"json":{},"url":"https://smoke.invalid/"}',
        arguments_digest: 'v1:smoke',
        state: 'pending',
        attempt: 1,
        max_attempts: 1,
        retention_seconds: 86_400,
        requested_by: 'tool-ledger-smoke',
        reservation_id: randomUUID(),
        record_format: RECORD_FORMAT,
        lease_owner: 'smoke/expired',
        lease_expires_at: now - 60_000,
        created_at: iso,
        updated_at: iso,
        history: [{ at: iso, from: null, to: 'pending', attempt: 1, by: 'tool-ledger-smoke' }],
      };
      Object.assign(record, unresolvedFields(record, shards as never, now - 60_000));
      const dynamo = new DynamoDBClient({ region: ctx.region, credentials: ctx.credentials });
      await dynamo.send(new PutItemCommand({ TableName: ctx.outputs.TableName, Item: toItem(record) }));
      ctx.cleanups.push(async () => {
        await dynamo.send(
          new DeleteItemCommand({ TableName: ctx.outputs.TableName, Key: toItem(key as never) }),
        );
      });
      const pass = await ctx.api('POST', 'v1/reconciliations');
      if (pass.status !== 200)
        throw new Error(`POST /v1/reconciliations answered ${pass.status} ${String(pass.body.code)}`);
      const seen = await ctx.api('GET', `v1/operations/${encodeURIComponent(id)}`);
      const states = ((seen.body.history as { to: string }[] | undefined) ?? []).map((h) => h.to);
      if (seen.body.state !== 'needs_reconciliation' || !states.includes('uncertain')) {
        throw new Error(
          `the operation is ${String(seen.body.state)} (history ${states.join(' > ')}), not uncertain then needs_reconciliation`,
        );
      }
      const resolved = await ctx.api('POST', `v1/operations/${encodeURIComponent(id)}/resolution`, {
        outcome: 'failed',
        attempt: 1,
      });
      if (resolved.body.state !== 'failed_terminal')
        throw new Error(`resolution answered ${resolved.status}`);
      return `${id}: pending > uncertain > needs_reconciliation > failed_terminal`;
    },
  },
  {
    name: 'alarm notification',
    promise: 'an alarm set to ALARM runs its SNS action successfully (the topic lets CloudWatch publish)',
    async run(ctx) {
      const cloudwatch = new CloudWatchClient({ region: ctx.region, credentials: ctx.credentials });
      const alarm = ctx.outputs.LateOutcomesAlarmName!;
      const since = new Date();
      await cloudwatch.send(
        new SetAlarmStateCommand({
          AlarmName: alarm,
          StateValue: 'ALARM',
          StateReason: 'tool-ledger smoke test',
        }),
      );
      ctx.cleanups.push(async () => {
        await cloudwatch.send(
          new SetAlarmStateCommand({
            AlarmName: alarm,
            StateValue: 'OK',
            StateReason: 'tool-ledger smoke test done',
          }),
        );
      });
      for (let i = 0; i < 30; i++) {
        const history = await cloudwatch.send(
          new DescribeAlarmHistoryCommand({ AlarmName: alarm, HistoryItemType: 'Action', StartDate: since }),
        );
        const item = history.AlarmHistoryItems?.[0]?.HistorySummary;
        if (item) {
          if (/failed/i.test(item)) throw new Error(item);
          return item;
        }
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      }
      throw new Error('no action ran within a minute of the ALARM state');
    },
  },
];

/** Writes one line. */
export type Print = (line: string) => void;

/** Runs the smoke test; returns the exit code. */
export async function main(
  argv: readonly string[],
  print: Print,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  let options: SmokeOptions;
  try {
    options = parseArgs(argv);
  } catch (error) {
    print(error instanceof Error ? error.message : String(error));
    return 2;
  }
  if (options.dryRun) {
    print(
      `smoke plan for stack ${options.stack}${options.profile ? ` with profile ${options.profile}` : ''} (dry run: nothing is called)`,
    );
    PLAN.forEach((step, i) => {
      print(`${i + 1}. ${step.name}: ${step.promise}`);
    });
    print('then: the items, messages and alarm states it made are removed or reset');
    return 0;
  }
  if (!options.profile) {
    print(`--profile is required (the AWS profile to run as)\n${USAGE}`);
    return 2;
  }
  if (!options.tenant) {
    print(
      `--tenant is required (a tenant whose agent and operator roles your profile's principal has)\n${USAGE}`,
    );
    return 2;
  }
  const region = options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  if (!region) {
    print(`no region: pass --region, or set AWS_REGION\n${USAGE}`);
    return 2;
  }
  const credentials = fromIni({ profile: options.profile });
  try {
    await credentials();
  } catch (error) {
    print(
      `no AWS credentials for profile "${options.profile}" (${error instanceof Error ? error.message : String(error)}): ` +
        `log in first (aws sso login --profile ${options.profile}) or configure the profile; --dry-run shows the plan without credentials`,
    );
    return 2;
  }
  const signer = sigv4Signer({ region, credentials });
  const ctx: SmokeContext = {
    options: { ...options, tenant: options.tenant },
    credentials,
    region,
    outputs: {},
    cleanups: [],
    async api(method, path, body) {
      const url = new URL(path, ctx.outputs.ApiUrl);
      const text = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string> =
        text === undefined ? {} : { 'content-type': 'application/json' };
      const signed = await signer.sign({
        method,
        url,
        headers,
        ...(text === undefined ? {} : { body: text }),
      });
      const res = await fetch(url, {
        method,
        headers: { ...headers, ...signed },
        ...(text === undefined ? {} : { body: text }),
      });
      return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
    },
  };
  let failed = 0;
  for (const step of PLAN) {
    try {
      print(`ok   ${step.name}: ${await step.run(ctx)}`);
    } catch (error) {
      failed += 1;
      print(
        `FAIL ${step.name}: ${error instanceof Error ? error.message : String(error)}\n     promised: ${step.promise}`,
      );
      if (step.name === 'credentials' || step.name === 'stack outputs') break;
    }
  }
  for (const cleanup of ctx.cleanups.reverse()) {
    await cleanup().catch((error: unknown) => {
      print(`cleanup failed: ${error instanceof Error ? error.message : String(error)}`);
    });
  }
  print(failed === 0 ? 'smoke test passed' : `smoke test failed: ${failed} step(s)`);
  return failed === 0 ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2), (line) => console.log(line)).then((code) => {
    process.exitCode = code;
  });
}
