import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileQuery, type QueryInput } from '../../../proxy/config/conditional-query.ts';
import { QueryCompileError } from '../../../proxy/errors.ts';

const input: QueryInput = {
  metadata: { plan: 'pro', tier: 3, tags: ['a', 'b'], region: 'eu-west-1' },
  params: { model: 'gpt-4o', temperature: 0.2, messages: [{ role: 'system', content: 'x' }], stream: true },
  url: { pathname: '/v1/chat/completions' },
};

const CASES: ReadonlyArray<readonly [string, unknown, boolean]> = [
  ['plain value is $eq', { 'metadata.plan': 'pro' }, true],
  ['plain value mismatch', { 'metadata.plan': 'free' }, false],
  ['$eq', { 'params.model': { $eq: 'gpt-4o' } }, true],
  ['$ne', { 'params.model': { $ne: 'gpt-4o' } }, false],
  ['$ne on a missing key', { 'metadata.absent': { $ne: 'x' } }, true],
  ['$gt', { 'metadata.tier': { $gt: 2 } }, true],
  ['$gt false', { 'metadata.tier': { $gt: 3 } }, false],
  ['$gte', { 'metadata.tier': { $gte: 3 } }, true],
  ['$lt', { 'params.temperature': { $lt: 0.5 } }, true],
  ['$lte', { 'params.temperature': { $lte: 0.1 } }, false],
  ['$gt never matches across types', { 'metadata.plan': { $gt: 1 } }, false],
  ['$in', { 'metadata.plan': { $in: ['pro', 'enterprise'] } }, true],
  ['$in false', { 'metadata.plan': { $in: ['free'] } }, false],
  ['$nin', { 'metadata.plan': { $nin: ['free'] } }, true],
  ['$nin false', { 'metadata.plan': { $nin: ['pro'] } }, false],
  ['$regex', { 'metadata.region': { $regex: '^eu-' } }, true],
  ['$regex on a non-string', { 'metadata.tier': { $regex: '3' } }, false],
  ['$exists true', { 'metadata.plan': { $exists: true } }, true],
  ['$exists false', { 'metadata.nope': { $exists: false } }, true],
  ['$and', { $and: [{ 'metadata.plan': 'pro' }, { 'metadata.tier': { $gte: 3 } }] }, true],
  ['$and false', { $and: [{ 'metadata.plan': 'pro' }, { 'metadata.tier': { $gt: 3 } }] }, false],
  ['$or', { $or: [{ 'metadata.plan': 'free' }, { 'params.stream': true }] }, true],
  ['$or false', { $or: [{ 'metadata.plan': 'free' }, { 'params.stream': false }] }, false],
  ['several keys mean AND', { 'metadata.plan': 'pro', 'params.model': 'gpt-4o' }, true],
  ['several keys, one false', { 'metadata.plan': 'pro', 'params.model': 'other' }, false],
  ['several operators on one key', { 'metadata.tier': { $gt: 1, $lt: 5 } }, true],
  ['full dotted paths with indices', { 'params.messages.0.role': 'system' }, true],
  ['array values match any item', { 'metadata.tags': 'b' }, true],
  ['url.pathname', { 'url.pathname': { $regex: 'chat' } }, true],
  ['missing metadata path', { 'metadata.deep.er': 'x' }, false],
];

describe('conditional query', () => {
  for (const [name, query, expected] of CASES) {
    test(name, () => assert.equal(compileQuery(query)(input), expected));
  }

  test('no metadata at all', () => {
    assert.equal(compileQuery({ 'metadata.plan': 'pro' })({ ...input, metadata: undefined }), false);
  });

  const INVALID: ReadonlyArray<readonly [unknown, RegExp]> = [
    [{ $nor: [] }, /\$nor: unknown operator/],
    [{ 'metadata.x': { $foo: 1 } }, /\$foo: unknown operator/],
    [{ 'headers.x': 1 }, /paths start with/],
    [{ 'url.host': 1 }, /only url\.pathname/],
    [{ 'metadata.': 1 }, /incomplete path/],
    [{ 'metadata.x': { $in: 'a' } }, /must be an array/],
    [{ 'metadata.x': { $regex: '(' } }, /invalid regular expression/],
    [{ 'metadata.x': { $exists: 'yes' } }, /true or false/],
    [{ 'metadata.x': { $gt: {} } }, /number or a string/],
    [{ $and: [] }, /non-empty array/],
    ['text', /must be an object/],
  ];
  for (const [query, message] of INVALID) {
    test(`invalid: ${JSON.stringify(query)}`, () => {
      assert.throws(() => compileQuery(query), (error: unknown) => error instanceof QueryCompileError && message.test(error.message));
    });
  }
});
