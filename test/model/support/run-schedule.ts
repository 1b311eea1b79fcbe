import { coverage } from './coverage';
import { violations } from './invariants';
import { quiesce } from './quiesce';
import type { Schedule } from './schedule';
import { traceUnseen } from './trace-file';
import { replaySchedule } from './trace-replay';
import { type SharedEnv, World, type WorldOptions } from './world';

/**
 * Runs one schedule end to end: builds its world, runs its groups, drives it to quiescence, checks
 * every invariant, replays its transition lines against the model (`trace-replay.ts`) and cleans up.
 * Throws one error listing every violation and every line the model does not allow, so fast-check
 * reports the schedule (with its seed and path) and shrinks it.
 */
export async function runSchedule(
  env: SharedEnv,
  schedule: Schedule,
  options: WorldOptions = {},
): Promise<World> {
  const world = await World.create(env, schedule, options);
  try {
    for (const group of schedule.groups) await world.run(group);
    const end = await quiesce(world);
    coverage.schedules += 1;
    coverage.operations += world.ops.length;
    coverage.maxRounds = Math.max(coverage.maxRounds, end.rounds);
    const found = await violations(env, world, end);
    found.push(...replaySchedule(world.logs, (line) => world.keyOf(line), world.unseenWrites));
    traceUnseen(world.table, world.unseenWrites);
    if (found.length > 0) throw new Error(`invariants violated:\n- ${found.join('\n- ')}`);
    return world;
  } finally {
    await world.dispose();
  }
}
