// A request's headers and bodies, kept for the request log only when the operator asks for
// it (serve --log-bodies; proxy/logs/exchange-capture.ts captures them). Off, nothing is ever
// attached and the finish point's one WeakMap lookup finds nothing.
//
// Held beside the request's context rather than in it: the context stays as it is, and the
// captured bytes go when the request does.

/** A body as kept: UTF-8 text of at most the cap, with the size it really had. */
export interface CapturedBody {
  readonly text: string;
  /** Bytes seen (for a stream: relayed) in all, which may exceed what `text` holds. */
  readonly bytes: number;
  readonly truncated: boolean;
}

export interface RequestExchange {
  /** Header name → value, credentials replaced by "[redacted]". */
  readonly requestHeaders: Readonly<Record<string, string>>;
  readonly requestBody: CapturedBody | undefined;
  responseHeaders: Readonly<Record<string, string>>;
  /** Filled as the answer goes out; complete once the response has closed. */
  responseBody: CapturedBody | undefined;
}

const exchanges = new WeakMap<object, RequestExchange>();
// Capture off (the default), the lookup is one boolean test.
let attachedAny = false;

/** Keeps `exchange` with the request whose context is `context`. */
export function attachExchange(context: object, exchange: RequestExchange): void {
  attachedAny = true;
  exchanges.set(context, exchange);
}

/** The exchange captured for a request, if capture is on. */
export function exchangeOf(context: object): RequestExchange | undefined {
  return attachedAny ? exchanges.get(context) : undefined;
}
