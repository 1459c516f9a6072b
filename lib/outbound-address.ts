import dns, { type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import os from 'node:os'

/**
 * The rule for addresses the service sends to on a user's behalf (ntfy
 * topics, webhooks): loopback, link-local, unspecified and the service's own
 * addresses are refused unless WEBHOOK_ALLOW_PRIVATE=true, so that a URL
 * cannot make the service call itself or a neighbour on its own host.
 */
const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')
const LINK_LOCAL = new BlockList()
LINK_LOCAL.addSubnet('169.254.0.0', 16, 'ipv4')
LINK_LOCAL.addSubnet('fe80::', 10, 'ipv6')
const UNSPECIFIED = new BlockList()
UNSPECIFIED.addSubnet('0.0.0.0', 8, 'ipv4')
UNSPECIFIED.addAddress('::', 'ipv6')

/** An IPv4 address written as IPv6 (::ffff:127.0.0.1) is judged as the IPv4 address it is. */
function plain (address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  return mapped === null ? address : mapped[1]
}

/** The addresses of this machine's interfaces, and the one the service listens on. */
export function ownAddresses (host: string): Set<string> {
  const own = new Set<string>()
  for (const list of Object.values(os.networkInterfaces())) {
    for (const item of list ?? []) own.add(plain(item.address.split('%')[0]).toLowerCase())
  }
  if (isIP(host) !== 0) own.add(plain(host).toLowerCase())
  return own
}

/** Why an address may not be sent to, or null when it may. */
export function refusedAddress (address: string, own: Set<string>): string | null {
  const ip = plain(address.replace(/^\[|\]$/g, ''))
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4'
  if (LOOPBACK.check(ip, family)) return `${ip} is a loopback address`
  if (LINK_LOCAL.check(ip, family)) return `${ip} is a link-local address`
  if (UNSPECIFIED.check(ip, family)) return `${ip} is an unspecified address`
  if (own.has(ip.toLowerCase())) return `${ip} is the service's own address`
  return null
}

export const PRIVATE_HINT = 'refused unless WEBHOOK_ALLOW_PRIVATE=true'

/** Why a URL's host, when it is an IP address or localhost, may not be sent to; null otherwise (names are checked once resolved). */
export function refusedHost (url: URL, own: Set<string>): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (host.toLowerCase() === 'localhost' || host.toLowerCase().endsWith('.localhost')) return `${host} is a loopback address`
  return isIP(host) === 0 ? null : refusedAddress(host, own)
}

/** The longest a check waits for a name to resolve, in milliseconds. */
const LOOKUP_TIMEOUT_MS = 5000

/**
 * Why a URL may not be sent to, its name resolved: null when it may, or when
 * the name does not resolve now, within LOOKUP_TIMEOUT_MS (it is checked
 * again when sent to).
 */
export async function refusedDestination (url: URL, own: Set<string>): Promise<string | null> {
  const refused = refusedHost(url, own)
  if (refused !== null) return refused
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host) !== 0) return null
  let found: LookupAddress[]
  let timer: NodeJS.Timeout | undefined
  try {
    found = await Promise.race([
      dns.promises.lookup(host, { all: true }),
      new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error('timeout')), LOOKUP_TIMEOUT_MS) })
    ])
  } catch {
    return null
  } finally {
    clearTimeout(timer)
  }
  for (const { address } of found) {
    const reason = refusedAddress(address, own)
    if (reason !== null) return `${host} resolves to ${reason}`
  }
  return null
}

/**
 * A `lookup` for node:http that resolves a name as usual and refuses it when
 * any of its addresses is refused, so that a name cannot point elsewhere
 * between the check and the connection.
 */
export function guardedLookup (own: Set<string>): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, found: LookupAddress[]) => {
      if (error !== null) return callback(error, '', 4)
      for (const { address } of found) {
        const reason = refusedAddress(address, own)
        if (reason !== null) return callback(new Error(`${hostname} resolves to ${reason}, ${PRIVATE_HINT}`), '', 4)
      }
      if ((options as { all?: boolean }).all === true) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, found)
      callback(null, found[0].address, found[0].family)
    })
  }
}
