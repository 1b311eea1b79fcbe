import { createHash } from 'node:crypto';
import { Stack, Token } from 'aws-cdk-lib';
import type { Construct } from 'constructs';

/**
 * A name for one ToolLedger instance that no other instance in the account and region shares: the
 * stack's name and the construct's path inside it (`ToolLedger-ToolLedger`, `Platform-Team-A-Ledger`).
 * It names the REST API (API Gateway's metrics are keyed by API name) and is the default metric
 * `service` dimension, so two instances' alarms never read each other's data.
 */

/** Longest name kept as is; longer ones are cut and suffixed with a hash of the whole. */
const MAX_LENGTH = 64;

/**
 * @example
 * ```ts
 * instanceName(ledger); // 'ToolLedger-ToolLedger' for the construct 'ToolLedger' in the stack 'ToolLedger'
 * ```
 */
export function instanceName(construct: Construct): string {
  const stack = Stack.of(construct);
  const inStack = construct.node.scopes.slice(construct.node.scopes.indexOf(stack) + 1).map((c) => c.node.id);
  const stackName = Token.isUnresolved(stack.stackName) ? stack.node.id : stack.stackName;
  const full = [stackName, ...inStack].join('-').replace(/[^A-Za-z0-9_.-]/g, '-');
  if (full.length <= MAX_LENGTH) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return `${full.slice(0, MAX_LENGTH - 9)}-${hash}`;
}
