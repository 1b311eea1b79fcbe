import type { ToolFactory } from '../../functions/tools/registry';
import { benchWriteTool, EffectLog } from './bench-tools';

/**
 * The tools module local mode loads for the throughput row (`TOOL_LEDGER_TOOLS_MODULE`): the
 * benchmark's trivial in-memory write tool, so that the row measures the ledger over HTTP, not a
 * file system or a webhook target.
 */
const tools: ToolFactory = () => [benchWriteTool(new EffectLog())];

export default tools;
