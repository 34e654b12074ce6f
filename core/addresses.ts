import ipaddr from 'ipaddr.js';

/**
 * The key a remote client is counted under, wherever Herald limits by address (SMTP connections and failed logins,
 * tracking hits): the IPv4 address itself (also when it arrives IPv4-mapped), or an IPv6 address's /64, which is what
 * one host is usually given — counting single IPv6 addresses would let a client rotate through its /64.
 */
export function addressKey(address: string): string {
  const plain = address.replace(/%.*$/, ''); // a zone index names the local interface, not the client
  if (!ipaddr.isValid(plain)) return plain;
  const ip = ipaddr.process(plain);
  if (ip.kind() === 'ipv4') return ip.toString();
  return `${(ip as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
}

/** Whether a remote address is this machine's own (127.0.0.0/8, ::1, or either IPv4-mapped). */
export function isLoopback(address: string): boolean {
  const plain = address.replace(/%.*$/, '');
  return ipaddr.isValid(plain) && ipaddr.process(plain).range() === 'loopback';
}
