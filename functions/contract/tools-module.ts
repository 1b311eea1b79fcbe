/**
 * The specifier the handlers import their tools by. The construct's bundler aliases it to the
 * deployment's tools module (lib/bundling.ts); local mode resolves it to `TOOL_LEDGER_TOOLS_MODULE`
 * (functions/local/tools-module.ts); package.json's `imports` maps it to the shipped tools.
 */
export const TOOLS_MODULE_SPECIFIER = '#tool-ledger/tools';
