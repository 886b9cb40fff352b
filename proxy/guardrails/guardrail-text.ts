// The text guardrail checks look at, and the rewriting mutators do. A request's text is
// what the caller sent (chat message contents and text parts, a completions prompt, an
// embeddings input, a Responses input and instructions); an answer's text is what the
// model said (chat choices' message content, completion choices' text, Responses
// output_text parts). Token-array prompts, images, audio and tool calls carry no text.
//
// Rewrites never touch the caller's object: only the containers on the path to a
// changed string are copied, and an unchanged body comes back as the same reference.

import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';

/** Turns one piece of text into its replacement (return the argument to keep it). */
export type TextRewrite = (text: string) => string;

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Rewrites the strings of an array (or a lone string); the same reference when unchanged. */
function rewriteStrings(value: unknown, rewrite: TextRewrite): unknown {
  if (typeof value === 'string') return rewrite(value);
  if (!Array.isArray(value)) return value;
  return rewriteArray(value, (item) => (typeof item === 'string' ? rewrite(item) : item));
}

function rewriteArray(items: readonly unknown[], rewriteItem: (item: unknown) => unknown): unknown[] {
  let copy: unknown[] | undefined;
  items.forEach((item, index) => {
    const next = rewriteItem(item);
    if (next !== item) {
      copy ??= items.slice();
      copy[index] = next;
    }
  });
  return copy ?? (items as unknown[]);
}

function withField<T extends Json>(object: T, key: string, value: unknown): T {
  return value === object[key] ? object : { ...object, [key]: value };
}

/** Message content: a string, or parts of which `text` / `input_text` / `output_text` carry text. */
function rewriteContent(content: unknown, rewrite: TextRewrite): unknown {
  if (typeof content === 'string') return rewrite(content);
  if (!Array.isArray(content)) return content;
  return rewriteArray(content, (part) => {
    if (!isObject(part) || typeof part['text'] !== 'string') return part;
    const type = part['type'];
    if (type !== 'text' && type !== 'input_text' && type !== 'output_text') return part;
    return withField(part, 'text', rewrite(part['text']));
  });
}

function rewriteMessages(messages: unknown, rewrite: TextRewrite): unknown {
  if (!Array.isArray(messages)) return messages;
  return rewriteArray(messages, (message) =>
    isObject(message) && 'content' in message ? withField(message, 'content', rewriteContent(message['content'], rewrite)) : message,
  );
}

/** Responses `input`: a string, or items of which messages (with or without `type`) carry text. */
function rewriteResponsesInput(input: unknown, rewrite: TextRewrite): unknown {
  if (typeof input === 'string') return rewrite(input);
  if (!Array.isArray(input)) return input;
  return rewriteArray(input, (item) => {
    if (!isObject(item) || (item['type'] !== undefined && item['type'] !== 'message')) return item;
    return 'content' in item ? withField(item, 'content', rewriteContent(item['content'], rewrite)) : item;
  });
}

/**
 * Applies `rewrite` to every text of a request body; returns the same object when
 * nothing changed.
 *
 * @example
 * mapRequestText('completions', { model: 'm', prompt: 'hi' }, (t) => t.toUpperCase()) // → { model: 'm', prompt: 'HI' }
 */
export function mapRequestText<T extends Json>(endpoint: InferenceEndpoint, body: T, rewrite: TextRewrite): T {
  switch (endpoint) {
    case 'chat.completions':
      return withField(body, 'messages', rewriteMessages(body['messages'], rewrite));
    case 'completions':
      return withField(body, 'prompt', rewriteStrings(body['prompt'], rewrite));
    case 'embeddings':
      return withField(body, 'input', rewriteStrings(body['input'], rewrite));
    case 'responses': {
      const instructions = body['instructions'];
      const next = typeof instructions === 'string' ? withField(body, 'instructions', rewrite(instructions)) : body;
      return withField(next, 'input', rewriteResponsesInput(body['input'], rewrite));
    }
    case 'messages':
    case 'messages.count_tokens': {
      // Anthropic Messages: a top-level system (string or text blocks) and user/assistant turns.
      const next = 'system' in body ? withField(body, 'system', rewriteContent(body['system'], rewrite)) : body;
      return withField(next, 'messages', rewriteMessages(body['messages'], rewrite));
    }
  }
}

function rewriteChoices(choices: unknown, rewriteChoice: (choice: Json) => Json): unknown {
  if (!Array.isArray(choices)) return choices;
  return rewriteArray(choices, (choice) => (isObject(choice) ? rewriteChoice(choice) : choice));
}

/**
 * Applies `rewrite` to every text of an OpenAI-shaped answer; returns the same value when
 * nothing changed (embeddings answers, errors and unknown shapes are left alone).
 */
export function mapResponseText(endpoint: InferenceEndpoint, body: unknown, rewrite: TextRewrite): unknown {
  if (!isObject(body)) return body;
  switch (endpoint) {
    case 'chat.completions':
      return withField(
        body,
        'choices',
        rewriteChoices(body['choices'], (choice) => {
          const message = choice['message'];
          if (!isObject(message)) return choice;
          return withField(choice, 'message', withField(message, 'content', rewriteContent(message['content'], rewrite)));
        }),
      );
    case 'completions':
      return withField(
        body,
        'choices',
        rewriteChoices(body['choices'], (choice) =>
          typeof choice['text'] === 'string' ? withField(choice, 'text', rewrite(choice['text'])) : choice,
        ),
      );
    case 'responses': {
      const output = body['output'];
      if (!Array.isArray(output)) return body;
      const next = rewriteArray(output, (item) =>
        isObject(item) && item['type'] === 'message' ? withField(item, 'content', rewriteContent(item['content'], rewrite)) : item,
      );
      return withField(body, 'output', next);
    }
    case 'messages':
      // An Anthropic Message: its text blocks.
      return withField(body, 'content', rewriteContent(body['content'], rewrite));
    case 'embeddings':
    case 'messages.count_tokens':
      return body;
  }
}

/** Collects texts by running a rewrite that records and keeps each one. */
function collect(walk: (rewrite: TextRewrite) => unknown): string[] {
  const texts: string[] = [];
  walk((text) => {
    texts.push(text);
    return text;
  });
  return texts;
}

/** The request's texts, in body order. */
export function requestTexts(endpoint: InferenceEndpoint, body: Json): string[] {
  return collect((rewrite) => mapRequestText(endpoint, body, rewrite));
}

/** The answer's texts, in body order. */
export function responseTexts(endpoint: InferenceEndpoint, body: unknown): string[] {
  return collect((rewrite) => mapResponseText(endpoint, body, rewrite));
}

/** The request's text as checks see it: its texts joined by newlines. */
export function requestText(endpoint: InferenceEndpoint, body: Json): string {
  return requestTexts(endpoint, body).join('\n');
}

/** The answer's text as checks see it: its texts joined by newlines. */
export function responseText(endpoint: InferenceEndpoint, body: unknown): string {
  return responseTexts(endpoint, body).join('\n');
}
