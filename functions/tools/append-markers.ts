import { lstat, readdir, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { TerminalToolError, type ToolContext } from '../domain/tool';
import {
  openForRead,
  RESERVED_DIR,
  resolveWorkspaceTarget,
  tenantFolder,
  tenantPath,
  writeFileAtomic,
} from './workspace-path';

/**
 * The markers of `workspace.append_line`: what lets its reconcile answer for an append whose outcome
 * was lost. One file per attempt at `<tenant root>/.tool-ledger/markers/<downstream key>/<attempt>.json`.
 *
 * Keyed by the downstream key, which is derived from the record's `reservation_id`: the markers belong
 * to one reservation. A new operation that reuses an expired operation ID has a new reservation, a new
 * key and so a marker folder of its own; it can never find the old operation's `done` marker and be
 * reported as applied for a line it never appended.
 */

/** One attempt's marker: `intent` is durable before the append starts, `done` replaces it after. */
export interface AppendMarker {
  v: 1;
  state: 'intent' | 'done';
  attempt: number;
  path: string;
  bytes: number;
}

/** Folder of the markers, relative to a tenant's root. */
export const MARKERS_DIR = `${RESERVED_DIR}/markers`;

/** Added to the records' retention before a marker is swept: attempts and clocks are not instant. */
export const MARKER_SWEEP_MARGIN_SECONDS = 86_400;

const KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** A marker's path below the workspace root. */
function markerPath(tenant: string, downstreamKey: string, attempt: number): string {
  // The key is the engine's, not the caller's; still, it becomes a folder name, so check its alphabet.
  if (!KEY_PATTERN.test(downstreamKey) || !Number.isSafeInteger(attempt) || attempt < 0) {
    throw new TerminalToolError('invalid_context', 'the downstream key or attempt cannot name a marker');
  }
  return tenantPath(tenant, `${MARKERS_DIR}/${downstreamKey}/${attempt}.json`);
}

/** Writes (or replaces) this attempt's marker, durably. */
export async function writeMarker(root: string, ctx: ToolContext, marker: AppendMarker): Promise<void> {
  const target = await resolveWorkspaceTarget(root, markerPath(ctx.tenant, ctx.downstreamKey, ctx.attempt), {
    createParents: true,
  });
  if (target === undefined) throw new Error('the marker folder could not be created');
  await writeFileAtomic(target.dir, target.name, Buffer.from(JSON.stringify(marker), 'utf8'));
}

/** Removes this attempt's marker; best effort (an attempt known not applied is never reconciled). */
export async function removeMarker(root: string, ctx: ToolContext): Promise<void> {
  try {
    const target = await resolveWorkspaceTarget(
      root,
      markerPath(ctx.tenant, ctx.downstreamKey, ctx.attempt),
      { createParents: false },
    );
    if (target?.existing !== undefined) await unlink(target.file);
  } catch {
    // A stale intent of an attempt known not applied is harmless.
  }
}

function isMarker(value: unknown): value is AppendMarker {
  const marker = value as Partial<AppendMarker> | null;
  return (
    typeof marker === 'object' &&
    marker !== null &&
    marker.v === 1 &&
    (marker.state === 'intent' || marker.state === 'done') &&
    typeof marker.attempt === 'number' &&
    typeof marker.path === 'string' &&
    typeof marker.bytes === 'number'
  );
}

/** Reads the marker files of one folder, by attempt. Throws when one is unreadable or malformed. */
async function readFolder(dir: string): Promise<Map<number, AppendMarker>> {
  const markers = new Map<number, AppendMarker>();
  for (const entry of await readdir(dir)) {
    const match = /^(\d{1,15})\.json$/.exec(entry);
    if (!match) continue;
    const handle = await openForRead(path.join(dir, entry));
    if (handle === undefined) continue;
    let marker: unknown;
    try {
      marker = JSON.parse(await handle.readFile('utf8'));
    } finally {
      await handle.close();
    }
    if (!isMarker(marker) || marker.attempt !== Number(match[1])) throw new Error('a marker is malformed');
    markers.set(marker.attempt, marker);
  }
  return markers;
}

/** Every marker of one reservation (tenant + downstream key), by attempt; empty when there are none. */
export async function readMarkers(
  root: string,
  tenant: string,
  downstreamKey: string,
): Promise<Map<number, AppendMarker>> {
  const probe = await resolveWorkspaceTarget(root, markerPath(tenant, downstreamKey, 0), {
    createParents: false,
  });
  if (probe === undefined) return new Map();
  return readFolder(probe.dir);
}

/** What one sweep did. */
export interface MarkerSweep {
  /** Marker folders (one per reservation) removed. */
  removed: number;
  /** Folders kept: too young, or their last attempt's outcome was never known. */
  kept: number;
}

/**
 * Removes the markers of one tenant's operations that have ended and whose records have expired.
 *
 * A folder (one reservation) is removed when its newest marker file is older than `retentionSeconds`
 * + {@link MARKER_SWEEP_MARGIN_SECONDS} and its highest attempt's marker is `done`. By then:
 * - a terminal record written after that marker has expired (it expires `retention` after it was
 *   completed, and an attempt completes within its hard deadline of the done marker), so its key can
 *   only ever come back as a new reservation with a key of its own;
 * - a record still being reconciled would find nothing it needs: a `done` marker answers `applied`,
 *   and the reconciler stops asking after its last check, long before.
 *
 * A folder whose highest attempt left only an `intent` (a crash mid-append, an outcome never known) is
 * kept: its record may still be unresolved, and without the intent a shared-workspace reconcile would
 * answer `not_applied` for an append that may have happened. Such folders are few (one per crash); an
 * operator who has resolved the operation may delete them by hand.
 *
 * Best effort: a folder that cannot be read or removed is kept and tried again next time. At most
 * `maxFolders` folders are looked at per call, and none once `signal` has aborted, so a sweep run
 * inside an attempt never outlasts it.
 *
 * @example
 * ```ts
 * await sweepMarkers('.data/workspace', 'acme', { retentionSeconds: 2_592_000, now: Date.now() });
 * ```
 */
export async function sweepMarkers(
  root: string,
  tenant: string,
  options: { retentionSeconds: number; now: number; maxFolders?: number; signal?: AbortSignal },
): Promise<MarkerSweep> {
  const maxFolders = options.maxFolders ?? Number.POSITIVE_INFINITY;
  const sweep: MarkerSweep = { removed: 0, kept: 0 };
  const cutoff = options.now - (options.retentionSeconds + MARKER_SWEEP_MARGIN_SECONDS) * 1000;
  let markersDir: string;
  try {
    const probe = await resolveWorkspaceTarget(root, tenantPath(tenant, `${MARKERS_DIR}/probe`), {
      createParents: false,
    });
    if (probe === undefined) return sweep;
    markersDir = probe.dir;
  } catch {
    return sweep;
  }
  let keys: string[];
  try {
    keys = await readdir(markersDir);
  } catch {
    return sweep;
  }
  for (const key of keys) {
    if (sweep.removed + sweep.kept >= maxFolders || options.signal?.aborted) break;
    if (!KEY_PATTERN.test(key)) continue;
    const dir = path.join(markersDir, key);
    try {
      const stats = await lstat(dir);
      if (!stats.isDirectory()) continue;
      const files = (await readdir(dir)).filter((entry) => /^\d{1,15}\.json$/.test(entry));
      let newest = 0;
      for (const file of files) newest = Math.max(newest, (await lstat(path.join(dir, file))).mtimeMs);
      const markers = await readFolder(dir);
      const last = Math.max(-1, ...markers.keys());
      if (files.length === 0 || newest >= cutoff || markers.get(last)?.state !== 'done') {
        sweep.kept += 1;
        continue;
      }
      // Every file of the folder goes, stray temp files of an interrupted marker write included.
      for (const entry of await readdir(dir)) await unlink(path.join(dir, entry));
      await rmdir(dir);
      sweep.removed += 1;
    } catch {
      sweep.kept += 1;
    }
  }
  return sweep;
}

/** The folder of a tenant's markers below the workspace root (for tests and operators). */
export function markersFolder(root: string, tenant: string, downstreamKey: string): string {
  return path.join(root, tenantFolder(tenant), MARKERS_DIR, downstreamKey);
}
