import { newId } from '../../core/ids';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newId (core/ids.ts)', () => {
  it('makes UUIDv7 ids, unique and strictly increasing within the process, however fast they are asked for', () => {
    const ids = Array.from({ length: 100_000 }, () => newId());
    expect(ids.filter((id) => !V7.test(id))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    const outOfOrder = ids.findIndex((id, i) => i > 0 && id <= ids[i - 1]!);
    expect(outOfOrder).toBe(-1);
  });

  it('starts with the current millisecond', () => {
    const before = Date.now();
    const id = newId();
    const msecs = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    // A burst above may have run the counter a millisecond or so ahead of the clock (RFC 9562 method 1).
    expect(msecs).toBeGreaterThanOrEqual(before);
    expect(msecs).toBeLessThanOrEqual(Date.now() + 5);
  });
});
