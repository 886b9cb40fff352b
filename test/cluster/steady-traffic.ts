// Steady traffic through the proxy Service while the suite changes or disrupts things: a few
// workers, each sending chat completions back to back (keep-alive connections, as real
// clients do) at a bounded rate, counting every answer that is not a 200 from the mock.
import { Agent, request } from 'undici';

export interface TrafficReport {
  /** Requests answered (or failed) in the phase. */
  readonly sent: number;
  readonly ok: number;
  readonly failed: number;
  /** A few failures, for the assertion message. */
  readonly samples: readonly string[];
  readonly seconds: number;
}

export interface SteadyTraffic {
  /** Counts so far, and resets them (one report per phase). */
  take(): TrafficReport;
  stop(): Promise<TrafficReport>;
}

export interface SteadyTrafficOptions {
  readonly origin: string;
  readonly headers: Record<string, string>;
  /** The answer's content must contain this. */
  readonly expect: string;
  readonly workers?: number;
  /** Pause between two requests of one worker. */
  readonly pauseMs?: number;
}

export function startSteadyTraffic(options: SteadyTrafficOptions): SteadyTraffic {
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: 16 });
  let stopped = false;
  let counts = { sent: 0, ok: 0, failed: 0, samples: [] as string[], since: Date.now() };
  const body = JSON.stringify({ model: 'steady', messages: [{ role: 'user', content: 'ping' }] });

  const fail = (message: string): void => {
    counts.sent += 1;
    counts.failed += 1;
    if (counts.samples.length < 5) counts.samples.push(`${new Date().toISOString()} ${message}`);
  };

  const worker = async (): Promise<void> => {
    while (!stopped) {
      try {
        const response = await request(`${options.origin}/v1/chat/completions`, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', ...options.headers },
          body,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        const text = await response.body.text();
        if (response.statusCode === 200 && text.includes(options.expect)) {
          counts.sent += 1;
          counts.ok += 1;
        } else fail(`HTTP ${response.statusCode} ${text.slice(0, 200)}`);
      } catch (error) {
        fail(`${(error as Error).name}: ${(error as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, options.pauseMs ?? 50));
    }
  };

  const running = Array.from({ length: options.workers ?? 4 }, () => worker());
  const take = (): TrafficReport => {
    const report = { sent: counts.sent, ok: counts.ok, failed: counts.failed, samples: counts.samples, seconds: (Date.now() - counts.since) / 1000 };
    counts = { sent: 0, ok: 0, failed: 0, samples: [], since: Date.now() };
    return report;
  };
  return {
    take,
    async stop() {
      stopped = true;
      await Promise.all(running);
      await agent.close();
      return take();
    },
  };
}
