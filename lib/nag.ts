import { Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * cdk-nag acknowledgements that name one finding exactly. IAM5 findings are keyed by the rendered
 * resource (`Resource::arn:<AWS::Partition>:...`), so an acknowledgement written by hand would break
 * whenever a logical ID changes; these helpers render the key from the ARN itself.
 */

/** How cdk-nag prints a CloudFormation value in a finding key: references become `<LogicalId>`. */
function render(value: unknown): string {
  if (typeof value === 'string') return value.replace(/\$\{/g, '<').replace(/\}/g, '>');
  if (value !== null && typeof value === 'object') {
    const node = value as Record<string, unknown>;
    const join = node['Fn::Join'] as [string, unknown[]] | undefined;
    if (join) return join[1].map(render).join(join[0]);
    const getAtt = node['Fn::GetAtt'] as [unknown, unknown] | undefined;
    if (getAtt) return `<${render(getAtt[0])}.${render(getAtt[1])}>`;
    if ('Ref' in node) return `<${render(node.Ref)}>`;
  }
  return JSON.stringify(value);
}

/**
 * Acknowledge `AwsSolutions-IAM5` for these resource ARNs (and only these) on a construct.
 *
 * @example
 * ```ts
 * acknowledgeWildcardResources(policy, [api.arnForExecuteApi('GET', '/v1/operations/*', 'prod')], 'path parameter');
 * ```
 */
export function acknowledgeWildcardResources(
  construct: IConstruct,
  arns: readonly string[],
  reason: string,
): void {
  const stack = Stack.of(construct);
  for (const arn of arns) {
    const rendered = render(stack.resolve(arn));
    if (rendered.includes('*')) {
      Validations.of(construct).acknowledge({ id: `AwsSolutions-IAM5[Resource::${rendered}]`, reason });
    }
  }
}
