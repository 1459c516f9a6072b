import { spawn } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chromium } from 'playwright-core'
import { freePort } from '../db/embedded'
import { waitForHealth } from '../test/processes'

/**
 * Opens the docs page in headless Chromium against a real server on an
 * embedded database, and checks that it shows the operations without
 * fetching anything from another host.
 */
const ROOT = path.join(__dirname, '..')
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

async function main (): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'child-health-browser-'))
  chmodSync(dataDir, 0o755)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const server = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'server.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', GROWTH_DATA_DIR: path.join(ROOT, '..', 'shared', 'growth') },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  try {
    await waitForHealth(base, 60000)
    const page = await browser.newPage()
    const elsewhere: string[] = []
    const failed: string[] = []
    page.on('request', request => {
      const url = new URL(request.url())
      if (url.protocol.startsWith('http') && url.host !== `127.0.0.1:${port}`) elsewhere.push(request.url())
    })
    page.on('requestfailed', request => failed.push(request.url()))
    await page.goto(`${base}/api/docs`, { waitUntil: 'networkidle' })
    await page.waitForSelector('.opblock', { timeout: 30000 })
    const operations = await page.locator('.opblock').count()
    const title = await page.locator('.info .title').first().innerText()
    const problems = [
      ...(operations < 60 ? [`only ${operations} operations shown`] : []),
      ...(title.includes('Child health records API') ? [] : [`unexpected title: ${title}`]),
      ...elsewhere.map(url => `fetched from another host: ${url}`),
      ...failed.map(url => `failed to load: ${url}`)
    ]
    if (problems.length > 0) throw new Error(problems.join('\n'))
    console.log(`the docs page shows ${operations} operations of "${title.split('\n')[0]}", all loaded from the service`)
  } finally {
    await browser.close()
    server.kill('SIGTERM')
    await new Promise(resolve => server.once('exit', resolve))
    rmSync(dataDir, { recursive: true, force: true })
  }
}

main().catch(error => {
  console.error(error instanceof Error ? error.message : error)
  process.exit(1)
})
