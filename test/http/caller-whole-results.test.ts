import { randomBytes } from 'node:crypto';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/ledger/s3-object-store';
import { localS3Client } from '../../functions/local/sqs-server';
import { useDynalite } from '../support/dynalite';
import {
  type CallerApi,
  callerApi,
  claimOf,
  claimRequest,
  postTo,
  readRequest,
  useFauxqs,
} from './caller-support';

/**
 * An operation its caller executes keeps its whole result by the same rule as one the ledger runs: a
 * large outcome or verdict (its body up to 6 MB + 64 KiB, where every other route takes 256 KiB) is
 * stored in the object store before its commit, and every answer carries it whole.
 */

const db = useDynalite();
const fauxqs = useFauxqs();
const BUCKET = 'caller-results';
let api: CallerApi;

beforeAll(async () => {
  const s3 = localS3Client(fauxqs.sqs.endpoint);
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  s3.destroy();
});

beforeEach(async () => {
  api = await callerApi(db, fauxqs);
  api.ledger.deps.objects = new S3ObjectStore(localS3Client(fauxqs.sqs.endpoint), BUCKET);
});

describe('whole results of caller-executed operations', () => {
  it('a 2 MB outcome posted by the caller is answered whole, to the post, a read and a repeated post', async () => {
    const result = { page: randomBytes(1_500_000).toString('base64') };
    const claim = claimOf(await api.call(claimRequest('cw-1')));
    const body = { token: claim.token, outcome: 'succeeded', result };
    const first = await api.call(postTo('cw-1', 'outcome', body));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ state: 'succeeded', result });
    const stored = await api.ledger.store.get({ pk: 'acme#cw-1', sk: 'op' });
    expect(stored?.result).toBeUndefined();
    expect(stored?.result_ref?.at).toBe('object');
    const again = await api.call(postTo('cw-1', 'outcome', body));
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const read = await api.call(readRequest('cw-1'));
    expect(JSON.stringify(read.body.result)).toBe(JSON.stringify(result));
  });

  it('an applied verdict carrying a 1 MB result is answered whole and replayed', async () => {
    const result = { log: randomBytes(750_000).toString('base64') };
    const claim = claimOf(await api.call(claimRequest('cw-2')));
    const unsure = await api.call(postTo('cw-2', 'outcome', { token: claim.token, outcome: 'uncertain' }));
    expect(unsure.body).toMatchObject({ state: 'uncertain' });
    const decided = await api.call(
      postTo('cw-2', 'reconciliation', { attempt: 1, verdict: 'applied', result }),
    );
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ state: 'succeeded', reconciled: true });
    const stored = await api.ledger.store.get({ pk: 'acme#cw-2', sk: 'op' });
    expect(stored?.result_ref?.at).toBe('object');
    const read = await api.call(readRequest('cw-2'));
    expect(JSON.stringify(read.body.result)).toBe(JSON.stringify(result));
  });

  it('an outcome body over 6 MB + 64 KiB is 413 and changes nothing; other routes still stop at 256 KiB', async () => {
    const claim = claimOf(await api.call(claimRequest('cw-3')));
    const huge = { token: claim.token, outcome: 'succeeded', result: { blob: 'x'.repeat(6_100_000) } };
    const refused = await api.call(postTo('cw-3', 'outcome', huge));
    expect(refused.status).toBe(413);
    expect(refused.body).toMatchObject({ code: 'payload_too_large' });
    const stored = await api.ledger.store.get({ pk: 'acme#cw-3', sk: 'op' });
    expect(stored?.state).toBe('pending');
    expect(stored?.result).toBeUndefined();
    const lease = await api.call(postTo('cw-3', 'lease', { token: claim.token, pad: 'x'.repeat(300_000) }));
    expect(lease.status).toBe(413);
  });
});
