import { readFileSync } from 'node:fs';
import path from 'node:path';
import { App } from 'aws-cdk-lib';
import { PROJECT_ROOT } from '../../lib/bundling';
import { ToolLedgerStack, type ToolLedgerStackProps } from '../../lib/tool-ledger-stack';

/**
 * Builds apps the way `cdk synth` does (cdk.json's context, which `new App()` does not read in-process),
 * but without bundling and without the built-in template validation, so a stack synthesizes in about
 * half a second.
 */

/** cdk.json's context. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  return cdkJson.context ?? {};
}

/** An app with cdk.json's context; bundling is skipped unless `bundle` names stacks to bundle. */
export function testApp(options: { bundle?: string[] } = {}): App {
  return new App({
    context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': options.bundle ?? [] },
    builtinCloudFormationValidation: false,
  });
}

/** The example deployment's tenants. */
export const EXAMPLE_TENANTS = {
  acme: {
    agents: ['arn:aws:iam::123456789012:role/acme-agent'],
    approvers: ['arn:aws:iam::123456789012:role/acme-approver'],
    operators: ['arn:aws:iam::123456789012:role/acme-ops'],
  },
  globex: { agents: ['arn:aws:iam::123456789012:role/globex-agent'] },
};

/** A realistic deployment: two tenants, an explicit queue binding, an alarm e-mail. */
export function exampleStack(app: App, props: ToolLedgerStackProps = {}): ToolLedgerStack {
  return new ToolLedgerStack(app, 'Ledger', {
    alarmEmail: 'oncall@example.com',
    ...props,
    ledger: {
      tenants: EXAMPLE_TENANTS,
      ...props.ledger,
    },
  });
}
