// Small building blocks shared by the routing-config schemas (kept apart so the
// config and hook schemas can both import them without an import cycle).
import { z } from 'zod';

/** A string that carries meaning: ids, names, credentials. Empty strings are mistakes (e.g. an unset `${ENV}`). */
export const NonEmptyStringSchema = z.string().min(1);

/** A plain JSON object with any keys (override_params, check parameters, query filters, metadata). */
export const PlainObjectSchema = z.record(z.string(), z.unknown());

/** An HTTP status code as used in retry, fallback and circuit-breaker lists. */
export const StatusCodeSchema = z.int().min(100).max(599);

export const StatusCodeListSchema = z.array(StatusCodeSchema);
