/**
 * A scene of the demo: one agent and one fault, played with tool-ledger and without it, measured where
 * the effects land. `npm run demo` plays the main script first, then each scene of `main.ts`'s list in
 * turn, prints each scene's table, and fails if any scene's ledger run shows a problem. A scene starts
 * and stops everything it needs, so scenes can be added, removed or run alone.
 */

/** What a scene is given. */
export interface SceneContext {
  /** A temp folder of the demo's; the scene makes its own folders inside it. */
  root: string;
  /** Progress for people: `run` names the side (`tool-ledger`, `bypass`, with the scene's prefix). */
  say(run: string, line: string): void;
}

/** What a scene measured. */
export interface SceneReport {
  /** The two runs side by side, as text. */
  table: string;
  /** One sentence with the figures that matter. */
  summary: string;
  /** Why the ledger run is wrong, if it is; empty when it held. */
  problems: string[];
}

/** One scene. */
export interface DemoScene {
  /** Short, for progress lines and the table's heading. */
  name: string;
  run(context: SceneContext): Promise<SceneReport>;
}
