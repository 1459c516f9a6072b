import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Test } from 'tap'

/** A temporary folder of the test's own, removed at teardown. */
export function tempDir (t: Test, prefix = 'child-health-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
