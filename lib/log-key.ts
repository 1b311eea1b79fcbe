import { Annotations, ArnFormat, Stack } from 'aws-cdk-lib';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';

/**
 * CloudWatch Logs encrypts a log group with a customer-managed key only when the key's policy lets the
 * regional Logs service use it, for log groups of this account (the encryption context names the log
 * group). A key of this app gets that statement here; a key imported from elsewhere cannot be changed
 * from here, so synth warns and its owner adds the statement.
 */

/** Lets CloudWatch Logs of this account and region use `key` for the deployment's log groups. */
export function allowLogsToUse(scope: Construct, key: IKey): void {
  const stack = Stack.of(scope);
  const added = key.addToResourcePolicy(
    new PolicyStatement({
      sid: 'AllowCloudWatchLogsOfThisAccount',
      principals: [new ServicePrincipal(`logs.${stack.region}.amazonaws.com`)],
      actions: [
        'kms:Encrypt',
        'kms:Decrypt',
        'kms:ReEncryptFrom',
        'kms:ReEncryptTo',
        'kms:GenerateDataKey',
        'kms:DescribeKey',
      ],
      resources: ['*'],
      conditions: {
        ArnLike: {
          'kms:EncryptionContext:aws:logs:arn': stack.formatArn({
            service: 'logs',
            resource: 'log-group',
            resourceName: '*',
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        },
      },
    }),
  );
  if (!added.statementAdded) {
    Annotations.of(scope).addWarningV2(
      'tool-ledger:log-key-policy',
      'logKey is not a key of this app, so its policy cannot be changed from here: let ' +
        'logs.<region>.amazonaws.com use it (kms:Encrypt, Decrypt, ReEncrypt*, GenerateDataKey*, DescribeKey) ' +
        'for log groups of this account, or the log groups fail to deploy.',
    );
  }
}
