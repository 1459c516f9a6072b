import dns, { type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import os from 'node:os'
import type { Issue } from '../lib/errors'
import { httpUrlProblem } from '../lib/outbound-url'

/**
 * The one rule for every address the service sends to on a user's behalf
 * (webhooks, ntfy topics, push endpoints), at saving and at each send:
 * multicast, broadcast and reserved addresses never; loopback, link-local,
 * unspecified, private networks (10/8, 172.16/12, 192.168/16, fc00::/7),
 * the shared address space (100.64/10) and the service's own addresses only
 * with WEBHOOK_ALLOW_PRIVATE=true. An IPv6 address that carries an IPv4
 * address (mapped, NAT64, IPv4-compatible, 6to4) is judged as that address.
 */
export interface OutboundRule {
  allowPrivate: boolean
  own: BlockList
}

export const PRIVATE_HINT = 'refused unless WEBHOOK_ALLOW_PRIVATE=true'

function blockList (...subnets: string[]): BlockList {
  const list = new BlockList()
  for (const subnet of subnets) {
    const [network, bits] = subnet.split('/')
    list.addSubnet(network, Number(bits), isIP(network) === 6 ? 'ipv6' : 'ipv4')
  }
  return list
}

interface Lists {
  never: Array<[BlockList, string]>
  private: Array<[BlockList, string]>
  /** IPv6 prefixes that carry an IPv4 address, with the 16-bit group where it begins. */
  carriers: Array<[BlockList, number]>
  loopbackOrUnspecified: BlockList
}

let made: Lists | undefined

/** The address lists, made at their first use: a start that sends nothing does not build them. */
function lists (): Lists {
  made ??= {
    never: [
      [blockList('224.0.0.0/4', 'ff00::/8'), 'a multicast address'],
      [blockList('240.0.0.0/4'), 'a reserved or broadcast address']
    ],
    private: [
      [blockList('127.0.0.0/8', '::1/128'), 'a loopback address'],
      [blockList('169.254.0.0/16', 'fe80::/10'), 'a link-local address'],
      [blockList('0.0.0.0/8', '::/128'), 'an unspecified address'],
      // 64:ff9b:1::/48 is NAT64 for local use, whose IPv4 part may sit anywhere: private as a whole.
      [blockList('10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', '64:ff9b:1::/48'), 'a private network address'],
      [blockList('100.64.0.0/10'), 'a shared (carrier-grade NAT) address']
    ],
    carriers: [
      [blockList('::ffff:0:0/96', '64:ff9b::/96', '::/96'), 6],
      [blockList('2002::/16'), 1]
    ],
    loopbackOrUnspecified: blockList('::/127')
  }
  return made
}

/** The eight 16-bit groups of an IPv6 address, a dotted IPv4 tail included. */
function groups (ip: string): number[] {
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip)
  const text = tail === null
    ? ip
    : `${ip.slice(0, tail.index)}${(Number(tail[1]) * 256 + Number(tail[2])).toString(16)}:${(Number(tail[3]) * 256 + Number(tail[4])).toString(16)}`
  const [head, rest] = text.split('::')
  const part = (words: string | undefined): number[] => words === undefined || words === '' ? [] : words.split(':').map(word => parseInt(word, 16))
  const left = part(head)
  const right = part(rest)
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right]
}

/** The IPv4 address an IPv6 address carries, or null. */
function carriedIPv4 (ip: string): string | null {
  if (isIP(ip) !== 6 || lists().loopbackOrUnspecified.check(ip, 'ipv6')) return null
  const carrier = lists().carriers.find(([list]) => list.check(ip, 'ipv6'))
  if (carrier === undefined) return null
  const words = groups(ip)
  const [high, low] = [words[carrier[1]], words[carrier[1] + 1]]
  return [high >> 8, high & 255, low >> 8, low & 255].join('.')
}

/** What an address is when it may not be sent to, with why; null when it may. */
function judge (ip: string, rule: OutboundRule): string | null {
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4'
  for (const [list, what] of lists().never) if (list.check(ip, family)) return `${what}, never sent to`
  if (rule.allowPrivate) return null
  for (const [list, what] of lists().private) if (list.check(ip, family)) return `${what}, ${PRIVATE_HINT}`
  if (rule.own.check(ip, family)) return `the service's own address, ${PRIVATE_HINT}`
  return null
}

