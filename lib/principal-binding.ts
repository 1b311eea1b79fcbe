import { Token } from 'aws-cdk-lib';
import { canonicalArn } from '../functions/domain/principal';

/**
 * How a principal ARN in the tenant map is understood. The API handler compares a caller with the map
 * in a canonical form (`canonicalArn`: an assumed-role session counts as its role, a role's path is
 * ignored, since role names are unique within an account), so two entries that look different can name
 * one role. Synth compares them with that same function, so a map the handler would refuse at cold
 * start (every request a 500) is refused here instead, with the entries named.
 */

/** IAM users and roles, and assumed-role sessions (what `requestContext.identity.userArn` holds). */
const PRINCIPAL_ARN =
  /^arn:aws[a-z-]*:(iam::\d{12}:(role|user)\/[\w+=,.@/-]+|sts::\d{12}:assumed-role\/[\w+=,.@-]+\/[\w+=,.@-]+)$/;

/** An assumed-role session: what a caller presents, never what a tenant should bind. */
const SESSION = /^arn:aws[a-z-]*:sts::\d{12}:assumed-role\//;

/** What synth makes of one bound ARN. */
export type BindingCheck = { ok: true; canonical: string } | { ok: false; problem: string };

/**
 * Checks one ARN of tenant `tenant`. Sessions are refused: the session name is chosen by whoever
 * assumes the role, so binding one session binds every session of the role (the handler matches the
 * role), which is never what the entry says. Bind the role instead.
 */
export function checkBinding(tenant: string, arn: string): BindingCheck {
  if (Token.isUnresolved(arn)) return { ok: true, canonical: arn };
  if (!PRINCIPAL_ARN.test(arn)) {
    return {
      ok: false,
      problem:
        `tenant "${tenant}" lists "${arn}", which is not an IAM role or user ARN ` +
        '(arn:aws:iam::<account>:role/<name> or ...:user/<name>).',
    };
  }
  if (SESSION.test(arn)) {
    return {
      ok: false,
      problem:
        `tenant "${tenant}" lists the assumed-role session "${arn}": a session counts as its role, so this ` +
        `would admit every session of that role, whatever its name; bind the role "${canonicalArn(arn)}" ` +
        '(with its path, if it has one) instead.',
    };
  }
  return { ok: true, canonical: canonicalArn(arn) };
}
