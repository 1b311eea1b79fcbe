import { PayloadTooLargeError, ValidationError } from './errors';

/** Keys that name JavaScript prototype machinery. Never legitimate in a tool call, refused anywhere. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Limits applied while scanning JSON text, before `JSON.parse` sees it. */
export interface JsonTextLimits {
  /** Deepest nesting of objects and arrays allowed in the whole text. */
  maxDepth: number;
  /** Largest UTF-8 size in bytes. */
  maxBytes: number;
}

/**
 * Parses JSON text as I-JSON (RFC 7493): refuses duplicate keys, lone surrogates, numbers that do not
 * fit a double (`1e999`), `-0`, prototype-machinery keys, and nesting beyond `maxDepth`. The scan is
 * iterative, so hostile nesting cannot overflow the stack; only then does `JSON.parse` build the value.
 *
 * @example
 * ```ts
 * parseIJson('{"a":1}', { maxDepth: 40, maxBytes: 262144 }); // { a: 1 }
 * parseIJson('{"a":1,"a":2}', limits);                        // throws validation_failed
 * ```
 */
export function parseIJson(text: string, limits: JsonTextLimits): unknown {
  if (Buffer.byteLength(text, 'utf8') > limits.maxBytes) {
    throw new PayloadTooLargeError(`the JSON body is larger than ${limits.maxBytes} bytes`);
  }
  scanStructure(text, limits.maxDepth);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ValidationError('the body is not valid JSON');
  }
  assertIJsonValue(value, limits.maxDepth);
  return value;
}

/**
 * Checks an already-parsed value is I-JSON: finite numbers other than -0, well-formed strings,
 * no forbidden keys, plain objects and arrays only, depth at most `maxDepth`.
 */
export function assertIJsonValue(value: unknown, maxDepth: number, path = '$'): void {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path, depth: 0 }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    const v = item.value;
    if (v === null || typeof v === 'boolean') continue;
    if (typeof v === 'string') {
      if (!v.isWellFormed())
        throw new ValidationError('a string contains a lone surrogate', [issue(item.path)]);
      continue;
    }
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new ValidationError('a number is not finite', [issue(item.path)]);
      if (Object.is(v, -0)) throw new ValidationError('-0 is not allowed in I-JSON', [issue(item.path)]);
      continue;
    }
    if (typeof v !== 'object') {
      throw new ValidationError('a value is not JSON', [issue(item.path)]);
    }
    const depth = item.depth + 1;
    if (depth > maxDepth)
      throw new ValidationError(`nesting deeper than ${maxDepth} levels`, [issue(item.path)]);
    if (Array.isArray(v)) {
      v.forEach((child, i) => {
        stack.push({ value: child, path: `${item.path}[${i}]`, depth });
      });
      continue;
    }
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) {
      throw new ValidationError('a value is not a plain JSON object', [issue(item.path)]);
    }
    for (const key of Object.keys(v)) {
      if (!key.isWellFormed())
        throw new ValidationError('a key contains a lone surrogate', [issue(item.path)]);
      if (FORBIDDEN_KEYS.has(key))
        throw new ValidationError('a key names prototype machinery', [issue(item.path)]);
      stack.push({ value: (v as Record<string, unknown>)[key], path: `${item.path}.${safeKey(key)}`, depth });
    }
  }
}

function issue(path: string): { path: string; message: string } {
  return { path, message: 'not I-JSON' };
}

/** Keys may be arguments too; paths show at most a short, printable prefix. */
function safeKey(key: string): string {
  return /^[A-Za-z0-9_-]{1,40}$/.test(key) ? key : '<key>';
}

/**
 * One pass over the text that tracks nesting and object keys, without recursion. It rejects
 * duplicate keys and excessive depth; everything else about syntax is left to `JSON.parse`.
 */
function scanStructure(text: string, maxDepth: number): void {
  // Each open object remembers its keys; arrays push null.
  const frames: (Set<string> | null)[] = [];
  let expectKey = false;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const end = stringEnd(text, i);
      const frame = frames[frames.length - 1];
      if (expectKey && frame) {
        let key: string;
        try {
          key = JSON.parse(text.slice(i, end + 1)) as string;
        } catch {
          throw new ValidationError('the body is not valid JSON');
        }
        if (frame.has(key)) throw new ValidationError('duplicate key in a JSON object (not I-JSON)');
        frame.add(key);
        expectKey = false;
      }
      i = end + 1;
      continue;
    }
    if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
      frames.push(ch === 0x7b ? new Set() : null);
      if (frames.length > maxDepth) throw new ValidationError(`nesting deeper than ${maxDepth} levels`);
      expectKey = ch === 0x7b;
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      frames.pop();
      expectKey = false;
    } else if (ch === 0x2c /* , */) {
      expectKey = frames[frames.length - 1] instanceof Set;
    }
    i++;
  }
}

/** Index of the closing quote of the string that starts at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const ch = text.charCodeAt(i);
    if (ch === 0x5c /* \ */) {
      i += 2;
      continue;
    }
    if (ch === 0x22) return i;
    i++;
  }
  throw new ValidationError('the body is not valid JSON');
}
