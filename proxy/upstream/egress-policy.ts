import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { EgressDeniedError } from '../errors.ts';

// Where upstream connections may go (the SSRF guard). Public addresses are allowed;
// loopback, private, link-local, carrier-grade NAT, unspecified, multicast and
// cloud-metadata destinations are denied unless `egress.allow` lists them (a CIDR, an
// address, a host name, or a `*.suffix` pattern). The check runs on the address actually
// connected to — after DNS resolution, at connect time — so a name that resolves to
// 169.254.169.254 (or re-resolves there later) is caught. Two policies are compiled from
// the state: `egress.allow` for hosts the operator configured, `egress.clientAllow` for
// hosts a request chose (a client never inherits what the operator opened for its models).

export interface EgressPolicy {
  /** Undefined when the destination is allowed; else the reason, naming the rule. */
  check(hostname: string, address: string): string | undefined;
  /** Refusals decided by the name alone (cloud metadata hosts), before any DNS lookup. */
  checkName(hostname: string): string | undefined;
}

const RESTRICTED: ReadonlyArray<readonly [string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local / cloud metadata'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['fc00::', 7, 'ipv6', 'private (unique local)'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata', 'instance-data', 'instance-data.ec2.internal']);

/** Compiles an allow list once per state snapshot; `listName` is named in refusals. */
export function compileEgressPolicy(allow: readonly string[], listName = 'egress.allow'): EgressPolicy {
  const allowed = new BlockList();
  const names: string[] = [];
  const suffixes: string[] = [];
  for (const entry of allow) {
    const rule = entry.trim().toLowerCase();
    const [address, prefix] = rule.split('/');
    const family = address === undefined ? 0 : isIP(address);
    if (family !== 0 && address !== undefined) {
      const type = family === 4 ? 'ipv4' : 'ipv6';
      allowed.addSubnet(address, prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix), type);
    } else if (rule.startsWith('*.')) {
      suffixes.push(rule.slice(1));
    } else {
      names.push(rule);
    }
  }
  const restricted = RESTRICTED.map(([address, prefix, type, label]) => {
    const list = new BlockList();
    list.addSubnet(address, prefix, type);
    return { list, label, cidr: `${address}/${prefix}` };
  });

  const normalise = (hostname: string): string => hostname.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  const listed = (host: string): boolean => names.includes(host) || suffixes.some((suffix) => host.endsWith(suffix));
  return {
    checkName(hostname) {
      const host = normalise(hostname);
      if (listed(host) || !METADATA_HOSTS.has(host)) return undefined;
      return `egress to ${hostname} is denied: cloud metadata host (not in ${listName})`;
    },
    check(hostname, address) {
      const host = normalise(hostname);
      if (listed(host)) return undefined;
      const family = isIP(address);
      if (family === 0) return `egress to ${hostname}: "${address}" is not an IP address`;
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (allowed.check(address, type)) return undefined;
      if (METADATA_HOSTS.has(host)) return `egress to ${hostname} is denied: cloud metadata host (not in ${listName})`;
      const hit = restricted.find((range) => range.list.check(address, type));
      if (hit === undefined) return undefined;
      return `egress to ${hostname} (${address}) is denied: ${hit.label} address ${hit.cidr} is not in ${listName}`;
    },
  };
}


type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls.connect that resolves, then refuses addresses the policy denies.
 * Handles both the single-address and the `all: true` forms Node uses.
 */
export function guardedLookup(policy: () => EgressPolicy) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    const byName = policy().checkName(hostname);
    if (byName !== undefined) {
      callback(new EgressDeniedError(byName), options.all === true ? [] : '', undefined);
      return;
    }
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) {
        callback(error, options.all === true ? [] : '', undefined);
        return;
      }
      const current = policy();
      const permitted: LookupAddress[] = [];
      let reason: string | undefined;
      for (const entry of addresses) {
        const denied = current.check(hostname, entry.address);
        if (denied === undefined) permitted.push(entry);
        else reason ??= denied;
      }
      const first = permitted[0];
      if (first === undefined) {
        callback(new EgressDeniedError(reason ?? `egress to ${hostname} is denied`), options.all === true ? [] : '', undefined);
        return;
      }
      if (options.all === true) callback(null, permitted);
      else callback(null, first.address, first.family);
    });
  };
}
