import { en } from 'zod/locales';
import { config, safeParse } from 'zod/v4/core';

/**
 * Validation through any zod schema, classic (`zod`) or mini (`zod/mini`): the project's own schemas
 * use zod's smaller entry, which keeps every handler's bundle and cold start smaller, while a tool
 * author's schema may be built with either. zod/mini loads no messages of its own; the English ones
 * are set here, once, for every schema (classic zod sets the same when it is loaded).
 */
config(en());

/**
 * Parses a value with a schema without throwing: zod's `safeParse` for any kind of zod schema.
 *
 * @example
 * ```ts
 * const parsed = checkWithSchema(tool.schema, rawArgs);
 * if (!parsed.success) console.log(parsed.error.issues);
 * ```
 */
export const checkWithSchema = safeParse;
