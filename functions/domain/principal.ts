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
