import { BlockList } from 'node:net'
import t from 'tap'
import { guardedLookup, outboundRule, refusedAddress, refusedDestination, refusedHost, type OutboundRule } from '../outbound/address'
import { httpUrlProblem } from '../lib/outbound-url'
import { loopbackName } from './outbound-helpers'
import { NEVER_HOSTS, ODD_URLS, PRIVATE_HOSTS, PUBLIC_HOSTS } from './outbound-forms'

// The outbound rule itself, form by form; the routes' tests send the same
// forms through the URL parser, the rule and the connection.

const STRICT: OutboundRule = { allowPrivate: false, own: new BlockList() }
const ALLOWING: OutboundRule = { allowPrivate: true, own: new BlockList() }

function hostOf (host: string): URL {
  return new URL(`http://${host}:8123/x`)
}

t.test('private addresses in every spelling are refused unless private addresses are allowed', async t => {
  for (const [host, what] of PRIVATE_HOSTS) {
    const refused = refusedHost(hostOf(host), STRICT)
    t.match(refused, what, host)
    t.match(refused, /refused unless WEBHOOK_ALLOW_PRIVATE=true$/, host)
    t.equal(refusedHost(hostOf(host), ALLOWING), null, `${host} allowed with WEBHOOK_ALLOW_PRIVATE=true`)
  }
})

t.test('multicast, broadcast and reserved addresses are never sent to', async t => {
  for (const [host, what] of NEVER_HOSTS) {
    for (const rule of [STRICT, ALLOWING]) {
      const refused = refusedHost(hostOf(host), rule)
      t.match(refused, what, host)
      t.match(refused, /never sent to$/, host)
    }
  }
})

t.test('public addresses, and IPv6 forms that carry one, are sent to', async t => {
  for (const host of PUBLIC_HOSTS) t.equal(refusedHost(hostOf(host), STRICT), null, host)
  t.equal(refusedHost(hostOf('hooks.example.org'), STRICT), null, 'a name is judged once resolved')
})

t.test('the service\'s own addresses, in any spelling, follow the private rule', async t => {
  const rule = outboundRule(false, '203.0.113.7')
  for (const address of ['203.0.113.7', '::ffff:203.0.113.7', '::ffff:cb00:7107', '64:ff9b::cb00:7107']) {
    t.match(refusedAddress(address, rule), /the service's own address, refused unless WEBHOOK_ALLOW_PRIVATE=true/, address)
  }
  t.equal(refusedAddress('203.0.113.8', rule), null, 'a neighbour on the internet is not')
  t.equal(refusedAddress('203.0.113.7', outboundRule(true, '203.0.113.7')), null, 'allowed with WEBHOOK_ALLOW_PRIVATE=true')
  t.match(refusedAddress('nonsense', rule), /not an IP address/)
})

t.test('a name is judged by what it resolves to, at saving and at the connection', async t => {
  const name = await loopbackName(t)
  t.equal(refusedHost(hostOf(name), STRICT), null, 'its written form says nothing')
  t.match(await refusedDestination(hostOf(name), STRICT), new RegExp(`^${name} resolves to 127\\.0\\.0\\.1, a loopback address, refused unless WEBHOOK_ALLOW_PRIVATE=true$`))
  t.equal(await refusedDestination(hostOf(name), ALLOWING), null)
  t.equal(await refusedDestination(hostOf('name.invalid'), STRICT), null, 'a name that does not resolve now is judged at the send')

  const lookup = (rule: OutboundRule, all: boolean) => new Promise<{ error: Error | null, found: unknown }>(resolve => {
    guardedLookup(rule)(name, { all }, (error: Error | null, found: unknown) => resolve({ error, found }))
  })
  const refused = await lookup(STRICT, false)
  t.match(refused.error, { code: 'EREFUSEDADDRESS', message: new RegExp(`^${name} resolves to 127\\.0\\.0\\.1, a loopback address`) })
  t.equal((await lookup(ALLOWING, false)).found, '127.0.0.1')
  t.same((await lookup(ALLOWING, true)).found, [{ address: '127.0.0.1', family: 4 }])
})

t.test('a URL the service sends to is one the WHATWG parser reads, without control characters', async t => {
  for (const url of ODD_URLS) t.type(httpUrlProblem(url), 'string', JSON.stringify(url))
  t.match(httpUrlProblem('http://a%09b/'), /must be a URL/)
  t.match(httpUrlProblem('http://exa\tmple.org/'), /control characters/, 'the parser would drop the tab: refused before')
  t.match(httpUrlProblem('ftp://example.org/'), /http or https/)
  t.match(httpUrlProblem(`http://${'abc.'.repeat(100)}org/`), /at most 253/)
  t.equal(httpUrlProblem('https://user:pw@ntfy.example.org/topic?x=1#y'), null)
  t.equal(httpUrlProblem('http://[::ffff:7f00:1]:8123/'), null, 'an address the rule refuses is still a URL')
})
