import { cachedLookup } from '../../inbound/auth';

/** The authenticator's DNS cache (inbound/auth.ts): mailauth asks the same records for every message of a sender. */

const failure = (code: string) => Object.assign(new Error(code), { code });

test('answers and definite failures are reused until their time is up; timeouts are asked again; the oldest names go first', async () => {
  let clock = 0;
  const asked: string[] = [];
  const answers: Record<string, () => Promise<string[][]>> = {
    'sender.example': async () => [['v=spf1 -all']],
    'missing.example': async () => { throw failure('ENOTFOUND'); },
    'slow.example': async () => { throw failure('ETIMEOUT'); },
  };
  const lookup = cachedLookup(async (name, rr) => {
    asked.push(`${rr} ${name}`);
    return answers[name.toLowerCase()]!();
  }, 1000, 3, () => clock);

  // Two at once share one query; the case of the name does not matter.
  const [a, b] = await Promise.all([lookup('sender.example', 'TXT'), lookup('SENDER.example', 'TXT')]);
  expect(a).toEqual([['v=spf1 -all']]);
  expect(b).toBe(a);
  await expect(lookup('missing.example', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  await expect(lookup('missing.example', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  await expect(lookup('slow.example', 'TXT')).rejects.toMatchObject({ code: 'ETIMEOUT' });
  await expect(lookup('slow.example', 'TXT')).rejects.toMatchObject({ code: 'ETIMEOUT' });
  expect(asked).toEqual(['TXT sender.example', 'TXT missing.example', 'TXT slow.example', 'TXT slow.example']);

  // Another record type is another question; past the time, asked again.
  await lookup('sender.example', 'MX');
  clock = 1000;
  await lookup('sender.example', 'TXT');
  expect(asked.slice(4)).toEqual(['MX sender.example', 'TXT sender.example']);

  // At most 2 names in this one: a third pushes the oldest out, within its time.
  const few: string[] = [];
  const small = cachedLookup(async (name) => { few.push(name); return [name]; }, 60_000, 2, () => clock);
  for (const name of ['x.example', 'y.example', 'z.example', 'z.example', 'x.example']) await small(name, 'TXT');
  expect(few).toEqual(['x.example', 'y.example', 'z.example', 'x.example']);
});
