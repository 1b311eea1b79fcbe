import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  type GlobalSecondaryIndexProps,
  type ITable,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { Effect, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type IKey, Key } from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import {
  type IndexSchema,
  type KeyAttribute,
  LEDGER_INDEXES,
  LEDGER_TABLE,
  type LedgerIndex,
  READ_CACHE_KEY_PREFIX,
} from '../functions/contract/table';

/**
 * The ledger table: one item per operation, with the keys, TTL attribute and the two sparse GSIs of the
 * contract (functions/contract/table.ts) that the handlers write and read (the contract, §7).
 */

/** DynamoDB data-plane actions, by what a handler does; never `dynamodb:*`. */
export type TableAccess = 'GetItem' | 'BatchGetItem' | 'PutItem' | 'UpdateItem';

/** Which GSI a handler queries. */
export type TableIndex = LedgerIndex;

/** Settings of the table. */
export interface LedgerTableProps {
  /** RETAIN also turns on deletion protection. */
  removalPolicy: RemovalPolicy;
  /**
   * A table the platform team manages, with the contract's keys, TTL and both GSIs (synth cannot
   * see an imported table's schema: the handlers fail at their first write if it differs).
   */
  existingTable?: ITable;
  /** The key of `existingTable`, or the key to encrypt a new table with. */
  existingKey?: IKey;
}

/** The table with its customer-managed key. */
export class LedgerTable extends Construct {
  /** The DynamoDB table. */
  readonly table: ITable;
  /**
   * The customer-managed key that encrypts the table, its indexes and its backups; undefined for a
   * brought table encrypted with an AWS owned or managed key.
   */
  readonly key: IKey | undefined;

  constructor(scope: Construct, id: string, props: LedgerTableProps) {
    super(scope, id);
    if (props.existingTable) {
      this.table = props.existingTable;
      this.key = props.existingKey ?? props.existingTable.encryptionKey;
      return;
    }
    const retain = props.removalPolicy !== RemovalPolicy.DESTROY;
    const key =
      props.existingKey ??
      new Key(this, 'Key', {
        description: 'tool-ledger: encrypts the operations ledger table',
        enableKeyRotation: true,
        pendingWindow: Duration.days(retain ? 30 : 7),
        removalPolicy: props.removalPolicy,
      });
    this.key = key;
    const table = new Table(this, 'Table', {
      partitionKey: attribute(LEDGER_TABLE.partitionKey),
      sortKey: attribute(LEDGER_TABLE.sortKey),
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: LEDGER_TABLE.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: key,
      deletionProtection: retain,
      removalPolicy: props.removalPolicy,
      // Completion events are read from the stream (the construct's events function).
      stream: StreamViewType.NEW_AND_OLD_IMAGES,
    });
    // Each index projects what its reader decides on; the readers fetch the items they act on.
    for (const index of LEDGER_INDEXES) {
      table.addGlobalSecondaryIndex({
        ...projection(index),
        indexName: index.name,
        partitionKey: attribute(index.partitionKey),
        sortKey: attribute(index.sortKey),
      });
    }
    this.table = table;
  }

  /**
   * Allow `DeleteItem` on the read-tool cache items only (`pk` starting with `tool-ledger/read#`): the
   * read path (Powertools idempotency) deletes its record when a read fails. Ledger operations are
   * never deleted, and this condition makes that a property of IAM, not only of the code.
   */
  grantReadCacheDelete(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['dynamodb:DeleteItem'],
        resources: [this.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${READ_CACHE_KEY_PREFIX}*`] } },
      }),
    );
  }

  /**
   * Allow exactly these item actions on the table and `Query` on these indexes, plus the use of the
   * table's key through DynamoDB only.
   */
  grant(
    grantee: IGrantable,
    actions: readonly TableAccess[],
    indexes: readonly TableIndex[],
    scannedIndexes: readonly TableIndex[] = [],
  ): void {
    const principal = grantee.grantPrincipal;
    if (actions.length > 0) {
      principal.addToPrincipalPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: actions.map((action) => `dynamodb:${action}`),
          resources: [this.table.tableArn],
        }),
      );
    }
    if (indexes.length > 0) {
      principal.addToPrincipalPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ['dynamodb:Query'],
          resources: indexes.map((index) => `${this.table.tableArn}/index/${index}`),
        }),
      );
    }
    if (scannedIndexes.length > 0) {
      // The reconciler counts the sparse unresolved index after each pass (the open-operations gauge):
      // its cost grows with the unresolved operations, never with the table.
      principal.addToPrincipalPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ['dynamodb:Scan'],
          resources: scannedIndexes.map((index) => `${this.table.tableArn}/index/${index}`),
        }),
      );
    }
    if (this.key === undefined) return;
    principal.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        // Spelled out instead of kms:GenerateDataKey* / kms:ReEncrypt*: no wildcard actions anywhere.
        actions: [
          'kms:Decrypt',
          'kms:DescribeKey',
          'kms:Encrypt',
          'kms:GenerateDataKey',
          'kms:GenerateDataKeyWithoutPlaintext',
          'kms:ReEncryptFrom',
          'kms:ReEncryptTo',
        ],
        resources: [this.key.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(this).region}.amazonaws.com` } },
      }),
    );
  }
}

/** A key attribute of the contract as the CDK declares it. */
function attribute(key: KeyAttribute): { name: string; type: AttributeType } {
  return { name: key.name, type: key.type === 'N' ? AttributeType.NUMBER : AttributeType.STRING };
}

/** An index's projection of the contract as the CDK declares it. */
function projection(index: IndexSchema): Partial<GlobalSecondaryIndexProps> {
  return index.projection.type === 'INCLUDE'
    ? { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: [...index.projection.attributes] }
    : { projectionType: ProjectionType.KEYS_ONLY };
}
