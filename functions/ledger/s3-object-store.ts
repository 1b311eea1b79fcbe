import {
  DeleteObjectCommand,
  GetObjectCommand,
  NoSuchKey,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { PayloadEncoding } from '../domain/payload';
import type { ObjectStore, StoredObject } from '../engine/object-store';

/** Object metadata naming how the body encodes its JSON text (`x-amz-meta-payload-encoding`). */
const ENCODING_METADATA = 'payload-encoding';

/**
 * The {@link ObjectStore} on S3, in one bucket: on AWS the construct's bucket (or the user's), in
 * local mode the S3-compatible emulator on the data folder (functions/local/sqs-server.ts). The
 * encoding travels as object metadata, never as `Content-Encoding`, so that no client or proxy
 * decompresses the body on the way: the ledger checks the bytes it stored.
 *
 * @example
 * ```ts
 * const objects = new S3ObjectStore(new S3Client({}), 'tool-ledger-results');
 * ```
 */
export class S3ObjectStore implements ObjectStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async put(key: string, bytes: Uint8Array, encoding: PayloadEncoding): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: bytes,
        ContentLength: bytes.byteLength,
        ContentType: encoding === 'br' ? 'application/octet-stream' : 'application/json',
        Metadata: { [ENCODING_METADATA]: encoding },
      }),
    );
  }

  async get(key: string): Promise<StoredObject | undefined> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (out.Body === undefined) return undefined;
      const bytes = await out.Body.transformToByteArray();
      const declared = out.Metadata?.[ENCODING_METADATA];
      const object: StoredObject = { bytes };
      if (declared === 'br' || declared === 'identity') object.encoding = declared;
      return object;
    } catch (error) {
      if (error instanceof NoSuchKey || (error as { name?: string }).name === 'NoSuchKey') return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }
}
