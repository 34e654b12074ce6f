import type { AddressInfo } from 'node:net';
import dns2 from 'dns2';

const { Packet } = dns2;

/** What one name answers. A name that is not published at all answers NXDOMAIN; a published name without the asked type, NODATA. */
export interface Zone {
  A?: string[];
  AAAA?: string[];
  /** Exchange host names in preference order; '' is a null MX (RFC 7505). */
  MX?: string[];
  /** Each record's text; long ones are split into 255-octet strings as DNS requires. */
  TXT?: string[];
}

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for DNS_SERVERS. */
  address: string;
  /** Publishes (replaces) the records of a name. */
  set(name: string, zone: Zone): void;
  /** Adds records to what a name has. */
  add(name: string, zone: Zone): void;
  /** Unpublishes a name (NXDOMAIN). */
  remove(name: string): void;
  /** Never answers queries for this name (a timeout), until `remove` or `set`. */
  silence(name: string): void;
  /** Every query received, in order (over UDP or TCP). */
  queries: { name: string; type: string }[];
  /** How many queries asked about this name (any type). */
  count(name: string): number;
  close(): Promise<void>;
}

const TYPE_NAMES: Record<number, string> = { 1: 'A', 28: 'AAAA', 15: 'MX', 16: 'TXT' };

function chunks(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += 255) out.push(text.slice(i, i + 255));
  return out.length ? out : [''];
}

/**
 * A real DNS server (dns2) on a loopback port, UDP and TCP on the same port (TCP for answers too big for UDP, such
 * as a 2048-bit DKIM key). Authoritative for whatever the test publishes; every other name is NXDOMAIN.
 */
export async function startDnsServer(): Promise<TestDnsServer> {
  const zones = new Map<string, Zone>();
  const silent = new Set<string>();
  const queries: { name: string; type: string }[] = [];

  const handle: dns2.DnsHandler = (request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    if (!question) return;
    const name = question.name.toLowerCase().replace(/\.$/, '');
    queries.push({ name, type: TYPE_NAMES[question.type] ?? String(question.type) });
    if (silent.has(name)) return; // no answer: the client times out
    const zone = zones.get(name);
    if (!zone) {
      response.header.rcode = 3; // NXDOMAIN
      send(response);
      return;
    }
    const base = { name: question.name, class: Packet.CLASS.IN, ttl: 60 };
    if (question.type === Packet.TYPE.A) for (const address of zone.A ?? []) response.answers.push({ ...base, type: Packet.TYPE.A, address } as never);
    if (question.type === Packet.TYPE.AAAA) for (const address of zone.AAAA ?? []) response.answers.push({ ...base, type: Packet.TYPE.AAAA, address } as never);
    if (question.type === Packet.TYPE.MX) (zone.MX ?? []).forEach((exchange, i) => response.answers.push({ ...base, type: Packet.TYPE.MX, exchange, priority: exchange === '' ? 0 : 10 * (i + 1) } as never));
    if (question.type === Packet.TYPE.TXT) for (const text of zone.TXT ?? []) response.answers.push({ ...base, type: Packet.TYPE.TXT, data: chunks(text) } as never);
    send(response);
  };

  for (let attempt = 0; ; attempt++) {
    const udp = dns2.createUDPServer(handle);
    const udpPort = await new Promise<number>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(0, '127.0.0.1', () => resolve(udp.address().port));
    });
    const tcp = dns2.createTCPServer(handle);
    const ok = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false));
      tcp.listen(udpPort, '127.0.0.1', () => resolve(true));
    });
    if (!ok) {
      udp.close();
      if (attempt > 20) throw new Error('no loopback port free for UDP and TCP at once');
      continue;
    }
    const port = (tcp.address() as AddressInfo).port;
    return {
      address: `127.0.0.1:${port}`,
      set(name, zone) { zones.set(name.toLowerCase(), { ...zone }); silent.delete(name.toLowerCase()); },
      add(name, zone) {
        const cur = zones.get(name.toLowerCase()) ?? {};
        zones.set(name.toLowerCase(), {
          A: [...(cur.A ?? []), ...(zone.A ?? [])], AAAA: [...(cur.AAAA ?? []), ...(zone.AAAA ?? [])],
          MX: [...(cur.MX ?? []), ...(zone.MX ?? [])], TXT: [...(cur.TXT ?? []), ...(zone.TXT ?? [])],
        });
      },
      remove(name) { zones.delete(name.toLowerCase()); silent.delete(name.toLowerCase()); },
      silence(name) { silent.add(name.toLowerCase()); },
      queries,
      count: (name) => queries.filter((q) => q.name === name.toLowerCase()).length,
      async close() {
        await new Promise<void>((resolve) => udp.close(() => resolve()));
        await new Promise<void>((resolve) => { tcp.close(() => resolve()); });
      },
    };
  }
}
