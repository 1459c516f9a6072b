/**
 * Addresses as a URL's host writes them, by what the outbound rule makes of
 * them: the unit tests judge each, the routes' tests send them through the
 * WHATWG URL parser and the rule at saving.
 */

/** Refused unless WEBHOOK_ALLOW_PRIVATE=true: [host, what the reason names]. */
export const PRIVATE_HOSTS: Array<[string, RegExp]> = [
  ['127.0.0.1', /loopback/],
  ['127.1.2.3', /loopback/],
  ['[::1]', /loopback/],
  ['[0:0:0:0:0:0:0:1]', /loopback/],
  ['[::ffff:127.0.0.1]', /carries 127\.0\.0\.1, a loopback/],
  ['[::ffff:7f00:1]', /carries 127\.0\.0\.1, a loopback/],
  ['[0:0:0:0:0:FFFF:7F00:0001]', /carries 127\.0\.0\.1, a loopback/],
  ['[64:ff9b::7f00:1]', /carries 127\.0\.0\.1, a loopback/],
  ['[64:ff9b::127.0.0.1]', /carries 127\.0\.0\.1, a loopback/],
  ['[::127.0.0.1]', /carries 127\.0\.0\.1, a loopback/],
  ['[::7f00:1]', /carries 127\.0\.0\.1, a loopback/],
  ['[2002:7f00:1::1]', /carries 127\.0\.0\.1, a loopback/],
  ['2130706433', /127\.0\.0\.1 is a loopback/],
  ['0x7f.1', /127\.0\.0\.1 is a loopback/],
  ['0177.0.0.1', /127\.0\.0\.1 is a loopback/],
  ['127.1', /127\.0\.0\.1 is a loopback/],
  ['%31%32%37.0.0.1', /127\.0\.0\.1 is a loopback/],
  ['localhost', /loopback/],
  ['localhost.', /loopback/],
  ['LOCALHOST', /loopback/],
  ['app.localhost', /loopback/],
  ['169.254.169.254', /link-local/],
  ['[fe80::1]', /link-local/],
  ['[::ffff:a9fe:a9fe]', /carries 169\.254\.169\.254, a link-local/],
  ['0.0.0.0', /unspecified/],
  ['[::]', /unspecified/],
  ['10.0.0.5', /private network/],
  ['172.16.0.1', /private network/],
  ['172.31.255.254', /private network/],
  ['192.168.1.10', /private network/],
  ['[::ffff:c0a8:10a]', /carries 192\.168\.1\.10, a private network/],
  ['[64:ff9b::a00:5]', /carries 10\.0\.0\.5, a private network/],
  ['[fc00::1]', /private network/],
  ['[fd12:3456:789a::1]', /private network/],
  ['[64:ff9b:1::a00:5]', /private network/],
  ['100.64.0.1', /shared/],
  ['100.127.255.254', /shared/]
]

/** Never sent to, whatever WEBHOOK_ALLOW_PRIVATE says. */
export const NEVER_HOSTS: Array<[string, RegExp]> = [
  ['224.0.0.1', /multicast/],
  ['239.255.255.250', /multicast/],
  ['[ff02::1]', /multicast/],
  ['[::ffff:e000:1]', /carries 224\.0\.0\.1, a multicast/],
  ['[64:ff9b::e000:fb]', /carries 224\.0\.0\.251, a multicast/],
  ['240.0.0.1', /reserved/],
  ['255.255.255.255', /broadcast/],
  ['[::ffff:ffff:ffff]', /carries 255\.255\.255\.255, a reserved or broadcast/]
]

/** Sent to without WEBHOOK_ALLOW_PRIVATE. */
export const PUBLIC_HOSTS: string[] = [
  '93.184.216.34', '8.8.8.8', '172.32.0.1', '172.15.255.255', '100.128.0.1', '100.63.255.255', '11.0.0.1', '192.169.0.1',
  '[2606:4700:4700::1111]', '[::ffff:808:808]', '[64:ff9b::808:808]', '[2002:808:808::1]', '[fbff::1]', '[fe00::1]', '[64:ff9b:2::1]'
]

/** URLs the WHATWG URL parser cannot read, or that hold control characters: a 400 naming the field on every route that takes a URL. */
export const ODD_URLS: string[] = [
  'http://a%09b/',
  'http://127.0.0.1%09:38501/',
  'http://[::1',
  'http://a b/',
  'http://%00/',
  'http://a%2fb/',
  'http://[fe80::1%25eth0]/',
  'http://exa\tmple.org/',
  'http://example.org/\u0000',
  'http://1.2.3.4.5/',
  'http://256.0.0.1/',
  `http://${'a'.repeat(300)}/`,
  `http://${'abc.'.repeat(100)}org/`
]
