/**
 * The specifier the handlers import the MCP gateway by (functions/wiring.ts). The construct's bundler
 * aliases it to the gateway when the deployment names MCP upstreams and to a stand-in otherwise
 * (lib/bundling.ts), so that the MCP SDK's client and Ajv stay out of every other deployment's
 * bundles; package.json's `imports` maps it to the gateway itself, for local mode and the tests.
 */
export const UPSTREAMS_MODULE_SPECIFIER = '#tool-ledger/upstreams';
