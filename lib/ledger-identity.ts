import { randomUUID } from 'node:crypto';
import { Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { AwsCustomResource, AwsCustomResourcePolicy, PhysicalResourceId } from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { IDENTITY_KEY, LEDGER_TABLE, RECORD_FORMAT } from '../functions/contract/table';

/**
 * The table's identity guard. A table replaced by CloudFormation (a property that forces replacement,
 * a renamed construct, a retained table left behind) would otherwise come up empty under the same
 * handlers: every operation forgotten, and agents' retries of completed operations run again. The
 * ledger keeps an identity item in its own key namespace; this resource writes it when the deployment
 * is created (keeping one that is already there: an existing table adopted at upgrade, a restored table
 * brought in), and on every later change of the table requires it to be there, so a deploy that would
 * point the handlers at a table without the ledger's identity fails and rolls back instead.
 *
 * ```
 *  create  ─ UpdateItem SET ledger_id = if_not_exists(ledger_id, new)          (adopt or start)
 *  update  ─ UpdateItem IF attribute_exists(pk) SET checked_format = n  ─ fails on a table without it
 * ```
 *
 * To start a new, empty ledger on purpose, write the identity item by hand first (the runbook says how).
 */
export interface LedgerIdentityProps {
  table: ITable;
  /** The table's key, if it is encrypted with a customer-managed one. */
  tableKey: IKey | undefined;
}

/** The ID CDK gives the AwsCustomResource provider function in every stack. */
const AWS_CUSTOM_RESOURCE_PROVIDER = 'AWS679f53fac002430cb0da5b7982bd2287';

/** The identity item's guard, and the ledger's ID it reads back. */
export class LedgerIdentity extends Construct {
  /** The ledger's identity, as the table holds it. */
  readonly ledgerId: string;

  constructor(scope: Construct, id: string, props: LedgerIdentityProps) {
    super(scope, id);
    const key = {
      [LEDGER_TABLE.partitionKey.name]: { S: IDENTITY_KEY.pk },
      [LEDGER_TABLE.sortKey.name]: { S: IDENTITY_KEY.sk },
    };
    const names = { '#id': 'ledger_id', '#f': 'record_format', '#t': 'table_name' };
    const resource = new AwsCustomResource(this, 'Guard', {
      installLatestAwsSdk: false,
      onCreate: {
        service: 'DynamoDB',
        action: 'updateItem',
        parameters: {
          TableName: props.table.tableName,
          Key: key,
          UpdateExpression: 'SET #id = if_not_exists(#id, :id), #f = :f, #t = :t',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: {
            ':id': { S: randomUUID() },
            ':f': { N: String(RECORD_FORMAT) },
            ':t': { S: props.table.tableName },
          },
          ReturnValues: 'ALL_NEW',
        },
        physicalResourceId: PhysicalResourceId.of('tool-ledger-identity'),
        outputPaths: ['Attributes.ledger_id.S'],
      },
      onUpdate: {
        service: 'DynamoDB',
        action: 'updateItem',
        parameters: {
          TableName: props.table.tableName,
          Key: key,
          // Fails (ConditionalCheckFailed) on a table that does not hold this ledger's identity.
          ConditionExpression: 'attribute_exists(#id)',
          UpdateExpression: 'SET #f = :f, #t = :t',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: {
            ':f': { N: String(RECORD_FORMAT) },
            ':t': { S: props.table.tableName },
          },
          ReturnValues: 'ALL_NEW',
        },
        physicalResourceId: PhysicalResourceId.of('tool-ledger-identity'),
        outputPaths: ['Attributes.ledger_id.S'],
      },
      policy: AwsCustomResourcePolicy.fromStatements([
        new PolicyStatement({
          actions: ['dynamodb:UpdateItem'],
          resources: [props.table.tableArn],
          // Its own item only.
          conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [IDENTITY_KEY.pk] } },
        }),
        ...(props.tableKey
          ? [
              new PolicyStatement({
                actions: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:DescribeKey'],
                resources: [props.tableKey.keyArn],
                conditions: {
                  StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(this).region}.amazonaws.com` },
                },
              }),
            ]
          : []),
      ]),
    });
    this.ledgerId = resource.getResponseField('Attributes.ledger_id.S');
    // The provider function CDK shares per stack (its ID is CDK's own, fixed for AwsCustomResource).
    const provider = Stack.of(this).node.tryFindChild(AWS_CUSTOM_RESOURCE_PROVIDER);
    if (provider !== undefined) {
      for (const id of [
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      ]) {
        Validations.of(provider).acknowledge({
          id,
          reason:
            "CDK's AwsCustomResource provider (one per stack) writes the ledger's identity item at deploy time: its " +
            'function runs on the runtime CDK chooses and logs through AWSLambdaBasicExecutionRole; what it may do is ' +
            'its own policy, UpdateItem on the identity item alone (dynamodb:LeadingKeys).',
        });
      }
    }
  }
}
