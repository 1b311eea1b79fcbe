import { startDynalite } from '../../support/dynalite';
import { deadPort, HookServer } from './hook-server';
import type { SharedEnv } from './world';

/** Starts what every schedule of a suite shares: dynalite and the two counting webhook servers. */
export async function startSharedEnv(): Promise<{ env: SharedEnv; stop: () => Promise<void> }> {
  const db = await startDynalite();
  const plainHook = await HookServer.start(false);
  const idemHook = await HookServer.start(true);
  const env: SharedEnv = {
    endpoint: db.endpoint,
    admin: db.client,
    plainHook,
    idemHook,
    deadOrigin: `http://127.0.0.1:${await deadPort()}`,
  };
  return {
    env,
    async stop() {
      await plainHook.close();
      await idemHook.close();
      await db.stop();
    },
  };
}
