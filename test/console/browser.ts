import chromium from '@sparticuz/chromium';
import { type Browser, chromium as playwright } from 'playwright-core';

/**
 * Headless Chromium for the console's browser tests, with no download: the Chromium that
 * `@sparticuz/chromium` ships inside the npm package (unpacked to the temp folder on first use), or
 * the one `TOOL_LEDGER_CHROMIUM` names (e.g. Debian's `/usr/bin/chromium`).
 *
 * @example
 * ```ts
 * const browser = await launchChromium();
 * const page = await browser.newPage();
 * ```
 */
export async function launchChromium(): Promise<Browser> {
  const override = process.env.TOOL_LEDGER_CHROMIUM;
  if (override) {
    return playwright.launch({ executablePath: override, args: ['--no-sandbox'], headless: true });
  }
  const args = chromium.args.filter((arg) => !UNWANTED.has(arg));
  return playwright.launch({ executablePath: await chromium.executablePath(), args, headless: true });
}

/**
 * Flags of the package's Lambda-oriented defaults that would falsify these tests: without web
 * security there is no same-origin policy to test against, and in one process the browser ends with
 * its last page.
 */
const UNWANTED = new Set(['--disable-web-security', '--allow-running-insecure-content', '--single-process']);
