import { Logger } from '@aws-lambda-powertools/logger';

/**
 * The one Powertools logger of a process. Everything that writes a log line goes through it, so the
 * service name, level and sampling are configured in one place (POWERTOOLS_* environment).
 */
export const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'tool-ledger' });
