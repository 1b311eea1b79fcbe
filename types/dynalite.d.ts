/** dynalite ships no types; this is the small surface tool-ledger uses. */
declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    ssl?: boolean;
  }
  function dynalite(options?: DynaliteOptions): Server;
  export default dynalite;
}
