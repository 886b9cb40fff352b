// The query compiler lives on the state floor (config/conditional-query.ts), beside the plan
// compiler that uses it. Re-exported here for callers that import it from routing/.
export { compileQuery, type QueryInput, type QueryPredicate } from '../config/conditional-query.ts';