/** Why an IP address (that `name` resolved to, if given) may not be sent to, or null when it may. */
export function refusedAddress (address: string, rule: OutboundRule, name?: string): string | null {
  const ip = address.replace(/^\[|\]$/g, '').split('%')[0]
  if (isIP(ip) === 0) return `${ip} is not an IP address`
  const carried = carriedIPv4(ip)
  const why = judge(carried ?? ip, rule)
  if (why === null) return null
  if (name === undefined) return carried === null ? `${ip} is ${why}` : `${ip} carries ${carried}, ${why}`
  return carried === null ? `${name} resolves to ${ip}, ${why}` : `${name} resolves to ${ip}, which carries ${carried}, ${why}`
}

/** The addresses of this machine's interfaces, and the one the service listens on. */
export function ownAddresses (host: string): BlockList {
  const own = new BlockList()
  const add = (address: string): void => { own.addAddress(address, isIP(address) === 6 ? 'ipv6' : 'ipv4') }
  for (const list of Object.values(os.networkInterfaces())) {
    for (const item of list ?? []) add(item.address.split('%')[0])
  }
  if (isIP(host) !== 0) add(host)
  return own
}

/** The rule as the configuration sets it: WEBHOOK_ALLOW_PRIVATE, and HOST among the service's own addresses. */
export function outboundRule (allowPrivate: boolean, host: string): OutboundRule {
  return { allowPrivate, own: ownAddresses(host) }
}

/** Why a URL's host, when it is an IP address or a localhost name, may not be sent to; null otherwise (names are judged once resolved). */
export function refusedHost (url: URL, rule: OutboundRule): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const name = host.toLowerCase().replace(/\.$/, '')
  if (name === 'localhost' || name.endsWith('.localhost')) return rule.allowPrivate ? null : `${host} is a loopback address, ${PRIVATE_HINT}`
  return isIP(host) === 0 ? null : refusedAddress(host, rule)
}

/** The longest a check waits for a name to resolve, in milliseconds. */
const LOOKUP_TIMEOUT_MS = 5000

async function resolved (host: string): Promise<LookupAddress[]> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      dns.promises.lookup(host, { all: true }),
      new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error('timeout')), LOOKUP_TIMEOUT_MS) })
    ])
  } catch {
    return []
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Why a URL may not be sent to, its name resolved: null when it may, or
 * when the name does not resolve now, within LOOKUP_TIMEOUT_MS (it is
 * judged again at each send).
 */
export async function refusedDestination (url: URL, rule: OutboundRule): Promise<string | null> {
  const refused = refusedHost(url, rule)
  if (refused !== null) return refused
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host) !== 0) return null
  for (const { address } of await resolved(host)) {
    const reason = refusedAddress(address, rule, host)
    if (reason !== null) return reason
  }
  return null
}

/** The issue of a request whose URL at `path` may not be sent to, or null: the check when a URL is saved. */
export async function destinationIssue (text: string, rule: OutboundRule, path: string): Promise<Issue | null> {
  const problem = httpUrlProblem(text)
  if (problem !== null) return { path, message: problem }
  const refused = await refusedDestination(new URL(text), rule)
  return refused === null ? null : { path, message: `must not be sent to: ${refused}` }
}

/** The error of a connection the rule refused: its message says why. */
export class RefusedAddressError extends Error {
  readonly code = 'EREFUSEDADDRESS'
}

/**
 * A `lookup` for node:http and node:https that resolves a name as usual and
 * refuses it when any of its addresses is refused, so that a name cannot
 * point elsewhere between the check and the connection.
 */
export function guardedLookup (rule: OutboundRule): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, found: LookupAddress[]) => {
      if (error !== null) return callback(error, '', 4)
      if (found.length === 0) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '', 4)
      for (const { address } of found) {
        const reason = refusedAddress(address, rule, hostname)
        if (reason !== null) return callback(new RefusedAddressError(reason), '', 4)
      }
      if ((options as { all?: boolean }).all === true) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, found)
      callback(null, found[0].address, found[0].family)
    })
  }
}
