/** A request about to be sent, as a signer sees it. */
export interface SignableRequest {
  method: string;
  url: URL;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** The exact bytes that will be sent (the client serializes once, before the first attempt). */
  body?: string;
}

/**
 * Adds authentication to a request. Called once per attempt, because signatures carry a time and
 * tokens may be refreshed; it must not change the body. Returns the headers to send.
 */
export interface RequestSigner {
  sign(request: SignableRequest): Promise<Record<string, string>>;
}

/**
 * Bearer-token authentication, as local mode uses (`TOOL_LEDGER_TOKENS`). Pass a function to fetch
 * a fresh token per attempt.
 *
 * @example
 * ```ts
 * new ToolLedgerClient({ endpoint: 'http://127.0.0.1:3000', signer: bearerToken(process.env.TOKEN!) });
 * ```
 */
export function bearerToken(token: string | (() => string | Promise<string>)): RequestSigner {
  return {
    async sign(request) {
      const value = typeof token === 'function' ? await token() : token;
      return { ...request.headers, authorization: `Bearer ${value}` };
    },
  };
}
