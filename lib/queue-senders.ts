import { Lazy, Stack, Token } from 'aws-cdk-lib';
import { type IRole, Role } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { SETTINGS } from '../functions/contract/environment';
import type { SenderEntry } from '../functions/queue/sender-binding';
import { ToolLedgerConfigError } from './config-error';

/**
 * The executor's sender binding (the contract, §6), built at synth: which IAM principals may put work on the
 * queue for which tenants. SQS stamps every message with its sender's IAM unique ID (`SenderId`), which
 * a producer cannot choose, so the executor can refuse a message whose tenant its sender may not act
 * for. A role's unique ID exists only once the role does: for a role of the same app it is
 * `Fn::GetAtt <Role>.RoleId`, resolved by CloudFormation; for any other role or user, pass the ID
 * (`aws iam get-role --role-name X --query Role.RoleId`).
 */

/** A principal that sends work messages, and the tenants it may send them for. */
export interface QueueSender {
  /**
   * The sender: a role of this app (its `roleId` is used), or the IAM unique ID of a role (`AROA…`) or
   * user (`AIDA…`) defined elsewhere. Not an ARN: SQS reports senders by unique ID only.
   */
  readonly principal: IRole | string;
  /** Tenants it may send for; each must be one the queue carries (`queueTenants`). */
  readonly tenants: readonly string[];
}

/** IAM unique IDs of roles and users: a four-letter prefix and upper-case letters and digits. */
const UNIQUE_ID_PATTERN = /^(AROA|AIDA)[A-Z0-9]{8,128}$/;

/**
 * Collects the senders (from props and from `grantEnqueue`) and renders the executor's variable
 * lazily, so that grants made after the construct still reach the binding.
 */
export class QueueSenderBinding {
  private readonly entries: SenderEntry[] = [];

  constructor(
    private readonly scope: Construct,
    private readonly queueTenants: readonly string[],
  ) {}

  /** The stack's own roles (API, reconciler): they enqueue for every tenant. */
  trust(role: Role): void {
    this.entries.push({ id: role.roleId, tenants: '*' });
  }

  /** Binds a sender to tenants; throws a sentence that says what to change. */
  add(sender: QueueSender): void {
    const id = uniqueIdOf(sender.principal);
    const unknown = sender.tenants.filter((tenant) => !this.queueTenants.includes(tenant));
    if (unknown.length > 0) {
      throw new ToolLedgerConfigError([
        `queue sender ${describe(sender.principal)} is bound to ${unknown.map((t) => `"${t}"`).join(', ')}, ` +
          'which the work queue does not carry: add them to queueTenants (or tenants), or remove them.',
      ]);
    }
    if (sender.tenants.length === 0) {
      throw new ToolLedgerConfigError([
        `queue sender ${describe(sender.principal)} names no tenant: every message it sent would be refused; ` +
          'list the tenants it may send for.',
      ]);
    }
    this.entries.push({ id, tenants: [...sender.tenants] });
  }

  /** The executor's environment variable. */
  environment(): Record<string, string> {
    return {
      [SETTINGS.queueSenders.name]: Lazy.string({
        produce: () => Stack.of(this.scope).toJsonString(this.entries),
      }),
    };
  }
}

function uniqueIdOf(principal: IRole | string): string {
  if (typeof principal !== 'string') {
    // `Role.isRole`, not `instanceof`: a consumer's app may hold its own copy of aws-cdk-lib, whose
    // roles are roles all the same (the check reads a registry symbol every copy shares).
    if (Role.isRole(principal)) return (principal as Role).roleId;
    throw new ToolLedgerConfigError([
      `queue sender ${principal.node.path} is not a Role of this app (an imported role or a user), whose ` +
        'unique ID CloudFormation cannot read: pass its ID in queueSenders instead (aws iam get-role --role-name <name> --query Role.RoleId, "AROA…").',
    ]);
  }
  if (Token.isUnresolved(principal) || UNIQUE_ID_PATTERN.test(principal)) return principal;
  throw new ToolLedgerConfigError([
    `queue sender "${principal}" is not an IAM unique ID: SQS identifies senders by role ID ("AROA…") or ` +
      'user ID ("AIDA…"), not by ARN; pass the Role construct or its ID.',
  ]);
}

function describe(principal: IRole | string): string {
  return typeof principal === 'string' ? `"${principal}"` : principal.node.path;
}
