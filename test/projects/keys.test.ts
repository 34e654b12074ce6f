import { generateKey, hashKey, keyMatches, mayUseFrom, parseKey } from '../../projects/keys';

test('secret and public keys have their prefix and 40 base62 characters', () => {
  const s = generateKey('secret');
  const p = generateKey('public');
  expect(s.key).toMatch(/^sk_[A-Za-z0-9]{40}$/);
  expect(p.key).toMatch(/^pk_[A-Za-z0-9]{40}$/);
  expect(s.lookup).toBe(s.key.slice(3, 19));
  expect(s.hint).toBe(s.key.slice(-4));
  expect(s.hash.equals(hashKey(s.key))).toBe(true);
  expect(s.hash.toString('utf8')).not.toContain(s.key.slice(3));
});

test('keys are unique', () => {
  const keys = new Set(Array.from({ length: 1000 }, () => generateKey('secret').key));
  expect(keys.size).toBe(1000);
});

test('parseKey accepts only well-formed keys', () => {
  const { key, lookup } = generateKey('public');
  expect(parseKey(key)).toEqual({ type: 'public', lookup });
  for (const bad of ['', 'sk_', `sk_${'a'.repeat(39)}`, `sk_${'a'.repeat(41)}`, `xk_${'a'.repeat(40)}`, `sk_${'a'.repeat(39)}!`, ` sk_${'a'.repeat(40)}`]) {
    expect(parseKey(bad)).toBeNull();
  }
});

test('keyMatches compares hashes, rejecting any other key', () => {
  const a = generateKey('secret');
  const b = generateKey('secret');
  expect(keyMatches(a.key, a.hash)).toBe(true);
  expect(keyMatches(b.key, a.hash)).toBe(false);
  expect(keyMatches(a.key, Buffer.alloc(3))).toBe(false);
});

test('mayUseFrom: a listed domain and its subdomains, nothing that merely ends like it; no list allows any', () => {
  expect(mayUseFrom(null, 'a@anything.test')).toBe(true);
  expect(mayUseFrom([], 'a@anything.test')).toBe(true);
  expect(mayUseFrom(['example.com'], 'a@example.com')).toBe(true);
  expect(mayUseFrom(['example.com'], 'a@mail.example.com')).toBe(true);
  expect(mayUseFrom(['example.com'], 'a@Mail.Example.COM')).toBe(true);
  expect(mayUseFrom(['example.com'], 'a@notexample.com')).toBe(false);
  expect(mayUseFrom(['example.com'], 'a@example.com.evil.test')).toBe(false);
  expect(mayUseFrom(['mail.example.com'], 'a@example.com')).toBe(false);
  expect(mayUseFrom(['a.test', 'b.test'], 'x@b.test')).toBe(true);
});
