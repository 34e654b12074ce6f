/**
 * The per-address throttle of the tracking routes (issue 26): at most `perSecond` recorded hits from one remote
 * address in one second (a fixed one-second window, in memory, per API process). Over it a hit is still answered —
 * the pixel, the redirect: a recipient never sees an error — but records nothing. The map holds the current second's
 * addresses only, so it stays as small as one second's traffic. `perSecond` 0: no throttle.
 */
export function addressThrottle(perSecond: number, now: () => number = Date.now): (address: string) => boolean {
  let second = -1;
  let counts = new Map<string, number>();
  return (address) => {
    if (perSecond <= 0) return true;
    const s = Math.floor(now() / 1000);
    if (s !== second) {
      second = s;
      counts = new Map();
    }
    const n = (counts.get(address) ?? 0) + 1;
    counts.set(address, n);
    return n <= perSecond;
  };
}
