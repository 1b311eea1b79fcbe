/**
 * The ledger table as both sides know it: key attributes, the two sparse GSIs with what each projects,
 * the TTL attribute, the sort keys of the item kinds and the read cache's key prefix. The construct
 * (lib/ledger-table.ts) declares the table and its grants from this; the DynamoDB adapter
 * (functions/ledger/) writes and queries by it; local mode and the tests create their tables from it
 * (functions/ledger/table.ts). Pure data: no SDK, no CDK.
 */

/** DynamoDB's key attribute types, as both CloudFormation and the SDK spell them. */
export type KeyType = 'S' | 'N';

/** One key attribute. */
export interface KeyAttribute {
  readonly name: string;
  readonly type: KeyType;
}

/** One global secondary index. */
export interface IndexSchema {
  readonly name: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey: KeyAttribute;
  /** `KEYS_ONLY`, or `INCLUDE` with the non-key attributes it carries. */
  readonly projection:
    | { readonly type: 'KEYS_ONLY' }
    | { readonly type: 'INCLUDE'; readonly attributes: readonly string[] };
}

/**
 * Non-key attributes the `unresolved` index projects: the state the listing filters on and the
 * `attention_at` a tenant's own reconcile pass filters on. Everything else (arguments, result,
 * history) stays out of the index, so an index write is one unit whatever the item's size, and
 * updates that touch nothing projected (a lease extension) write no index at all.
 */
export const UNRESOLVED_PROJECTION: readonly string[] = ['state', 'attention_at'];

/**
 * The table. Every operation is one item keyed `pk = <tenant>#<operation ID>`, `sk = op`; read-tool
 * cache items share the table under `sk = read`. Both indexes are sparse: a record carries their keys
 * only while it is unresolved, so their cost grows with the unresolved operations, never with the table.
 */
export const LEDGER_TABLE = {
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  /** Epoch seconds; only terminal records and read-cache items carry it (DynamoDB TTL). */
  ttlAttribute: 'expires_at',
  indexes: {
    /** The reconciler's view (the contract, §7): sharded over the deployment, keys only (it reads what it acts on). */
    attention: {
      name: 'attention',
      partitionKey: { name: 'attention_shard', type: 'S' },
      sortKey: { name: 'attention_at', type: 'N' },
      projection: { type: 'KEYS_ONLY' },
    },
    /** The operators' listing (the contract, §5): per tenant, newest first, filtered on the state it projects. */
    unresolved: {
      name: 'unresolved',
      partitionKey: { name: 'unresolved_tenant', type: 'S' },
      sortKey: { name: 'unresolved_at', type: 'N' },
      projection: { type: 'INCLUDE', attributes: UNRESOLVED_PROJECTION },
    },
  },
} as const satisfies {
  partitionKey: KeyAttribute;
  sortKey: KeyAttribute;
  ttlAttribute: string;
  indexes: Record<string, IndexSchema>;
};

/** Which GSI (by its key in {@link LEDGER_TABLE}.indexes, which is also its name). */
export type LedgerIndex = keyof typeof LEDGER_TABLE.indexes;

/** Every GSI, in the order the table declares them. */
export const LEDGER_INDEXES: readonly IndexSchema[] = Object.values(LEDGER_TABLE.indexes);

/** Sort key value of an operation item. */
export const OPERATION_SK = 'op';

/** Sort key value of a read-tool cache item (functions/ledger/read-cache.ts). */
export const READ_SK = 'read';

/**
 * The partition keys the ledger keeps for itself (the read cache, the per-tenant request counters)
 * start with this. It holds `/`, which the tenant alphabet ({@link TENANT_PATTERN}) does not, so no
 * tenant's operation key (`<tenant>#<operation ID>`) can ever start with it: IAM conditions on these
 * prefixes (the read cache's `DeleteItem`) can never reach a tenant's records, whatever it is named.
 */
export const OWN_KEY_NAMESPACE = 'tool-ledger/';

/**
 * The read cache's key prefix: Powertools writes `pk = tool-ledger/read#<hash>`. Fixed, so that every
 * Lambda of a deployment shares one cache; IAM lets handlers delete items under this prefix only.
 * (Until this release it was `tool-ledger.read`, which a tenant could be named: the old items are
 * simply no longer read and expire with their TTL.)
 */
export const READ_KEY_PREFIX = `${OWN_KEY_NAMESPACE}read`;

/** Per-tenant request counters: `pk = tool-ledger/limit#<tenant>`, `sk` = the epoch second counted. */
export const LIMIT_KEY_PREFIX = `${OWN_KEY_NAMESPACE}limit`;

/** The leading part of every read-cache item's partition key (what IAM's `LeadingKeys` condition names). */
export const READ_CACHE_KEY_PREFIX = `${READ_KEY_PREFIX}#`;

/**
 * Tenant labels: from configuration, never from a body. A conservative alphabet without `#`, the
 * separator of the partition key's parts, so two tenants can never share an item. The construct checks
 * its `tenants` prop against the same pattern at synth.
 */
export const TENANT_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The format of the operation records this code writes (`record_format` on every item it reserves).
 * A reader refuses a record of a later format than it knows (code rolled back over records written by
 * a newer release) rather than misread it; a record without the attribute is format 1. Raise it with
 * any change to what a record means, together with a reader of the older formats.
 */
export const RECORD_FORMAT = 1;

/**
 * The ledger's identity item: written when the deployment is created (or when this release is first
 * deployed over an existing table), and required by every later deploy, so a table replaced by an
 * empty one fails the deploy instead of silently starting an empty ledger (lib/ledger-identity.ts).
 */
export const IDENTITY_KEY = { pk: `${OWN_KEY_NAMESPACE}identity`, sk: 'identity' } as const;
