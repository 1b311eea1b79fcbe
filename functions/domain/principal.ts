/**
 * Principals (the contract, §1): who made a request. In AWS the IAM ARN API Gateway reports, session included;
 * locally a label of the bearer token. Records and logs keep the principal exactly as it came, for
 * audit; the functions here give the forms in which two principals are compared.
 */

const ASSUMED_ROLE = /^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role\/([^/]+)\/[^/]+$/;
const IAM_ROLE = /^arn:(aws[a-z-]*):iam::(\d{12}):role\/(?:.+\/)?([^/]+)$/;

/**
 * The form IAM principals are compared in: sessions become their role, and role paths are dropped,
 * because an assumed-role ARN carries no path and role names are unique within an account. Any other
 * principal (an IAM user, a bearer token label) is returned as it is.
 *
 * @example
 * ```ts
 * canonicalArn('arn:aws:sts::123456789012:assumed-role/Deployer/alice'); // 'arn:aws:iam::123456789012:role/Deployer'
 * canonicalArn('arn:aws:iam::123456789012:role/team/Deployer');          // 'arn:aws:iam::123456789012:role/Deployer'
 * ```
 */
export function canonicalArn(arn: string): string {
  const session = ASSUMED_ROLE.exec(arn);
  if (session) return `arn:${session[1]}:iam::${session[2]}:role/${session[3]}`;
  const role = IAM_ROLE.exec(arn);
  if (role) return `arn:${role[1]}:iam::${role[2]}:role/${role[3]}`;
  return arn;
}

/**
 * Whether two principals are the same for the self-approval rule. An assumed-role session counts as
 * its role: whoever can assume the role picks the session name (`.../Role/alice`, `.../Role/bob`), so
 * comparing sessions would let one person approve their own operation under a second name.
 *
 * @example
 * ```ts
 * samePrincipalForApproval(
 *   'arn:aws:sts::123456789012:assumed-role/Role/alice',
 *   'arn:aws:sts::123456789012:assumed-role/Role/bob',
 * ); // true
 * ```
 */
export function samePrincipalForApproval(a: string, b: string): boolean {
  return canonicalArn(a) === canonicalArn(b);
}

/** Prefix of the requester recorded for work whose queue stamped its sender (SQS `SenderId`). */
const QUEUE_SENDER = 'sqs-sender:';

/**
 * The requester of work sent through a queue (the contract, §5 and §6): whoever put the message on the
 * queue asked for the operation. On AWS SQS stamps every message with its sender's IAM unique ID
 * (`AROA…:<session>` for an assumed role, `AIDA…` for a user), which no producer can choose; that is
 * the requester. A queue that carries no identity (local mode's) gives none: the record says so
 * (`unidentified`), and no approval of it can be told apart from a self-approval.
 *
 * @example
 * ```ts
 * queueRequester('AROAEXAMPLE:orchestrator-7', 'acme'); // { principal: 'sqs-sender:AROAEXAMPLE:orchestrator-7', unidentified: false }
 * queueRequester(undefined, 'acme');                    // { principal: 'queue:acme', unidentified: true }
 * ```
 */
export function queueRequester(
  senderId: string | undefined,
  tenant: string,
): { principal: string; unidentified: boolean } {
  if (senderId !== undefined && senderId !== '') {
    return { principal: `${QUEUE_SENDER}${senderId}`, unidentified: false };
  }
  return { principal: `queue:${tenant}`, unidentified: true };
}

/** What the self-approval rule knows of an approver: its principal and, on AWS, its IAM unique ID. */
export interface Approver {
  principal: string;
  /** API Gateway's `identity.caller`: `AROA…:<session>` for an assumed role, `AIDA…` for a user. */
  uniqueId?: string | undefined;
}

/**
 * Whether an approval would be the requester approving its own operation. A requester the queue did
 * not identify cannot be told apart from anyone: every approval counts as a self-approval. A queue
 * sender is compared by its IAM unique ID without the session (whoever assumes the role picks the
 * session name); an approver whose unique ID is unknown cannot be told apart from it either.
 * Otherwise principals compare as {@link samePrincipalForApproval} says.
 */
export function isSelfApproval(
  requester: { requested_by: string; requester_unidentified?: boolean | undefined },
  approver: Approver,
): boolean {
  if (requester.requester_unidentified === true) return true;
  if (requester.requested_by.startsWith(QUEUE_SENDER)) {
    if (approver.uniqueId === undefined || approver.uniqueId === '') return true;
    const sender = requester.requested_by.slice(QUEUE_SENDER.length);
    return uniqueIdOf(sender) === uniqueIdOf(approver.uniqueId);
  }
  return samePrincipalForApproval(requester.requested_by, approver.principal);
}

/** `AROAEXAMPLE:session` → `AROAEXAMPLE`: a role's sessions are the role. */
function uniqueIdOf(id: string): string {
  const colon = id.indexOf(':');
  return colon === -1 ? id : id.slice(0, colon);
}
