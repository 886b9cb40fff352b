/**
 * The SSE event data that carries a stream's `hook_results`: a chat.completion.chunk with
 * no choices, so SDKs pass over it. Written before `[DONE]`, whether the stream was held
 * for the checks or checked at its tail.
 */
export function hookResultsChunk<Results>(results: Results): { object: 'chat.completion.chunk'; choices: []; hook_results: Results } {
  return { object: 'chat.completion.chunk', choices: [], hook_results: results };
}
