// The shared yardstick's request body (its body.json / body-stream.json), byte for byte:
// parsing, the duplicate-key scan and validation cost by the byte.
export const harnessChatBody = (stream: boolean): Buffer =>
  Buffer.from(
    JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'Summarise the benefits of connection pooling in HTTP proxies in two sentences, please, for a benchmark request body.' },
      ],
      temperature: 0.2,
      max_tokens: 128,
      ...(stream ? { stream: true } : {}),
    }),
  );
